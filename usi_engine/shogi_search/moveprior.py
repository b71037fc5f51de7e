"""A learned move prior for shogi: the features of a move in its position and a softmax model over them (numba).

Model (Tsuruoka, Yokoyama & Chikayama 2002: the realization probabilities of move categories; here a log-linear
model over several categories at once, as Gikou's move probabilities are; docs/eval.md "The move prior"): every
search move m of the side to move (movegen.gen_search_moves: the legal moves less the dominated plain twins) takes
exactly one value v_g(m) in each feature group g below, its score is s(m) = sum_g w[OFFSETS[g] + v_g(m)], and the
probability that m is the move played is P(m) = exp(s(m)) / sum_j exp(s(j)) over the search moves. All-zero
weights give every move the same probability.

Everything is seen from the side to move (squares in its frame, sq' = sq for Black and 80 - sq for White, its own
and the enemy king), so a position and its colour-flipped mirror (board turned 180 degrees, colours and hands
swapped) give corresponding moves the same score. The mover code of a move: a board move of piece type pt
without promotion is pt (1..14), with promotion 14 + pt (15..20 for pawn..rook), a drop of pt is 20 + pt (21..27).

Feature groups (all but G_CAPTURE, G_CHECK, G_ESCAPE and the origin distances crossed with the mover code):
- G_SQUARE: mover code x destination square (its own frame).
- G_CAPTURE: the captured piece type (0 = none).
- G_SEE: mover code x the static exchange on the destination in classes SEE_BOUNDS x (capture, other board
  move, drop). A capture: quiescence's `see` with the default evaluation's material values (SEE_VALUES). Any
  other move: one exchange, minus the value of the moved piece when the enemy attacks its destination, plus the
  value of the enemy's least valuable attacker there when we can take back (never above 0).
- G_CHECK: 0 no check; a direct check: its mover code; 28 a discovered check only, 29 both.
- G_TO_OWN, G_TO_ENEMY: mover code x Chebyshev distance of the destination to the own / the enemy king (9: none).
- G_FROM_OWN, G_FROM_ENEMY: piece type x distance of the origin to each king (drops: 0).
- G_ESCAPE: the moved piece stands attacked on its origin: its type + 14 when it hangs there (undefended, or
  attacked by a cheaper piece); 0 otherwise and for drops.
- G_SUPPORT: mover code x the enemy's and the own pieces' attacks on the destination after the move (each
  capped at 2).
- G_LAST: mover code x the Chebyshev distance of the destination to the square of the opponent's last move
  (capped at 3) x capture, so 5 is a recapture; 0 without a last move.
- G_THREAT: mover code x the type of the most valuable enemy piece (not the king) the moved piece newly attacks
  from its destination while that piece is undefended (before the move) or worth more than the mover, + 15 when
  there are two or more.
- G_PHASE: mover code x the game's progress (phase_class: the pieces in both hands).

Attacks are the pieces' effects with pins ignored (kings included), counted once per call for the whole board
(`board_tables`: attack counts, least valuable attackers, the first piece along every line, the enemy pieces'
values); a destination's counts after the move add the slider behind the origin that the move uncovers. The
search's must-keep moves (`move_scores`' tactical flag): every check and every capture with SEE >= 0.

Labelled positions (the bench's fixture, teacher labels for fitting): lines `POSITION<TAB>MOVE`, parse_labelled.

A model is a float64 array of N_WEIGHTS weights; its file (usi_engine/weightfile.py's archive) holds it as the block
``w``.
"""

from pathlib import Path

import numpy as np
from numba import njit

from usi_engine.jit import bare_kernel, counted_kernel
from usi_engine.shogi.layout import (
    BOARD,
    DEMOTE,
    DROP_BASE,
    HAND,
    HIST,
    HIST_STRIDE,
    H_MOVE,
    KING,
    KING_SQ,
    KNIGHT,
    MOVE_FROM_SHIFT,
    MOVE_PROMO_BIT,
    MOVE_TO_MASK,
    PLY,
    PROMOTE,
    SIDE,
    WHITE_BIT,
)
from usi_engine.shogi.sfen import parse_position
from usi_engine.shogi.tables import (
    ADJACENT_ATTACK,
    DISTANCE,
    KNIGHT_TARGETS,
    LINE_DIR,
    NEIGHBOUR,
    OPPOSITE,
    SLIDE,
)
from usi_engine.weightfile import read_archive, write_archive

from .quiescence import ORDER_VALUE, RAYS, RAY_COUNT, RAY_KNIGHT, RAY_SLIDE, SEE_STACK, see

FEATURE_SET = "shogi-moves"
FEATURE_VERSION = 2  # 2: the mover code crossed with SEE, support, last move and threat; the phase group
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
SHIPPED_MODEL = WEIGHTS_DIR / "moves.npz"

(
    G_SQUARE,
    G_CAPTURE,
    G_SEE,
    G_CHECK,
    G_TO_OWN,
    G_TO_ENEMY,
    G_FROM_OWN,
    G_FROM_ENEMY,
    G_ESCAPE,
    G_SUPPORT,
    G_LAST,
    G_THREAT,
    G_PHASE,
) = range(13)
N_GROUPS = 13
GROUP_NAMES = ("square", "capture", "see", "check", "to_own", "to_enemy", "from_own", "from_enemy", "escape",
               "support", "last", "threat", "phase")  # fmt: skip

N_MOVER = 28  # mover codes 1..27 (0 unused)
NO_KING = 9  # the distance class of a missing king
N_DIST = 10
# upper bounds of the SEE classes in SEE_VALUES' units (taking a pawn swings about 205): class k holds
# SEE_BOUNDS[k - 1] < see <= SEE_BOUNDS[k]
SEE_BOUNDS = np.array([-1200.0, -600.0, -250.0, -1e-9, 1e-9, 250.0, 600.0, 1200.0], np.float64)
N_SEE = 9
# The material terms of usi_engine/shogi_eval/weights/handmade.npz (board piece types 0..15, hand types 16 + 1..7)
# that `see` values an exchange with: a fixed part of the features (the shipped models were fitted with them; a test
# pins the equality), not whatever evaluation the engine loads.
SEE_VALUES = np.array(
    [0.0, 97.44464111328125, 303.4607849121094, 341.0159606933594, 491.23870849609375, 790.39013671875,
     995.5712890625, 549.1486206054688, 0.0, 596.6441040039062, 582.64599609375, 573.4221801757812,
     566.7717895507812, 1043.089599609375, 1256.505859375, 0.0, 0.0, 108.24665832519531, 333.2252197265625,
     390.4040222167969, 552.7671508789062, 878.3340454101562, 1107.3126220703125, 612.3834838867188],
    np.float64,
)  # fmt: skip

GROUP_SIZES = np.array(
    [
        N_MOVER * 81,  # G_SQUARE
        15,  # G_CAPTURE
        N_MOVER * 3 * N_SEE,  # G_SEE
        30,  # G_CHECK
        N_MOVER * N_DIST,  # G_TO_OWN
        N_MOVER * N_DIST,  # G_TO_ENEMY
        15 * N_DIST,  # G_FROM_OWN
        15 * N_DIST,  # G_FROM_ENEMY
        29,  # G_ESCAPE
        N_MOVER * 9,  # G_SUPPORT
        N_MOVER * 9,  # G_LAST
        N_MOVER * 30,  # G_THREAT
        N_MOVER * 4,  # G_PHASE
    ],
    np.int64,
)
OFFSETS = np.concatenate([[0], np.cumsum(GROUP_SIZES)]).astype(np.int64)
N_WEIGHTS = int(OFFSETS[-1])
NO_ATTACKER = 16 * 99  # low[] of a square nobody attacks


def _lines() -> np.ndarray:
    """LINES[d]: the 81 squares as the lines along direction d one after another, each from its end towards d
    back to its start, packed as square | 128 for the end square of a line (first_table's walk)."""
    out = np.zeros((8, 81), np.int64)
    for d in range(8):
        k = 0
        for end in range(81):
            if NEIGHBOUR[end, d] >= 0:
                continue
            sq = end
            while sq >= 0:
                out[d, k] = sq | (128 if sq == end else 0)
                k += 1
                sq = NEIGHBOUR[sq, OPPOSITE[d]]
    return out


LINES = _lines()


@njit(cache=True, nogil=True, inline="always")
def swing(ptype):
    """What capturing a piece of `ptype` is worth in SEE_VALUES (quiescence.capture_swing's terms)."""
    return SEE_VALUES[ptype] + SEE_VALUES[16 + DEMOTE[ptype]]


@bare_kernel
def board_tables(pos, count, low, first, prey):
    """The per-call tables of pos: count[c, sq] = the pieces of colour c that attack sq (pins ignored, kings
    included); low[c, sq] = the least valuable of them as 16 * ORDER_VALUE + piece type (NO_ATTACKER when none);
    first[d, sq] = the first occupied square from sq (exclusive) along direction d, -1 when none; prey[sq] = the
    swing of the piece on sq when it is an enemy piece other than the king, else 0."""
    them = 1 - pos[SIDE]
    for d in range(8):
        last = -1
        for k in range(81):
            sq = LINES[d, k] & 127
            if LINES[d, k] & 128:
                last = -1
            first[d, sq] = last
            if pos[BOARD + sq] != 0:
                last = sq
    count[:, :] = 0
    low[:, :] = NO_ATTACKER
    prey[:] = 0.0
    for sq in range(81):
        p = pos[BOARD + sq]
        if p == 0:
            continue
        c = p >> 4
        v = 16 * ORDER_VALUE[p & 15] + (p & 15)
        prey[sq] = swing(p & 15) if c == them and p & 15 != KING else 0.0
        for j in range(RAY_COUNT[p]):
            r = RAYS[p, j]
            if r < RAY_SLIDE:
                t = NEIGHBOUR[sq, r]
                if t >= 0:
                    count[c, t] += 1
                    low[c, t] = min(low[c, t], v)
            elif r < RAY_KNIGHT:
                d = r - RAY_SLIDE
                end = first[d, sq]
                t = NEIGHBOUR[sq, d]
                while t >= 0:
                    count[c, t] += 1
                    low[c, t] = min(low[c, t], v)
                    if t == end:
                        break
                    t = NEIGHBOUR[t, d]
            else:
                t = KNIGHT_TARGETS[c, sq, r - RAY_KNIGHT]
                if t >= 0:
                    count[c, t] += 1
                    low[c, t] = min(low[c, t], v)


@njit(cache=True, nogil=True, inline="always")
def _next(first, d, sq, vacated):
    """The first occupied square from sq along d once the square `vacated` is empty (-1: nothing vacated)."""
    t = first[d, sq]
    if t == vacated and t >= 0:
        t = first[d, vacated]
    return t


@njit(cache=True, nogil=True, inline="always")
def _attacks(first, piece, vacated, to, target):
    """Whether `piece` standing on `to` attacks `target` once `vacated` is empty (-1: nothing vacated)."""
    if piece & 15 == KNIGHT:
        c = piece >> 4
        return KNIGHT_TARGETS[c, to, 0] == target or KNIGHT_TARGETS[c, to, 1] == target
    d = LINE_DIR[to, target]
    if d < 0:
        return False
    if NEIGHBOUR[to, d] == target:
        return ADJACENT_ATTACK[piece, d] == 1
    if SLIDE[piece, d] == 0:
        return False
    t = _next(first, d, to, vacated)
    return t < 0 or DISTANCE[to, t] >= DISTANCE[to, target]


@bare_kernel
def uncovered(pos, first, frm, to):
    """The piece (code) of the slider that attacks `to` through frm once the piece on frm has moved to `to`
    (frm and `to` on one line, the slider behind frm), or 0."""
    d = LINE_DIR[to, frm]
    if d < 0:
        return 0
    s = first[d, frm]
    if s < 0:
        return 0
    p = pos[BOARD + s]
    return p if SLIDE[p, OPPOSITE[d]] == 1 else 0


@bare_kernel
def check_kind(pos, first, piece, vacated, to, ek, us):
    """1 when `piece` (as it stands after the move) gives direct check from `to`, + 2 when the board move from
    `vacated` (-1: a drop) uncovers a slider of ours on the enemy king ek; 0 without a king."""
    if ek < 0:
        return 0
    kind = 1 if _attacks(first, piece, vacated, to, ek) else 0
    if vacated >= 0:
        d = LINE_DIR[ek, vacated]
        if d >= 0 and LINE_DIR[ek, to] != d and first[d, ek] == vacated:
            s = first[d, vacated]
            if s >= 0 and (pos[BOARD + s] >> 4) == us and SLIDE[pos[BOARD + s], OPPOSITE[d]] == 1:
                kind += 2
    return kind


@bare_kernel
def threat_class(pos, count, first, prey, piece, vacated, to, us):
    """The type of the most valuable enemy piece that `piece`, moved from `vacated` (-1: dropped), newly attacks
    from `to` while that piece is undefended or worth more than the mover (prey: board_tables'), + 15 when there
    are two or more; 0 when none."""
    them = 1 - us
    mover_swing = swing(piece & 15)
    best = 0.0
    best_type = 0
    found = 0
    for j in range(RAY_COUNT[piece]):
        r = RAYS[piece, j]
        if r < RAY_SLIDE:
            t = NEIGHBOUR[to, r]
        elif r < RAY_KNIGHT:
            t = _next(first, r - RAY_SLIDE, to, vacated)
        else:
            t = KNIGHT_TARGETS[us, to, r - RAY_KNIGHT]
        if t < 0:
            continue
        v = prey[t]
        if v == 0.0 or (count[them, t] > 0 and v <= mover_swing):
            continue
        if vacated >= 0 and _attacks(first, pos[BOARD + vacated], -1, vacated, t):
            continue  # attacked before the move
        found += 1
        if v > best:
            best, best_type = v, pos[BOARD + t] & 15
    return best_type + (15 if found >= 2 else 0)


@bare_kernel
def see_class(value):
    """The class 0..N_SEE-1 of an exchange value (SEE_BOUNDS)."""
    k = 0
    while k < SEE_BOUNDS.shape[0] and value > SEE_BOUNDS[k]:
        k += 1
    return k


@bare_kernel
def last_square(pos):
    """The destination of the opponent's last move, or -1 when the position has no history."""
    ply = pos[PLY]
    if ply == 0:
        return -1
    return pos[HIST + HIST_STRIDE * (ply - 1) + H_MOVE] & MOVE_TO_MASK


@bare_kernel
def phase_class(pos):
    """The game's progress by the pieces in both hands: 0 none, 1 one to three, 2 four to seven, 3 more."""
    held = 0
    for pt in range(1, 8):
        held += pos[HAND + pt] + pos[HAND + 8 + pt]
    return 0 if held == 0 else (1 if held <= 3 else (2 if held <= 7 else 3))


@bare_kernel
def move_features(pos, move, count, low, first, prey, last, phase, f, gains, removed):
    """f[g] = the weight index (OFFSETS[g] + value) of group g for the search move `move` of pos's side to move;
    count, low, first, prey: board_tables of pos; last: last_square(pos); phase: phase_class(pos); gains and
    removed: `see` scratch (SEE_STACK each). Returns the tactical flag: 1 for a check or a capture with SEE >= 0,
    else 0. pos is restored."""
    us = pos[SIDE]
    them = 1 - us
    own, ek = pos[KING_SQ + us], pos[KING_SQ + them]
    to = move & MOVE_TO_MASK
    frm = (move >> MOVE_FROM_SHIFT) & 0x7F
    promo = move & MOVE_PROMO_BIT != 0
    drop = frm > DROP_BASE
    if drop:
        pt = frm - DROP_BASE
        mover = 20 + pt
        piece = pt + WHITE_BIT * us
        victim = 0
        vacated = -1
    else:
        piece = pos[BOARD + frm]
        pt = piece & 15
        mover = 14 + pt if promo else pt
        if promo:
            piece |= PROMOTE
        victim = pos[BOARD + to] & 15
        vacated = frm
    f[G_SQUARE] = OFFSETS[G_SQUARE] + mover * 81 + (to if us == 0 else 80 - to)
    f[G_CAPTURE] = OFFSETS[G_CAPTURE] + victim

    # attacks on the destination after the move: the mover no longer counts for us, a slider it uncovers does
    enemy = count[them, to]
    friends = count[us, to]
    least = low[them, to]
    if not drop:
        friends -= 1
        p = uncovered(pos, first, frm, to)
        if p != 0 and p >> 4 == them:
            enemy += 1
            least = min(least, 16 * ORDER_VALUE[p & 15] + (p & 15))
        elif p != 0:
            friends += 1
    value = 0.0
    if victim != 0:
        kind = 0
        if enemy > 0:
            value = see(pos, SEE_VALUES, move, gains, removed)
        else:  # nothing can take back: what see would find at once
            value = swing(victim) + (SEE_VALUES[piece & 15] - SEE_VALUES[pt] if promo else 0.0)
    else:
        kind = 2 if drop else 1
        if enemy > 0:
            value = -swing(piece & 15)
            if friends > 0:
                value = min(0.0, value + swing(least & 15))
    f[G_SEE] = OFFSETS[G_SEE] + 3 * N_SEE * mover + N_SEE * kind + see_class(value)
    f[G_SUPPORT] = OFFSETS[G_SUPPORT] + 9 * mover + 3 * min(enemy, 2) + min(friends, 2)

    checks = check_kind(pos, first, piece, vacated, to, ek, us)
    f[G_CHECK] = OFFSETS[G_CHECK] + (0 if checks == 0 else (mover if checks == 1 else 26 + checks))

    f[G_TO_OWN] = OFFSETS[G_TO_OWN] + mover * N_DIST + (DISTANCE[to, own] if own >= 0 else NO_KING)
    f[G_TO_ENEMY] = OFFSETS[G_TO_ENEMY] + mover * N_DIST + (DISTANCE[to, ek] if ek >= 0 else NO_KING)
    if drop:
        f[G_FROM_OWN] = OFFSETS[G_FROM_OWN]
        f[G_FROM_ENEMY] = OFFSETS[G_FROM_ENEMY]
        f[G_ESCAPE] = OFFSETS[G_ESCAPE]
    else:
        f[G_FROM_OWN] = OFFSETS[G_FROM_OWN] + pt * N_DIST + (DISTANCE[frm, own] if own >= 0 else NO_KING)
        f[G_FROM_ENEMY] = OFFSETS[G_FROM_ENEMY] + pt * N_DIST + (DISTANCE[frm, ek] if ek >= 0 else NO_KING)
        escape = 0
        if count[them, frm] > 0:
            hanging = count[us, frm] == 0 or low[them, frm] < 16 * ORDER_VALUE[pt]
            escape = pt + (14 if hanging else 0)
        f[G_ESCAPE] = OFFSETS[G_ESCAPE] + escape
    f[G_LAST] = (
        OFFSETS[G_LAST] + 9 * mover + (0 if last < 0 else 1 + min(DISTANCE[to, last], 3) + (4 if victim != 0 else 0))
    )
    f[G_THREAT] = OFFSETS[G_THREAT] + 30 * mover + threat_class(pos, count, first, prey, piece, vacated, to, us)
    f[G_PHASE] = OFFSETS[G_PHASE] + 4 * mover + phase
    return 1 if checks != 0 or (victim != 0 and value >= 0.0) else 0


@counted_kernel
def position_tables(pos):
    """What move_features reads of the position, computed once per position: (count, low, first, prey from
    board_tables, the SEE scratch gains and removed, the last move's square, the game-phase class)."""
    count = np.empty((2, 81), np.int64)
    low = np.empty((2, 81), np.int64)
    first = np.empty((8, 81), np.int64)
    prey = np.empty(81, np.float64)
    board_tables(pos, count, low, first, prey)
    gains = np.empty(SEE_STACK, np.float64)
    removed = np.empty(SEE_STACK, np.int64)
    return count, low, first, prey, gains, removed, last_square(pos), phase_class(pos)


@counted_kernel
def position_features(pos, moves, n, rows, tactical):
    """rows[i, :] = move_features of moves[i] (the weight indices of its groups) and tactical[i] its tactical
    flag, for i < n: the features of search moves of one position, the board tables computed once."""
    count, low, first, prey, gains, removed, last, phase = position_tables(pos)
    for i in range(n):
        tactical[i] = move_features(pos, moves[i], count, low, first, prey, last, phase, rows[i], gains, removed)


@counted_kernel
def move_scores(pos, model, moves, n, out_scores, out_tactical):
    """out_scores[i] = the logit s(moves[i]) under `model` (N_WEIGHTS weights) and out_tactical[i] = 1 for a check
    or a capture with SEE >= 0 (the moves a search must keep), else 0, for the search moves moves[0:n] of pos.
    Works in any position of a game (in check, a king missing); pos is restored."""
    count, low, first, prey, gains, removed, last, phase = position_tables(pos)
    f = np.empty(N_GROUPS, np.int64)
    for i in range(n):
        out_tactical[i] = move_features(pos, moves[i], count, low, first, prey, last, phase, f, gains, removed)
        s = 0.0
        for g in range(N_GROUPS):
            s += model[f[g]]
        out_scores[i] = s


@bare_kernel
def log_sum_exp(scores, n):
    """log sum_i exp(scores[i]) over scores[0:n] (shifted by the largest score): the softmax's log normaliser."""
    top = -np.inf
    for i in range(n):
        top = max(top, scores[i])
    total = 0.0
    for i in range(n):
        total += np.exp(scores[i] - top)
    return top + np.log(total)


@bare_kernel
def softmax(scores, n, out):
    """out[0:n] = exp(scores[i]) / sum_j exp(scores[j]) = exp(scores[i] - log_sum_exp)."""
    log_z = log_sum_exp(scores, n)
    for i in range(n):
        out[i] = np.exp(scores[i] - log_z)


@counted_kernel
def move_probabilities(pos, model, moves, n, out):
    """out[i] = P(moves[i]) under the model: the softmax of move_scores over the search moves moves[0:n] of pos."""
    scores = np.empty(n, np.float64)
    tactical = np.empty(n, np.int8)
    move_scores(pos, model, moves, n, scores, tactical)
    softmax(scores, n, out)


def parse_labelled(line: str) -> tuple[str | None, list[str], str]:
    """(start SFEN or None for the start position, the moves from it, the labelled move) of a labelled-position
    line `POSITION<TAB>MOVE`: POSITION `startpos|sfen SFEN|SFEN [moves ...]` (the moves before the position, for
    the last-move features), MOVE in USI; ValueError when malformed (the move is not checked here)."""
    parts = line.strip().split("\t")
    if len(parts) != 2 or not parts[1].strip():
        raise ValueError(f"expected POSITION<TAB>MOVE, got {line!r}")
    tokens = parts[0].split()
    if tokens and tokens[0] not in ("startpos", "sfen"):
        tokens = ["sfen"] + tokens
    start, moves = parse_position(tokens)
    return start, moves, parts[1].strip()


def uniform_model() -> np.ndarray:
    """The all-zero model: every search move equally likely."""
    return np.zeros(N_WEIGHTS, np.float64)


def save_model(path, model: np.ndarray, **meta) -> Path:
    """Write a model (N_WEIGHTS weights) as a checksummed weight archive; meta (JSON values) goes into its
    metadata."""
    model = np.asarray(model, np.float64)
    if model.shape != (N_WEIGHTS,):
        raise ValueError(f"model has shape {model.shape}, expected ({N_WEIGHTS},)")
    return write_archive(path, {"w": model}, FEATURE_SET, FEATURE_VERSION, 1.0, **meta)


def read_model(path=None) -> tuple[np.ndarray, dict]:
    """(model, metadata) of a move-prior file (None: the shipped one). Raises a ValueError (usi_engine.weightfile's
    WeightFileError) naming the file and its problem when it is missing, unreadable, truncated, of another
    feature set or version, of the wrong size, or fails its checksum."""
    path = SHIPPED_MODEL if path is None else path
    blocks, meta = read_archive(path, FEATURE_SET, {FEATURE_VERSION: {"w": (N_WEIGHTS,)}})
    return blocks["w"], meta


def option_model(value: str) -> np.ndarray | None:
    """The model the USI option MovePriorFile names: empty = the shipped file, `none` = no prior (None), else a
    path; ValueError (naming the file and its problem) or OSError for a bad file."""
    if value.lower() == "none":
        return None
    return load_model(value or None)


def load_model(path=None) -> np.ndarray:
    """The model array of a move-prior file (None: the shipped usi_engine/shogi_search/weights/moves.npz)."""
    return read_model(path)[0]
