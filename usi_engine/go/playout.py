"""Fast random Go playouts (seed 000 §3.5 default policy, Pachi/MoGo-style heuristics), numba.

A playout copies the board of a ``pos`` into a workspace with incremental block structures and plays
until two consecutive passes or a move cap, then scores the final board by Tromp-Taylor area.

Workspace (``new_workspace()``: int64 ``[WS_ROWS, BOARD_CAP]``, one per thread):
- blocks as circular linked lists (``next``) with a ``head`` per stone; per head the stone count
  and *pseudo-liberties*: the count, sum and sum of squares of liberty points, one entry per
  (stone, empty neighbour) adjacency. A block is in atari iff all its pseudo-liberties are the same
  point, i.e. ``count * sum_sq == sum**2`` (Cauchy-Schwarz equality), and that point is
  ``sum / count``: O(1) atari tests without liberty sets.
- the empty points in an array with its inverse index, for O(1) random sampling and removal.

Move choice for the side to move, after the opponent's last move L:
1. atari escape: an own block next to L is in atari -> capture an adjacent opponent block that is
   itself in atari, else extend at the block's liberty if that gives it >= 2 liberties;
2. capture: the block of L is in atari -> take it;
3. patterns (only with the ``patterns`` flag on; MoGo's rule, Gelly, Wang, Munos & Teytaud 2006): one
   of the empty 8 neighbours of L whose 3x3 neighbourhood matches a MoGo pattern for the side to move
   (usi_engine/go/patterns.py), uniformly at random among those the random rule below would accept;
4. otherwise a uniformly random empty point (scanning cyclically from a random start) that is
   legal (no suicide, simple ko), not an own single-point eye, and not a self-atari of a block of
   two or more stones (keeps sekis alive in playouts; single-stone throw-ins stay allowed).
No move ever fills an own eye: a point whose four neighbours are own stones or border and whose
diagonals hold at most one opponent stone (none on the edge). With no candidate left the side passes.
Playouts use simple ko only (positional superko is the tree's job: board.gen_moves checks it).

RNG: xorshift64* on ``rng[0]`` (uint64, must be non-zero; ``seed_rng`` makes one by splitmix64).
"""

import numpy as np
from numba import njit

from usi_engine.go.board import area_owner
from usi_engine.go.ladder import escape_is_laddered
from usi_engine.go.layout import (
    BLACK,
    BOARD,
    BOARD_CAP,
    BORDER,
    EMPTY,
    HIST,
    HIST_STRIDE,
    H_MOVE,
    KO,
    KOMI_MILLI,
    PASS,
    PASSES,
    PLY,
    SIDE,
    SIZE,
    STRIDE,
    WHITE,
)
from usi_engine.go.patterns import matches
from usi_engine.search.rng import splitmix64_outputs

DEFAULT_CAP_FACTOR = 3  # playout move cap = factor * N * N (the usual cut at ~3 N^2 moves)
R_BOARD, R_HEAD, R_NEXT, R_LIBS, R_LSUM, R_LSUM2, R_GSIZE, R_EMPTY, R_EIDX, R_STACK, R_OWNER = range(11)
R_META = 11  # [0] = number of empty points
WS_ROWS = 12


def new_workspace() -> np.ndarray:
    """Scratch space for one thread's playouts."""
    return np.zeros((WS_ROWS, BOARD_CAP), dtype=np.int64)


def seed_rng(seed: int) -> np.ndarray:
    """A one-word uint64 RNG state for the playout kernels, derived from `seed` by splitmix64."""
    z = int(splitmix64_outputs(seed, 1)[0])
    return np.array([z or 1], dtype=np.uint64)


@njit(cache=True, nogil=True)
def rand_below(rng, n):
    """Uniform integer in [0, n) from the xorshift64* state rng[0]."""
    x = rng[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    rng[0] = x
    return int((x * np.uint64(2685821657736338717)) >> np.uint64(33)) % n


@njit(cache=True, nogil=True)
def _pseudo_libs(board, w, s):
    """Count, sum and sum of squares of the empty neighbours of s (its pseudo-liberties)."""
    nl = 0
    sl = 0
    sl2 = 0
    for d in (1, -1, w, -w):
        q = s + d
        if board[q] == EMPTY:
            nl += 1
            sl += q
            sl2 += q * q
    return nl, sl, sl2


@njit(cache=True, nogil=True)
def _setup(pos, ws):
    """Copy pos's board into ws and build blocks, pseudo-liberties and the empty-point list."""
    size = pos[SIZE]
    w = pos[STRIDE]
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    libs, lsum, lsum2, gsize = ws[R_LIBS], ws[R_LSUM], ws[R_LSUM2], ws[R_GSIZE]
    empties, eidx, stack = ws[R_EMPTY], ws[R_EIDX], ws[R_STACK]
    board[:] = pos[BOARD : BOARD + BOARD_CAP]
    head[:] = 0
    n_empty = 0
    for y in range(size):
        for x in range(size):
            p = (y + 1) * w + x
            c = board[p]
            if c == EMPTY:
                empties[n_empty] = p
                eidx[p] = n_empty
                n_empty += 1
            elif head[p] == 0:
                head[p] = p
                stack[0] = p
                n = 1
                i = 0
                nl = 0
                sl = 0
                sl2 = 0
                prev = p
                while i < n:
                    s = stack[i]
                    i += 1
                    nxt[prev] = s
                    prev = s
                    a, b, b2 = _pseudo_libs(board, w, s)
                    nl += a
                    sl += b
                    sl2 += b2
                    for d in (1, -1, w, -w):
                        q = s + d
                        if board[q] == c and head[q] == 0:
                            head[q] = p
                            stack[n] = q
                            n += 1
                nxt[prev] = p
                libs[p], lsum[p], lsum2[p], gsize[p] = nl, sl, sl2, n
    ws[R_META, 0] = n_empty


@njit(cache=True, nogil=True)
def _in_atari(ws, g):
    n = ws[R_LIBS, g]
    s = ws[R_LSUM, g]
    return n > 0 and n * ws[R_LSUM2, g] == s * s


@njit(cache=True, nogil=True)
def _is_own_eye(board, w, p, c):
    """p is an eye-like point of colour c: own/border neighbours and at most one opponent diagonal
    (none on the edge)."""
    for d in (1, -1, w, -w):
        v = board[p + d]
        if v != c and v != BORDER:
            return False
    bad = 0
    edge = False
    o = 3 - c
    for d in (w + 1, w - 1, -w + 1, -w - 1):
        v = board[p + d]
        if v == o:
            bad += 1
        elif v == BORDER:
            edge = True
    return bad == 0 or (bad == 1 and not edge)


@njit(cache=True, nogil=True)
def _libs_after(ws, w, p, c):
    """Distinct liberties, capped at 2, of c's block after c plays the empty point p; 2 when the
    move captures. Walks the joined own blocks only when p itself has fewer than two liberties."""
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    o = 3 - c
    found = 0
    joins = False
    for d in (1, -1, w, -w):
        q = p + d
        v = board[q]
        if v == EMPTY:
            if found == 0:
                found = q
            elif q != found:
                return 2
        elif v == c:
            joins = True
        elif v == o and _in_atari(ws, head[q]):
            return 2
    if joins:
        for d in (1, -1, w, -w):
            q = p + d
            if board[q] == c:
                h = head[q]
                s = h
                while True:
                    for d2 in (1, -1, w, -w):
                        r = s + d2
                        if board[r] == EMPTY and r != p and r != found:
                            if found != 0:
                                return 2
                            found = r
                    s = nxt[s]
                    if s == h:
                        break
    return 1 if found != 0 else 0


@njit(cache=True, nogil=True)
def _random_ok(ws, w, p, c, ko):
    """Stone at empty point p is a move the random policy may play: legal under playout rules (no
    suicide, simple ko) and not a self-atari of a block of two or more stones. Single-stone
    self-ataris (throw-ins, nakade) stay allowed; seki liberties stay unfilled."""
    if p == ko:
        return False
    n = _libs_after(ws, w, p, c)
    if n != 1:
        return n == 2
    board = ws[R_BOARD]
    for d in (1, -1, w, -w):
        if board[p + d] == c:
            return False
    return True


@njit(cache=True, nogil=True)
def _remove_block(ws, w, g):
    """Capture block g: empty its stones and give their points back as liberties to neighbours."""
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    empties, eidx = ws[R_EMPTY], ws[R_EIDX]
    n_empty = ws[R_META, 0]
    s = g
    n = 0
    while True:
        board[s] = EMPTY
        empties[n_empty] = s
        eidx[s] = n_empty
        n_empty += 1
        n += 1
        s = nxt[s]
        if s == g:
            break
    ws[R_META, 0] = n_empty
    while True:
        for d in (1, -1, w, -w):
            q = s + d
            v = board[q]
            if v == BLACK or v == WHITE:
                h = head[q]
                ws[R_LIBS, h] += 1
                ws[R_LSUM, h] += s
                ws[R_LSUM2, h] += s * s
        s = nxt[s]
        if s == g:
            break
    return n


@njit(cache=True, nogil=True)
def _merge(ws, a, b):
    """Join blocks with heads a and b (the smaller one is relabelled); returns the new head."""
    head, nxt, gsize = ws[R_HEAD], ws[R_NEXT], ws[R_GSIZE]
    if gsize[a] < gsize[b]:
        a, b = b, a
    s = b
    while True:
        head[s] = a
        s = nxt[s]
        if s == b:
            break
    na = nxt[a]
    nxt[a] = nxt[b]
    nxt[b] = na
    gsize[a] += gsize[b]
    ws[R_LIBS, a] += ws[R_LIBS, b]
    ws[R_LSUM, a] += ws[R_LSUM, b]
    ws[R_LSUM2, a] += ws[R_LSUM2, b]
    return a


@njit(cache=True, nogil=True)
def _play(ws, w, p, c):
    """Place a legal stone of c at p, merge and capture; returns the new simple-ko point (0 none)."""
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    empties, eidx = ws[R_EMPTY], ws[R_EIDX]
    n_empty = ws[R_META, 0] - 1
    i = eidx[p]
    last = empties[n_empty]
    empties[i] = last
    eidx[last] = i
    ws[R_META, 0] = n_empty
    board[p] = c
    head[p] = p
    nxt[p] = p
    ws[R_GSIZE, p] = 1
    nl, sl, sl2 = _pseudo_libs(board, w, p)
    for d in (1, -1, w, -w):
        q = p + d
        v = board[q]
        if v == BLACK or v == WHITE:
            h = head[q]
            ws[R_LIBS, h] -= 1
            ws[R_LSUM, h] -= p
            ws[R_LSUM2, h] -= p * p
    ws[R_LIBS, p], ws[R_LSUM, p], ws[R_LSUM2, p] = nl, sl, sl2
    g = p
    for d in (1, -1, w, -w):
        q = p + d
        if board[q] == c and head[q] != g:
            g = _merge(ws, g, head[q])
    o = 3 - c
    captured = 0
    cap_at = 0
    for d in (1, -1, w, -w):
        q = p + d
        if board[q] == o and ws[R_LIBS, head[q]] == 0:
            captured += _remove_block(ws, w, head[q])
            cap_at = q
    if captured == 1 and ws[R_GSIZE, g] == 1 and ws[R_LIBS, g] == 1:
        return cap_at
    return 0


@njit(cache=True, nogil=True)
def _capture_next_to(ws, w, g, ko):
    """Liberty of an opponent block in atari touching block g (a capture that saves g), or 0."""
    board, head, nxt = ws[R_BOARD], ws[R_HEAD], ws[R_NEXT]
    o = 3 - board[g]
    s = g
    while True:
        for d in (1, -1, w, -w):
            q = s + d
            if board[q] == o:
                h = head[q]
                if _in_atari(ws, h):
                    lib = ws[R_LSUM, h] // ws[R_LIBS, h]
                    if lib != ko:
                        return lib
        s = nxt[s]
        if s == g:
            return 0


@njit(cache=True, nogil=True)
def _pattern_move(ws, w, c, last, ko, rng):
    """A point drawn uniformly from the empty 8 neighbours of `last` that match a MoGo pattern for c and that
    the random rule accepts (not an own eye, _random_ok); 0 when there is none."""
    board = ws[R_BOARD]
    found = 0
    pick = 0
    for d in (-w - 1, -w, -w + 1, -1, 1, w - 1, w, w + 1):
        q = last + d
        if board[q] == EMPTY and matches(board, w, q, c):
            if not _is_own_eye(board, w, q, c) and _random_ok(ws, w, q, c, ko):
                found += 1
                if rand_below(rng, found) == 0:  # reservoir sampling: each of the `found` kept with chance 1/found
                    pick = q
    return pick


@njit(cache=True, nogil=True)
def _choose(ws, w, c, last, ko, rng, patterns):
    """The playout policy's move for c (see the module docstring; `patterns` turns rule 3 on); PASS when
    nothing is left."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    if last != PASS and last != 0 and board[last] == 3 - c:
        for d in (1, -1, w, -w):
            q = last + d
            if board[q] == c:
                g = head[q]
                if _in_atari(ws, g):
                    mv = _capture_next_to(ws, w, g, ko)
                    if mv != 0:
                        return mv
                    lib = ws[R_LSUM, g] // ws[R_LIBS, g]
                    if lib != ko and _libs_after(ws, w, lib, c) == 2 and not _is_own_eye(board, w, lib, c):
                        return lib
        g = head[last]
        if _in_atari(ws, g):
            lib = ws[R_LSUM, g] // ws[R_LIBS, g]
            if lib != ko:
                return lib
        if patterns:
            mv = _pattern_move(ws, w, c, last, ko, rng)
            if mv != 0:
                return mv
    n = ws[R_META, 0]
    if n == 0:
        return PASS
    empties = ws[R_EMPTY]
    i = rand_below(rng, n)
    for _ in range(n):
        p = empties[i]
        if not _is_own_eye(board, w, p, c) and _random_ok(ws, w, p, c, ko):
            return p
        i += 1
        if i == n:
            i = 0
    return PASS


@njit(cache=True, nogil=True)
def run_playout(pos, ws, rng, max_moves, own, seki, trace, patterns):
    """One playout from pos (unchanged). Returns (black area - white area - komi, moves played).
    patterns: use the pattern rule of the policy (module docstring, rule 3).

    own/seki (length BOARD_CAP, or empty to skip): own[p] += +1 for a Black point, -1 for a White
    point at the end; seki[p] += 1 for a stone whose final block touches a neutral point (after
    two passes that is a seki: neither side can fill the shared liberty without self-atari).
    trace (empty to skip) receives the moves."""
    _setup(pos, ws)
    w = pos[STRIDE]
    c = pos[SIDE]
    ko = pos[KO]
    passes = pos[PASSES]
    ply = pos[PLY]
    last = pos[HIST + HIST_STRIDE * (ply - 1) + H_MOVE] if ply > 0 else PASS
    moves = 0
    while passes < 2 and moves < max_moves:
        p = _choose(ws, w, c, last, ko, rng, patterns)
        if p == PASS:
            passes += 1
            ko = 0
        else:
            ko = _play(ws, w, p, c)
            passes = 0
        if moves < trace.shape[0]:
            trace[moves] = p
        last = p
        c = 3 - c
        moves += 1
    owner = ws[R_OWNER]
    board = ws[R_BOARD]
    black, white = area_owner(board, pos[SIZE], owner)
    if own.shape[0] > 0:
        head = ws[R_HEAD]
        in_seki = ws[R_STACK]  # free after _setup: marks heads of blocks in seki
        in_seki[:] = 0
        for p in range(BOARD_CAP):
            v = owner[p]
            if v == BLACK:
                own[p] += 1.0
            elif v == WHITE:
                own[p] -= 1.0
            elif v == EMPTY:
                for d in (1, -1, w, -w):
                    u = board[p + d]
                    if u == BLACK or u == WHITE:
                        in_seki[head[p + d]] = 1
        for p in range(BOARD_CAP):
            u = board[p]
            if (u == BLACK or u == WHITE) and in_seki[head[p]] == 1:
                seki[p] += 1.0
    return black - white - pos[KOMI_MILLI] / 1000.0, moves


@njit(cache=True, nogil=True)
def run_playouts(pos, ws, rng, n, max_moves, own, seki, patterns):
    """n playouts from pos (run_playout's arguments). Returns (Black's wins counting a tie as 1/2, total
    moves, summed score)."""
    wins = 0.0
    total = 0
    score_sum = 0.0
    trace = np.empty(0, np.int32)
    for _ in range(n):
        score, moves = run_playout(pos, ws, rng, max_moves, own, seki, trace, patterns)
        total += moves
        score_sum += score
        if score > 0:
            wins += 1.0
        elif score == 0:
            wins += 0.5
    return wins, total, score_sum


# Heuristic prior H(s,a) in [0, 1] for the mover (seed 000 §5, heuristic MC-RAVE): the even-game value
# 1/2 unless a rule below applies (first match wins).
PRIOR_EVEN = 0.5
PRIOR_EYE = 0.05  # filling an own eye-like point
PRIOR_CAPTURE = 0.9  # captures an opponent block in atari
PRIOR_ESCAPE = 0.8  # extends an own block in atari to >= 2 liberties
PRIOR_SELF_ATARI = 0.15  # leaves an own block of >= 2 stones in atari
# (pattern prior only) one of the 8 neighbours of the last move that matches a MoGo pattern (patterns.py): the
# moves MoGo's playouts favour; seed 000 §5.1's handcrafted prior gave them 1, here 0.7 keeps them below the
# captures and escapes as in the playout policy's order.
PRIOR_PATTERN = 0.7
PRIOR_NEAR_LAST = 0.6  # within Manhattan distance 2 of the opponent's last move (local answer)
PRIOR_EMPTY_EDGE = 0.35  # first line with no stone within distance 2 (too low in open areas)
PRIOR_PASS = 0.1
NEAR = 2
# Large boards (size >= LARGE_BOARD, Pachi's threshold for its "b19" prior): with no stone within distance NEAR,
# the third line is where the opening is played and the first line loses; Pachi adds a win (third line) or a
# loss (first line) of the even prior's weight to the even 1/2, i.e. 3/4 and 1/4.
LARGE_BOARD = 15
PRIOR_OPEN_THIRD = 0.75
PRIOR_OPEN_FIRST = 0.25
# (large boards) an open corner point on the third or fourth line both ways (3-3, 3-4, 4-4): corners first.
PRIOR_OPEN_CORNER = 0.85
# (large boards) an atari escape that runs into a working ladder (ladder.py): as bad as a self-atari.
PRIOR_LADDERED = 0.15
# The rules above by index (move_rules names the rule that sets each move's prior) and their values.
RULE_EVEN, RULE_EYE, RULE_CAPTURE, RULE_ESCAPE, RULE_SELF_ATARI, RULE_PATTERN, RULE_NEAR_LAST = 0, 1, 2, 3, 4, 5, 6
RULE_EMPTY_EDGE, RULE_PASS, RULE_OPEN_THIRD, RULE_OPEN_FIRST, RULE_OPEN_CORNER, RULE_LADDERED = 7, 8, 9, 10, 11, 12
N_RULES = 13
PRIOR_VALUES = np.array(
    [
        PRIOR_EVEN,
        PRIOR_EYE,
        PRIOR_CAPTURE,
        PRIOR_ESCAPE,
        PRIOR_SELF_ATARI,
        PRIOR_PATTERN,
        PRIOR_NEAR_LAST,
        PRIOR_EMPTY_EDGE,
        PRIOR_PASS,
        PRIOR_OPEN_THIRD,
        PRIOR_OPEN_FIRST,
        PRIOR_OPEN_CORNER,
        PRIOR_LADDERED,
    ]
)


@njit(cache=True, nogil=True)
def _stone_near(board, w, p, radius):
    """Any stone within Manhattan distance `radius` of p."""
    for dy in range(-radius, radius + 1):
        r = radius - abs(dy)
        for dx in range(-r, r + 1):
            q = p + dy * w + dx
            if 0 <= q < BOARD_CAP and (board[q] == BLACK or board[q] == WHITE):
                return True
    return False


@njit(cache=True, nogil=True)
def _rule(ws, w, size, p, c, last, patterns, ladders):
    """The rule (RULE_*) that sets H(s,a) of a legal stone move p for c (the first that applies; RULE_PATTERN
    only with `patterns`, RULE_LADDERED only with `ladders`), after _setup of the position."""
    board, head = ws[R_BOARD], ws[R_HEAD]
    if _is_own_eye(board, w, p, c):
        return RULE_EYE
    escape = False
    for d in (1, -1, w, -w):
        v = board[p + d]
        if (v == BLACK or v == WHITE) and _in_atari(ws, head[p + d]):
            if v != c:
                return RULE_CAPTURE
            escape = True
    libs = _libs_after(ws, w, p, c)
    if escape and libs == 2:
        if ladders and size >= LARGE_BOARD and escape_is_laddered(board, w, p, c):
            return RULE_LADDERED
        return RULE_ESCAPE
    if libs < 2:
        for d in (1, -1, w, -w):
            if board[p + d] == c:
                return RULE_SELF_ATARI
    if last != PASS and last > 0:
        dx, dy = abs(p % w - last % w), abs(p // w - last // w)
        if patterns and dx <= 1 and dy <= 1 and matches(board, w, p, c):
            return RULE_PATTERN
        if dx + dy <= NEAR:
            return RULE_NEAR_LAST
    x, y = p % w, p // w
    lx, ly = min(x, size - 1 - x), min(y - 1, size - y)  # 0 = first line (rows are 1..size, columns 0..size-1)
    line = min(lx, ly)
    if line == 0 and not _stone_near(board, w, p, NEAR):
        return RULE_OPEN_FIRST if size >= LARGE_BOARD else RULE_EMPTY_EDGE
    if size >= LARGE_BOARD and 2 <= line <= 3 and not _stone_near(board, w, p, NEAR):
        if max(lx, ly) <= 3:
            return RULE_OPEN_CORNER
        if line == 2:
            return RULE_OPEN_THIRD
    return RULE_EVEN


@njit(cache=True, nogil=True)
def move_rules(pos, ws, moves, n, out, patterns, ladders):
    """out[i] = the heuristic rule (RULE_*) of the legal move moves[i] for the side to move of pos (uses ws, and
    leaves playout._setup of pos in it); patterns: the RULE_PATTERN rule; ladders: RULE_LADDERED (large boards)."""
    _setup(pos, ws)
    w = pos[STRIDE]
    ply = pos[PLY]
    last = pos[HIST + HIST_STRIDE * (ply - 1) + H_MOVE] if ply > 0 else PASS
    for i in range(n):
        p = moves[i]
        out[i] = RULE_PASS if p == PASS else _rule(ws, w, pos[SIZE], p, pos[SIDE], last, patterns, ladders)


@njit(cache=True, nogil=True)
def move_priors(pos, ws, moves, n, out, patterns, ladders, rules=None):
    """out[i] = heuristic prior H of the legal move moves[i] for the side to move of pos (uses ws); patterns:
    use the PRIOR_PATTERN rule; ladders: the PRIOR_LADDERED rule (large boards); rules (int64[>= n], may be left
    out): receives each move's rule (RULE_*)."""
    if rules is None:
        rules = np.empty(n, np.int64)
    move_rules(pos, ws, moves, n, rules, patterns, ladders)
    for i in range(n):
        out[i] = PRIOR_VALUES[rules[i]]


def move_cap(size: int, factor: float = DEFAULT_CAP_FACTOR) -> int:
    """Playout move cap for a board size."""
    return max(1, int(factor * size * size))
