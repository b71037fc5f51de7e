"""Shallow full-width alpha-beta over the quiescence search: the *deep leaf* of the shogi search and the
arena's fixed-depth player (learn/match/players.py).

`ab_value(pos, depth, alpha, beta)` is the fail-soft negamax value of pos for the side to move, searched
`depth` plies full-width (every legal move, evasions when in check) and then by `qsearch_inc`:

- a move that ends the game (repetition, checkmate, declaration, game length: terminal.py) takes
  the terminal's value, with mate scores moved one point towards zero per ply below pos (MATE - ply, as
  the quiescence search counts them), so a nearer mate scores higher;
- no legal move at pos itself = mated (-MATE);
- moves in MVV-LVA order (quiescence.order_key: captures first, quiet moves and drops after them);
- static values are incremental: row `row` of the caller's eval stack holds pos; each ply records the
  next row, and the quiescence search runs from row + depth.

Depth 1 and 2 are separate functions, not one recursive kernel (a self-recursive cached numba function
fails to link when another cached kernel calls it; the quiescence search is iterative for the same reason).

Why (seed 004 §6, Baier & Winands' MCTS-minimax hybrids): each MCSS sample pays for one expansion valued by
captures-only quiescence, so a quiet threat two plies below a leaf is invisible until the tree reaches it; a
depth-2 alpha-beta at the leaf sees it at a few expansions' cost (docs/search.md, "Deep leaves").
"""

import numpy as np
from numba import njit

from eval.shogi_features import N_EACC, N_EIDX, inc_init, inc_record
from usi_engine.search.values import MATE, MATE_THRESHOLD
from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi.movegen import gen_legal
from usi_engine.shogi.position import do_move, undo_move

from .params import MAX_AB_DEPTH
from .quiescence import INF, next_move, order_key, qsearch_inc, qsearch_scratch
from .terminal import terminal_value


@njit(cache=True, nogil=True)
def ab_scratch(qdepth):
    """(ply moves [MAX_AB_DEPTH, MAX_MOVES] int32, their order keys int64, one move list for terminal tests,
    quiescence scratch as qsearch_scratch): the buffers of one ab_value call."""
    return (
        np.empty((MAX_AB_DEPTH, MAX_MOVES), dtype=np.int32),
        np.empty((MAX_AB_DEPTH, MAX_MOVES), dtype=np.int64),
        np.empty(MAX_MOVES, dtype=np.int32),
        qsearch_scratch(qdepth),
    )


@njit(cache=True, nogil=True)
def eval_stack(pos, w, qdepth, pp_zero):
    """(eacc, eidx): an incremental evaluation stack for ab_value from pos, row 0 = pos."""
    rows = qdepth + MAX_AB_DEPTH + 2
    eacc = np.empty((rows, N_EACC), dtype=np.float64)
    eidx = np.empty((rows, N_EIDX), dtype=np.int64)
    inc_init(pos, w, eacc, eidx, 0, pp_zero)
    return eacc, eidx


@njit(cache=True, nogil=True)
def toward_zero(value, plies):
    """A mate score seen `plies` below its position, from that position's side: MATE - plies (eq. of the
    quiescence search's -MATE + ply); heuristic values unchanged."""
    if value >= MATE_THRESHOLD:
        return value - plies
    if value <= -MATE_THRESHOLD:
        return value + plies
    return value


@njit(cache=True, nogil=True)
def ab_depth1(pos, w, params, alpha, beta, ply, buffers, eacc, eidx, row, qs):
    """Depth-1 value of pos (side to move; eval row `row`, `ply` plies below the deep leaf's root)."""
    moves, keys, scratch, q = buffers
    qdepth, see_prune, delta, recapture = qs
    n = gen_legal(pos, moves[ply])
    if n == 0:
        return -MATE
    for i in range(n):
        keys[ply, i] = order_key(pos, moves[ply, i])
    best = -INF
    for i in range(n):
        m = next_move(pos, moves[ply], keys[ply], i, n)
        inc_record(pos, m, w, eacc, eidx, row)
        do_move(pos, m)
        terminal, value = terminal_value(pos, params, scratch)
        if terminal:
            q[5][0] += 1
        else:
            value = qsearch_inc(pos, w, -beta, -alpha, qdepth, *q, eacc, eidx, row + 1, see_prune, delta, recapture)
        v = -toward_zero(value, 1)
        undo_move(pos)
        if v > best:
            best = v
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    break
    return best


@njit(cache=True, nogil=True)
def ab_depth2(pos, w, params, alpha, beta, buffers, eacc, eidx, qs):
    """Depth-2 value of pos (side to move; eval row 0), depth 1 below each move."""
    moves, keys, scratch, q = buffers
    n = gen_legal(pos, moves[0])
    if n == 0:
        return -MATE
    for i in range(n):
        keys[0, i] = order_key(pos, moves[0, i])
    best = -INF
    for i in range(n):
        m = next_move(pos, moves[0], keys[0], i, n)
        inc_record(pos, m, w, eacc, eidx, 0)
        do_move(pos, m)
        terminal, value = terminal_value(pos, params, scratch)
        q[5][0] += 1
        if not terminal:
            value = ab_depth1(pos, w, params, -beta, -alpha, 1, buffers, eacc, eidx, 1, qs)
        v = -toward_zero(value, 1)
        undo_move(pos)
        if v > best:
            best = v
            if v > alpha:
                alpha = v
                if alpha >= beta:
                    break
    return best


@njit(cache=True, nogil=True)
def ab_value(pos, w, params, depth, alpha, beta, qs, pp_zero):
    """(value, work): the fail-soft value of pos for the side to move, `depth` (0, 1 or 2) plies of alpha-beta
    over the quiescence search with settings qs = (max depth, SEE pruning, delta margin, recapture ply) (depth 0
    = the quiescence search itself); work = the positions visited (move-generating nodes and quiescence
    nodes), counted like the expansion's."""
    buffers = ab_scratch(qs[0])
    eacc, eidx = eval_stack(pos, w, qs[0], pp_zero)
    q = buffers[3]
    if depth >= 2:
        value = ab_depth2(pos, w, params, alpha, beta, buffers, eacc, eidx, qs)
    elif depth == 1:
        value = ab_depth1(pos, w, params, alpha, beta, 0, buffers, eacc, eidx, 0, qs)
    else:
        value = qsearch_inc(pos, w, alpha, beta, qs[0], *q, eacc, eidx, 0, qs[1], qs[2], qs[3])
    return value, q[5][0] + (1 if depth > 0 else 0)
