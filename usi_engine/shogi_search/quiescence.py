"""Quiescence search: the leaf value of MCSS (seed 001 section 3, step 3) and its PV leaf.

Alpha-beta (fail-soft negamax) from the side to move over the static evaluation of usi_engine/shogi_eval:

- not in check: stand pat on the static value, then try captures (including capturing
  promotions); a non-promoting capture whose promotion is never worse (movegen `dominated`: pawn,
  bishop, rook, lance to the second rank) is left out, every other legal capture is searched.
  Non-capturing moves and drops are not.
- in check: every legal evasion (king moves, captures of the checker, interpositions including
  drops); no evasion = mated, value ``-MATE + ply`` (exactly -MATE at the node that is mated, so
  shorter mates score higher; MATE from usi_engine/search/values.py).
- ordering MVV-LVA: most valuable victim first, then least valuable attacker; evasions keep that
  order with non-captures last.
- optional SEE pruning (``see_prune``): not in check, a capture whose static exchange evaluation on its
  square is negative (`see`: both sides recapture with their least valuable attacker, x-rays included,
  each side may stop; values = what a capture swings in the weights' material terms) is not searched.
  Off = the exact captures-only quiescence value.
- optional recaptures only (``recap`` R > 0): from ply R on, not in check, only the captures on the
  square of the move that led to the node (the previous ply's move) are searched; `gen_recaptures`
  generates just those, from the square outwards.
- depth cap ``max_depth`` plies (default 8, the 芝浦将棋Softmax QSearch_depth): at the cap the static
  value is returned, even in check.

Every call is one node (``nodes[0]``, what the engine reports as nps). The principal variation is a
triangular table: after ``qsearch_root`` the moves ``pv[0, :counts[0, 2]]`` lead from the root to the
PV leaf, the position whose static value became the result (unless the result is a mate score),
so learning takes the gradient dValue/dw at that leaf (sign (-1)^len from the root's side);
pv_leaf_gradient does exactly that.

Static values are incremental (usi_engine/shogi_eval/incremental.py): ply p's evaluation state is row base + p of an
eval stack, recorded before each move and evaluated lazily, equal to ``evaluate`` up to float rounding.

No allocation inside the recursion: the caller passes ``QBuffers`` arrays sized for max_depth
(``qsearch``/``qsearch_root`` add a small eval stack per call; ``qsearch_inc`` takes the caller's).
"""

import numpy as np

from usi_engine.jit import bare_kernel, counted_kernel
from usi_engine.search.values import MATE, is_proven
from usi_engine.shogi.layout import (
    BOARD,
    DEMOTE,
    HIST,
    HIST_STRIDE,
    H_CHECK,
    KING,
    KING_SQ,
    KNIGHT,
    MAX_MOVES,
    MOVE_FROM_SHIFT,
    MOVE_PROMO_BIT,
    MOVE_TO_MASK,
    N_PIECES,
    PLY,
    PROMOTE,
    SIDE,
    WHITE_BIT,
)
from usi_engine.shogi.movegen import add_board_move, dominated, gen_legal
from usi_engine.shogi.position import attacks_along, do_move, first_piece, is_attacked, pin_direction, undo_move
from usi_engine.shogi.tables import KNIGHT_TARGETS, NEIGHBOUR, SLIDE, STEP
from usi_engine.shogi_eval.features import MAT_HAND, OFF_MATERIAL
from usi_engine.shogi_eval.incremental import eval_stack_for, inc_record, inc_value
from usi_engine.shogi_eval.linear import eval_features

from .mate import gives_check

DEFAULT_MAX_DEPTH = 8
INF = 1.0e9
# Capture rays per piece code, in gen_legal's order: d = one step along direction d, RAY_SLIDE + d = a
# slide along d, RAY_KNIGHT + k = knight jump k. Only the real lines of a piece are visited.
RAY_SLIDE, RAY_KNIGHT = 8, 16


def _capture_rays():
    rays = np.zeros((N_PIECES, 10), dtype=np.int64)
    count = np.zeros(N_PIECES, dtype=np.int64)
    for piece in range(N_PIECES):
        lines = [d if STEP[piece, d] else RAY_SLIDE + d for d in range(8) if STEP[piece, d] or SLIDE[piece, d]]
        if piece & 15 == KNIGHT:
            lines += [RAY_KNIGHT, RAY_KNIGHT + 1]
        rays[piece, : len(lines)] = lines
        count[piece] = len(lines)
    return rays, count


RAYS, RAY_COUNT = _capture_rays()
# Ordering value of a victim / attacker by ptype (MVV-LVA keys only, not the evaluation).
ORDER_VALUE = np.array([0, 1, 3, 4, 5, 8, 10, 6, 20, 7, 7, 7, 7, 11, 13], dtype=np.int64)


@counted_kernel
def qsearch_scratch(max_depth):
    """(moves, keys, pv, frames, counts, nodes, see_gains, see_removed): the quiescence scratch arrays for one
    search, one row per ply (the shapes QBuffers documents); nodes is the node counter, see_gains and
    see_removed the scratch of `see`."""
    rows = max_depth + 1
    return (
        np.zeros((rows, MAX_MOVES), dtype=np.int32),
        np.zeros((rows, MAX_MOVES), dtype=np.int64),
        np.zeros((rows, rows), dtype=np.int32),
        np.zeros((rows, 4), dtype=np.float64),
        np.zeros((rows, 3), dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.zeros(SEE_STACK, dtype=np.float64),
        np.zeros(SEE_STACK, dtype=np.int64),
    )


class QBuffers:
    """Preallocated per-thread scratch for qsearch (no allocation in the recursion).

    moves/keys: int32/int64 [max_depth + 1, MAX_MOVES]; pv: int32 [max_depth + 1, max_depth + 1];
    frames: float64 [max_depth + 1, 4]; counts: int64 [max_depth + 1, 3];
    nodes: int64 [1] (incremented, never reset by qsearch); see_gains, see_removed: float64 and int64
    [SEE_STACK], the scratch of `see`.
    """

    def __init__(self, max_depth=DEFAULT_MAX_DEPTH):
        self.max_depth = max_depth
        scratch = qsearch_scratch(max_depth)
        self.moves, self.keys, self.pv, self.frames, self.counts, self.nodes, self.see_gains, self.see_removed = scratch

    def args(self):
        return self.moves, self.keys, self.pv, self.frames, self.counts, self.nodes, self.see_gains, self.see_removed

    def pv_moves(self):
        """The PV of the last qsearch_root call, root to leaf, as a list of packed moves."""
        return [int(m) for m in self.pv[0, : self.counts[0, 2]]]


@bare_kernel
def side_in_check(pos):
    """In check, read from the history entry do_move/set-up wrote for the current position."""
    return pos[HIST + HIST_STRIDE * pos[PLY] + H_CHECK] != 0


@bare_kernel
def king_may_take(pos, ksq, t, us):
    """Whether our king on ksq may capture on t: t is not attacked once the king has left ksq."""
    king = pos[BOARD + ksq]
    pos[BOARD + ksq] = 0
    safe = not is_attacked(pos, t, 1 - us)
    pos[BOARD + ksq] = king
    return safe


@bare_kernel
def add_capture(sq, t, piece, us, pin, ksq, out, n):
    """Append the legal capture(s) on t by our non-king piece on sq (pin: its pin direction or -1): the
    promotion if it may promote, and the plain capture unless `dominated` by it."""
    end = add_board_move(sq, t, piece, us, pin, ksq, -1, out, n)
    if end - n == 2 and dominated(piece & 15, us, t):
        end -= 1  # keep only the promoting capture (never worse)
    return end


@bare_kernel
def piece_captures(pos, sq, piece, us, ksq, out, n):
    """Legal captures of our piece on sq (not in check): the first piece along each of its rays or
    steps when it is an enemy; a pinned piece keeps only its pin line (add_board_move), the king only
    safe squares; a piece whose plain capture is `dominated` by its promotion only promotes."""
    is_king = (piece & 15) == KING
    pin = -2  # computed once a capture is found
    for j in range(RAY_COUNT[piece]):
        r = RAYS[piece, j]
        if r < RAY_SLIDE:
            t = NEIGHBOUR[sq, r]
        elif r < RAY_KNIGHT:
            t = first_piece(pos, sq, r - RAY_SLIDE)
        else:
            t = KNIGHT_TARGETS[us, sq, r - RAY_KNIGHT]
        if t < 0:
            continue
        q = pos[BOARD + t]
        if q == 0 or (q >> 4) == us:
            continue
        if is_king:
            if king_may_take(pos, sq, t, us):
                out[n] = t | (sq << MOVE_FROM_SHIFT)
                n += 1
            continue
        if pin == -2:
            pin = pin_direction(pos, ksq, sq, us)
        n = add_capture(sq, t, piece, us, pin, ksq, out, n)
    return n


@bare_kernel
def gen_captures(pos, out):
    """Legal captures (with promotion choices) of the side to move, not in check; returns count.

    A non-promoting capture is dropped when its promotion dominates it (movegen `dominated`).
    Generated directly (only the first piece of each ray is looked at), by origin square.
    """
    us = pos[SIDE]
    ksq = pos[KING_SQ + us]
    n = 0
    for sq in range(81):
        p = pos[BOARD + sq]
        if p != 0 and (p >> 4) == us:
            n = piece_captures(pos, sq, p, us, ksq, out, n)
    return n


@bare_kernel
def recapture_from(pos, sq, target, us, ksq, out, n):
    """Append the legal capture(s) on target by our piece on sq, which attacks it (piece_captures' rules)."""
    piece = pos[BOARD + sq]
    if piece & 15 == KING:
        if king_may_take(pos, sq, target, us):
            out[n] = target | (sq << MOVE_FROM_SHIFT)
            n += 1
        return n
    return add_capture(sq, target, piece, us, pin_direction(pos, ksq, sq, us), ksq, out, n)


@bare_kernel
def generation_rank(m):
    """Position of a capture in gen_captures' order among captures on one square: by origin, promotion first."""
    return ((m >> MOVE_FROM_SHIFT) & 0x7F) * 2 + (0 if m & MOVE_PROMO_BIT else 1)


@bare_kernel
def gen_recaptures(pos, target, out):
    """The captures on `target` among gen_captures' (same legality and promotion rules, same order: by
    origin square, a promotion before its plain twin), found from the target outwards: the first piece along
    each of the eight lines and the two knight squares. Returns the count (0 unless target holds an enemy)."""
    us = pos[SIDE]
    q = pos[BOARD + target]
    if q == 0 or (q >> 4) == us:
        return 0
    ksq = pos[KING_SQ + us]
    n = 0
    for d in range(8):
        s = first_piece(pos, target, d)
        if s >= 0 and (pos[BOARD + s] >> 4) == us and attacks_along(pos[BOARD + s], s, target, d):
            n = recapture_from(pos, s, target, us, ksq, out, n)
    knight = KNIGHT + WHITE_BIT * us
    for j in range(2):
        s = KNIGHT_TARGETS[1 - us, target, j]
        if s >= 0 and pos[BOARD + s] == knight:
            n = recapture_from(pos, s, target, us, ksq, out, n)
    for i in range(1, n):  # insertion sort into gen_captures' order (at most a dozen moves)
        m = out[i]
        key = generation_rank(m)
        j = i - 1
        while j >= 0 and generation_rank(out[j]) > key:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = m
    return n


@bare_kernel
def order_key(pos, m):
    """MVV-LVA key: victim value * 32 - attacker value (non-captures and drops get <= 0)."""
    to = m & MOVE_TO_MASK
    frm = (m >> MOVE_FROM_SHIFT) & 0x7F
    victim = ORDER_VALUE[pos[BOARD + to] & 15]
    attacker = ORDER_VALUE[pos[BOARD + frm] & 15] if frm < 81 else 0
    promo = 2 if (m & MOVE_PROMO_BIT) != 0 else 0
    return victim * 32 - attacker + promo


@bare_kernel
def capture_swing(w, ptype):
    """What capturing a piece of `ptype` is worth to the capturer in the material terms of the weights: the
    piece leaves the board and its unpromoted type enters the capturer's hand."""
    return w[OFF_MATERIAL + ptype] + w[OFF_MATERIAL + MAT_HAND + DEMOTE[ptype]]


@bare_kernel
def capture_gain(pos, w, move):
    """What the capture `move` of the side to move wins at most in material: the victim's swing plus the
    capturing piece's promotion gain."""
    gain = capture_swing(w, pos[BOARD + (move & MOVE_TO_MASK)] & 15)
    if move & MOVE_PROMO_BIT:
        ptype = pos[BOARD + ((move >> MOVE_FROM_SHIFT) & 0x7F)] & 15
        gain += w[OFF_MATERIAL + ptype + PROMOTE] - w[OFF_MATERIAL + ptype]
    return gain


SEE_KING = 1.0e6  # a king "captured" in the exchange: larger than any material sum
SEE_STACK = 40  # captures one exchange can hold (at most 38 pieces can attack a square)


@bare_kernel
def least_attacker(pos, sq, by):
    """The square of the least valuable piece of colour `by` attacking sq on the current board (pieces
    removed from the board uncover the sliders behind them), or -1."""
    best = -1
    best_key = 1 << 30
    for d in range(8):
        s = first_piece(pos, sq, d)
        if s < 0:
            continue
        p = pos[BOARD + s]
        if (p >> 4) == by and attacks_along(p, s, sq, d) and ORDER_VALUE[p & 15] < best_key:
            best = s
            best_key = ORDER_VALUE[p & 15]
    knight = KNIGHT + WHITE_BIT * by
    for k in range(2):
        s = KNIGHT_TARGETS[1 - by, sq, k]
        if s >= 0 and pos[BOARD + s] == knight and ORDER_VALUE[KNIGHT] < best_key:
            best = s
            best_key = ORDER_VALUE[KNIGHT]
    return best


@bare_kernel
def see(pos, w, move, gains, removed):
    """Static exchange evaluation of the board capture `move` for the side to move: the material it wins
    when both sides keep recapturing on the square with their least valuable attacker and either may stop
    (the swap algorithm). Promotions on the way are ignored except the capturing move's own. pos is
    restored. gains (float64) and removed (int64) are the caller's scratch, SEE_STACK long each."""
    to = move & MOVE_TO_MASK
    frm = (move >> MOVE_FROM_SHIFT) & 0x7F
    us = pos[SIDE]
    mover = pos[BOARD + frm]
    gains[0] = capture_swing(w, pos[BOARD + to] & 15)
    ptype = mover & 15
    if move & MOVE_PROMO_BIT:
        gains[0] += w[OFF_MATERIAL + ptype + PROMOTE] - w[OFF_MATERIAL + ptype]
        ptype += PROMOTE
    on_square = SEE_KING if ptype == KING else capture_swing(w, ptype)
    pos[BOARD + frm] = 0
    n_removed = 0
    side = 1 - us
    d = 0
    while d < SEE_STACK - 1:
        s = least_attacker(pos, to, side)
        if s < 0:
            break
        d += 1
        gains[d] = on_square - gains[d - 1]
        p = pos[BOARD + s] & 15
        on_square = SEE_KING if p == KING else capture_swing(w, p)
        removed[n_removed] = s | (pos[BOARD + s] << 8)
        n_removed += 1
        pos[BOARD + s] = 0
        side = 1 - side
    for k in range(n_removed):
        pos[BOARD + (removed[k] & 0xFF)] = removed[k] >> 8
    pos[BOARD + frm] = mover
    while d > 0:
        gains[d - 1] = -max(-gains[d - 1], gains[d])
        d -= 1
    return gains[0]


@bare_kernel
def next_move(pos, mv, ks, i, n):
    """Selection-sort step: move the best-keyed of mv[i:n] to slot i and return it."""
    b = i
    for j in range(i + 1, n):
        if ks[j] > ks[b]:
            b = j
    m = mv[b]
    mv[b] = mv[i]
    mv[i] = m
    k = ks[b]
    ks[b] = ks[i]
    ks[i] = k
    return m


@bare_kernel
def qsearch_inc(
    pos,
    w,
    alpha,
    beta,
    max_depth,
    moves,
    keys,
    pv,
    frames,
    counts,
    nodes,
    see_gains,
    see_removed,
    eacc,
    eidx,
    base,
    see_prune,
    delta,
    recap,
    stand0=np.nan,
):
    """Fail-soft alpha-beta quiescence value of pos from the side to move (see module doc); see_prune: leave
    out captures with a negative `see` when not in check; delta: the delta-pruning margin (0 = off); recap:
    the ply from which only recaptures are searched (0 = never); stand0: pos's static value when the caller
    already has it (inc_value of row `base`, bit for bit), used as the root's stand pat instead of evaluating
    again (NaN = evaluate). The engine's callers pass it, NaN included: numba compiles an omitted argument as
    a specialization of its own, a second copy of this large kernel.

    Iterative (an explicit stack per ply) because a self-recursive cached numba function fails to
    link when another cached kernel calls it. Per ply: frames[ply] = (alpha, beta, best, stand pat),
    counts[ply] = (next move index, move count, PV end). pos is restored on return.
    Static values come from the incremental evaluation: row base + ply of (eacc, eidx) holds the
    state of the position at that ply; row base must be set up (inc_init or inc_record) by the caller.
    """
    ply = 0
    frames[0, 0] = alpha
    frames[0, 1] = beta
    entering = True
    value = 0.0
    while True:
        returning = False
        if entering:
            nodes[0] += 1
            counts[ply, 2] = ply
            if ply >= max_depth:
                value = inc_value(pos, w, eacc, eidx, base + ply)
                returning = True
            elif side_in_check(pos):
                n = gen_legal(pos, moves[ply])
                if n == 0:
                    value = -MATE + ply
                    returning = True
                frames[ply, 2] = -INF
            else:
                if ply == 0 and not np.isnan(stand0):
                    stand = stand0
                else:
                    stand = inc_value(pos, w, eacc, eidx, base + ply)
                frames[ply, 2] = stand
                frames[ply, 3] = stand
                if stand >= frames[ply, 1]:
                    value = stand
                    returning = True
                else:
                    if stand > frames[ply, 0]:
                        frames[ply, 0] = stand
                    if 0 < recap <= ply:  # only captures on the last move's square
                        n = gen_recaptures(pos, moves[ply - 1, counts[ply - 1, 0] - 1] & MOVE_TO_MASK, moves[ply])
                    else:
                        n = gen_captures(pos, moves[ply])
            if not returning:
                for i in range(n):
                    keys[ply, i] = order_key(pos, moves[ply, i])
                counts[ply, 0] = 0
                counts[ply, 1] = n
        else:  # back from the child at ply + 1 with its value
            undo_move(pos)
            v = -value
            if v > frames[ply, 2]:
                frames[ply, 2] = v
                pv[ply, ply] = moves[ply, counts[ply, 0] - 1]
                end = counts[ply + 1, 2]
                for t in range(ply + 1, end):
                    pv[ply, t] = pv[ply + 1, t]
                counts[ply, 2] = end
                if v > frames[ply, 0]:
                    frames[ply, 0] = v
                    if v >= frames[ply, 1]:
                        value = v
                        returning = True
        m = np.int32(-1)
        if not returning:
            quiet = not side_in_check(pos)
            prune = see_prune and quiet
            # delta pruning: a capture that does not check and cannot lift stand pat + its material gain +
            # delta above alpha is not searched (the opponent could stand pat after it)
            futile = delta > 0.0 and quiet
            while counts[ply, 0] < counts[ply, 1]:
                i = counts[ply, 0]
                candidate = next_move(pos, moves[ply], keys[ply], i, counts[ply, 1])
                counts[ply, 0] = i + 1
                if futile:
                    bound = frames[ply, 3] + capture_gain(pos, w, candidate) + delta
                    if bound <= frames[ply, 0] and not gives_check(pos, candidate):
                        if bound > frames[ply, 2]:
                            frames[ply, 2] = bound  # fail-soft: the pruned capture's optimistic value
                        continue
                if not prune or see(pos, w, candidate, see_gains, see_removed) >= 0.0:
                    m = candidate
                    break
            if m < 0:
                value = frames[ply, 2]
                returning = True
        if returning:
            if ply == 0:
                return value
            ply -= 1
            entering = False
            continue
        inc_record(pos, m, w, eacc, eidx, base + ply)
        do_move(pos, m)
        frames[ply + 1, 0] = -frames[ply, 1]
        frames[ply + 1, 1] = -frames[ply, 0]
        ply += 1
        entering = True


@counted_kernel
def qsearch(
    pos,
    w,
    alpha,
    beta,
    max_depth,
    moves,
    keys,
    pv,
    frames,
    counts,
    nodes,
    see_gains,
    see_removed,
    see_prune=False,
    delta=0.0,
    recap=0,
    pp_zero=False,
):
    """qsearch_inc from a fresh evaluation state of pos (a small allocation: max_depth + 1 rows); pp_zero as
    inc_init's."""
    eacc, eidx = eval_stack_for(pos, w, max_depth + 1, pp_zero)
    buffers = moves, keys, pv, frames, counts, nodes, see_gains, see_removed
    return qsearch_inc(pos, w, alpha, beta, max_depth, *buffers, eacc, eidx, 0, see_prune, delta, recap, np.nan)


@counted_kernel
def qsearch_root(pos, w, max_depth, moves, keys, pv, frames, counts, nodes, see_gains, see_removed):
    """Exact quiescence value of pos (full window); PV in pv[0, :counts[0, 2]]."""
    return qsearch(pos, w, -INF, INF, max_depth, moves, keys, pv, frames, counts, nodes, see_gains, see_removed)


@counted_kernel
def pv_leaf_gradient(pos, w, value, pv, counts, out_idx, out_coef):
    """Sparse gradient dvalue/dw of the quiescence value `value` of pos, taken at its PV leaf.

    Replays pv[0, :counts[0, 2]] (as left by the qsearch_root call that returned `value`), writes the
    leaf's active features with their sign flipped for an odd PV length (negamax), and restores pos.
    Returns the number of features; 0 for a mate score, which does not depend on w.
    """
    if is_proven(value):
        return 0
    length = counts[0, 2]
    for i in range(length):
        do_move(pos, pv[0, i])
    _, n = eval_features(pos, w, out_idx, out_coef)
    if length % 2 == 1:
        for i in range(n):
            out_coef[i] = -out_coef[i]
    for _ in range(length):
        undo_move(pos)
    return n


def quiesce(pos, w, buffers=None, max_depth=DEFAULT_MAX_DEPTH):
    """Python convenience: (value, PV moves root -> leaf) of the shogi position array pos."""
    if buffers is None or buffers.max_depth != max_depth:
        buffers = QBuffers(max_depth)
    value = qsearch_root(pos, w, max_depth, *buffers.args())
    return value, buffers.pv_moves()
