"""Quiescence search: the leaf value of MCSS (seed 001 section 3, step 3) and its PV leaf.

Alpha-beta (fail-soft negamax) from the side to move over the static evaluation of eval/:

- not in check: stand pat on the static value, then try captures (including capturing
  promotions); a non-promoting capture by a pawn, bishop or rook that could promote is left out
  (never better), every other legal capture is searched. Non-capturing moves and drops are not.
- in check: every legal evasion (king moves, captures of the checker, interpositions including
  drops); no evasion = mated, value ``-MATE + ply`` (exactly -MATE at the node that is mated, so
  shorter mates score higher, as in design.md).
- ordering MVV-LVA: most valuable victim first, then least valuable attacker; evasions keep that
  order with non-captures last.
- depth cap ``max_depth`` plies (default 8, the 芝浦将棋Softmax QSearch_depth): at the cap the static
  value is returned, even in check.

Every call is one node (``nodes[0]``, what the engine reports as nps). The principal variation is a
triangular table: after ``qsearch_root`` the moves ``pv[0, :pv_len[0]]`` lead from the root to the
PV leaf, the position whose static value became the result (unless the result is a mate score),
so learning takes the gradient dValue/dw at that leaf (sign (-1)^len from the root's side).

No allocation inside the recursion: the caller passes ``QBuffers`` arrays sized for max_depth.
"""

import numpy as np
from numba import njit

from eval.shogi_features import evaluate
from usi_engine.search.values import MATE

from .layout import (BISHOP, BOARD, H_CHECK, HIST, HIST_STRIDE, KING, KING_SQ, MAX_MOVES, MOVE_FROM_SHIFT,
                     MOVE_PROMO_BIT, MOVE_TO_MASK, PAWN, PLY, ROOK, SIDE)
from .movegen import gen_king_moves, gen_legal, gen_piece_moves
from .position import do_move, undo_move

DEFAULT_MAX_DEPTH = 8
INF = 1.0e9
# Ordering value of a victim / attacker by ptype (MVV-LVA keys only, not the evaluation).
ORDER_VALUE = np.array([0, 1, 3, 4, 5, 8, 10, 6, 20, 7, 7, 7, 7, 11, 13], dtype=np.int64)


class QBuffers:
    """Preallocated per-thread scratch for qsearch (no allocation in the recursion).

    moves/keys: int32/int64 [max_depth + 1, MAX_MOVES]; pv: int32 [max_depth + 1, max_depth + 1];
    pv_len: int64 [max_depth + 1]; nodes: int64 [1] (incremented, never reset by qsearch).
    """

    def __init__(self, max_depth=DEFAULT_MAX_DEPTH):
        p = max_depth + 1
        self.max_depth = max_depth
        self.moves = np.zeros((p, MAX_MOVES), dtype=np.int32)
        self.keys = np.zeros((p, MAX_MOVES), dtype=np.int64)
        self.pv = np.zeros((p, p), dtype=np.int32)
        self.pv_len = np.zeros(p, dtype=np.int64)
        self.nodes = np.zeros(1, dtype=np.int64)

    def args(self):
        return self.moves, self.keys, self.pv, self.pv_len, self.nodes

    def pv_moves(self):
        """The PV of the last qsearch_root call, root to leaf, as a list of packed moves."""
        return [int(m) for m in self.pv[0, :self.pv_len[0]]]


@njit(cache=True, nogil=True)
def side_in_check(pos):
    """In check, read from the history entry do_move/set-up wrote for the current position."""
    return pos[HIST + HIST_STRIDE * pos[PLY] + H_CHECK] != 0


@njit(cache=True, nogil=True)
def gen_captures(pos, out):
    """Legal captures (with promotion choices) of the side to move, not in check; returns count.

    A non-promoting capture of a pawn, bishop or rook is dropped when the promoting one exists.
    """
    us = pos[SIDE]
    ksq = pos[KING_SQ + us]
    n = 0
    for sq in range(81):
        p = pos[BOARD + sq]
        if p == 0 or (p >> 4) != us:
            continue
        start = n
        if (p & 15) == KING:
            end = gen_king_moves(pos, sq, us, out, n)
        else:
            end = gen_piece_moves(pos, sq, p, us, ksq, -1, out, n)
        pt = p & 15
        for i in range(start, end):
            m = out[i]
            if pos[BOARD + (m & MOVE_TO_MASK)] == 0:
                continue
            if ((m & MOVE_PROMO_BIT) == 0 and n > start and out[n - 1] == (m | MOVE_PROMO_BIT)
                    and (pt == PAWN or pt == BISHOP or pt == ROOK)):
                continue
            out[n] = m
            n += 1
    return n


@njit(cache=True, nogil=True)
def order_key(pos, m):
    """MVV-LVA key: victim value * 32 - attacker value (non-captures and drops get <= 0)."""
    to = m & MOVE_TO_MASK
    frm = (m >> MOVE_FROM_SHIFT) & 0x7F
    victim = ORDER_VALUE[pos[BOARD + to] & 15]
    attacker = ORDER_VALUE[pos[BOARD + frm] & 15] if frm < 81 else 0
    promo = 2 if (m & MOVE_PROMO_BIT) != 0 else 0
    return victim * 32 - attacker + promo


@njit(cache=True, nogil=True)
def qsearch(pos, w, alpha, beta, ply, max_depth, moves, keys, pv, pv_len, nodes):
    """Fail-soft alpha-beta quiescence value of pos from the side to move (see module doc)."""
    nodes[0] += 1
    pv_len[ply] = ply
    check = side_in_check(pos)
    if ply >= max_depth:
        return evaluate(pos, w)
    if check:
        best = -INF
        n = gen_legal(pos, moves[ply])
        if n == 0:
            return -MATE + ply
    else:
        best = evaluate(pos, w)
        if best >= beta:
            return best
        if best > alpha:
            alpha = best
        n = gen_captures(pos, moves[ply])
    mv = moves[ply]
    ks = keys[ply]
    for i in range(n):
        ks[i] = order_key(pos, mv[i])
    for i in range(n):
        b = i                                   # selection sort step: best remaining first
        for j in range(i + 1, n):
            if ks[j] > ks[b]:
                b = j
        m = mv[b]
        mv[b] = mv[i]
        mv[i] = m
        k = ks[b]
        ks[b] = ks[i]
        ks[i] = k
        do_move(pos, m)
        v = -qsearch(pos, w, -beta, -alpha, ply + 1, max_depth, moves, keys, pv, pv_len, nodes)
        undo_move(pos)
        if v > best:
            best = v
            pv[ply, ply] = m
            end = pv_len[ply + 1]
            for t in range(ply + 1, end):
                pv[ply, t] = pv[ply + 1, t]
            pv_len[ply] = end
            if v > alpha:
                alpha = v
                if v >= beta:
                    break
    return best


@njit(cache=True, nogil=True)
def qsearch_root(pos, w, max_depth, moves, keys, pv, pv_len, nodes):
    """Exact quiescence value of pos (full window); PV in pv[0, :pv_len[0]]."""
    return qsearch(pos, w, -INF, INF, 0, max_depth, moves, keys, pv, pv_len, nodes)


def quiesce(pos, w, buffers=None, max_depth=DEFAULT_MAX_DEPTH):
    """Python convenience: (value, PV moves root -> leaf) of the shogi position array pos."""
    if buffers is None or buffers.max_depth != max_depth:
        buffers = QBuffers(max_depth)
    value = qsearch_root(pos, w, max_depth, *buffers.args())
    return value, buffers.pv_moves()
