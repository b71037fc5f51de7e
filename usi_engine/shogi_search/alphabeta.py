"""Shallow full-width alpha-beta over the quiescence search: the *deep leaf* of the shogi search and the
arena's fixed-depth player (learn/match/players.py).

`ab_value(pos, depth, alpha, beta)` is the fail-soft negamax value of pos for the side to move, searched
`depth` plies full-width (every legal move, evasions when in check) and then by `qsearch_inc`:

- a move that ends the game (repetition, checkmate, declaration, game length: terminal.py) takes
  the terminal's value, with mate scores moved one point towards zero per ply below pos (MATE - ply, as
  the quiescence search counts them), so a nearer mate scores higher;
- no legal move at pos itself = mated (-MATE);
- moves in MVV-LVA order (quiescence.order_key: captures first, quiet moves and drops after them);
- static values are incremental: row 0 of the eval stack (incremental.eval_stack_for) holds pos, the node at
  ply p row p, and its quiescence leaves start at row p + 1.

The search is iterative, an explicit stack per ply, not a recursive kernel (a self-recursive cached numba
function fails to link when another cached kernel calls it; the quiescence search is iterative for the same
reason).

Why (seed 004 §6, Baier & Winands' MCTS-minimax hybrids): each MCSS sample pays for one expansion valued by
captures-only quiescence, so a quiet threat two plies below a leaf is invisible until the tree reaches it; a
depth-2 alpha-beta at the leaf sees it, at the cost of several expansions (docs/search.md, "Deep leaves": measured,
not kept on).
"""

import numpy as np

from usi_engine.jit import bare_kernel, counted_kernel
from usi_engine.search.values import MATE, MATE_THRESHOLD
from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi.movegen import gen_legal
from usi_engine.shogi.position import do_move, undo_move
from usi_engine.shogi_eval.incremental import eval_stack_for, inc_record

from .params import MAX_AB_DEPTH
from .quiescence import INF, next_move, order_key, qsearch_inc, qsearch_scratch
from .terminal import terminal_value


@counted_kernel
def ab_scratch(qdepth):
    """(ply moves [MAX_AB_DEPTH, MAX_MOVES] int32, their order keys int64, per-ply frames (alpha, beta, best)
    float64, per-ply counts (next move index, move count) int64, one move list for terminal tests, the
    quiescence scratch as qsearch_scratch): the buffers of one ab_value call."""
    return (
        np.empty((MAX_AB_DEPTH, MAX_MOVES), dtype=np.int32),
        np.empty((MAX_AB_DEPTH, MAX_MOVES), dtype=np.int64),
        np.empty((MAX_AB_DEPTH, 3), dtype=np.float64),
        np.empty((MAX_AB_DEPTH, 2), dtype=np.int64),
        np.empty(MAX_MOVES, dtype=np.int32),
        qsearch_scratch(qdepth),
    )


@bare_kernel
def toward_zero(value, plies):
    """A mate score seen `plies` below its position, from that position's side: MATE - plies (eq. of the
    quiescence search's -MATE + ply); heuristic values unchanged."""
    if value >= MATE_THRESHOLD:
        return value - plies
    if value <= -MATE_THRESHOLD:
        return value + plies
    return value


@bare_kernel
def ab_search(pos, w, params, depth, alpha, beta, buffers, eacc, eidx, qs):
    """Fail-soft negamax of pos (side to move, eval row 0) to `depth` >= 1 plies, iterative: an explicit stack
    per ply (frames[ply] = alpha, beta, best; counts[ply] = next move, move count); the value of the node at
    ply p is stored on row p of the eval stack, its quiescence leaves start at row p + 1. pos is restored."""
    moves, keys, frames, counts, scratch, q = buffers
    qdepth, see_prune, delta, recapture = qs
    nodes = q[5]
    ply = 0
    frames[0, 0] = alpha
    frames[0, 1] = beta
    entering = True
    value = 0.0
    while True:
        returning = False
        if entering:  # a non-terminal node above the quiescence leaves
            nodes[0] += 1
            n = gen_legal(pos, moves[ply])
            if n == 0:
                value = -MATE
                returning = True
            else:
                for i in range(n):
                    keys[ply, i] = order_key(pos, moves[ply, i])
                counts[ply, 0] = 0
                counts[ply, 1] = n
                frames[ply, 2] = -INF
            entering = False
        else:  # the value of the child just searched, from its side to move
            undo_move(pos)
            v = -toward_zero(value, 1)
            if v > frames[ply, 2]:
                frames[ply, 2] = v
                if v > frames[ply, 0]:
                    frames[ply, 0] = v
                    if v >= frames[ply, 1]:
                        value = v
                        returning = True
            if not returning and counts[ply, 0] >= counts[ply, 1]:
                value = frames[ply, 2]
                returning = True
        if returning:
            if ply == 0:
                return value
            ply -= 1
            continue
        i = counts[ply, 0]
        m = next_move(pos, moves[ply], keys[ply], i, counts[ply, 1])
        counts[ply, 0] = i + 1
        inc_record(pos, m, w, eacc, eidx, ply)
        do_move(pos, m)
        terminal, value = terminal_value(pos, params, scratch)
        if terminal:
            nodes[0] += 1
        elif ply + 1 == depth:
            a, b = -frames[ply, 1], -frames[ply, 0]
            value = qsearch_inc(pos, w, a, b, qdepth, *q, eacc, eidx, ply + 1, see_prune, delta, recapture, np.nan)
        else:
            frames[ply + 1, 0] = -frames[ply, 1]
            frames[ply + 1, 1] = -frames[ply, 0]
            ply += 1
            entering = True


@counted_kernel
def ab_value(pos, w, params, depth, alpha, beta, qs, pp_zero):
    """(value, work): the fail-soft value of pos for the side to move, `depth` (0, 1 or 2) plies of alpha-beta
    over the quiescence search with settings qs = (max depth, SEE pruning, delta margin, recapture ply) (depth 0
    = the quiescence search itself); work = the positions visited (move-generating nodes and quiescence
    nodes), counted like the expansion's."""
    buffers = ab_scratch(qs[0])
    eacc, eidx = eval_stack_for(pos, w, qs[0] + MAX_AB_DEPTH + 2, pp_zero)  # row p: the node at ply p
    q = buffers[5]
    if depth > 0:
        value = ab_search(pos, w, params, min(depth, MAX_AB_DEPTH), alpha, beta, buffers, eacc, eidx, qs)
    else:
        value = qsearch_inc(pos, w, alpha, beta, qs[0], *q, eacc, eidx, 0, qs[1], qs[2], qs[3], np.nan)
    return value, q[5][0]
