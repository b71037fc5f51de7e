"""A cheap exact mate probe for the expansion: is the side to move, standing in check, mated in two plies?

`mated_in_two(pos)` answers whether every legal evasion of the side to move allows a mate in one, i.e. a
checking move after which the side has no legal move (a pawn-drop mate is never generated, so it never
counts). From the parent that gave the check this is a mate in three (check, any evasion, mate); `expand`
asks it of each child that gives check, where the quiescence search alone would miss a quiet mating
check at the third ply. Exact: no depth cut, no heuristics; repetition cannot occur within three plies of
a mating attack that ends in mate. Cost: one move generation per evasion, plus one per checking reply.
"""

import numpy as np
from numba import njit

from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi.movegen import gen_legal
from usi_engine.shogi.position import do_move, undo_move

from .mate import gives_check


@njit(cache=True, nogil=True)
def probe_scratch():
    """Move buffers for one probe: evasions, attacking moves, defender replies."""
    return (
        np.empty(MAX_MOVES, dtype=np.int32),
        np.empty(MAX_MOVES, dtype=np.int32),
        np.empty(MAX_MOVES, dtype=np.int32),
    )


@njit(cache=True, nogil=True)
def mate_in_one(pos, moves, replies):
    """Whether the side to move has a checking move that leaves the opponent without a legal move."""
    n = gen_legal(pos, moves)
    for i in range(n):
        m = moves[i]
        if not gives_check(pos, m):
            continue
        do_move(pos, m)
        mated = gen_legal(pos, replies) == 0
        undo_move(pos)
        if mated:
            return True
    return False


@njit(cache=True, nogil=True)
def mated_in_two(pos, evasions, moves, replies):
    """Whether the side to move (in check, with at least one legal move) is mated in two plies whatever it
    plays: every evasion allows mate_in_one. False when it has no legal move at all (mated now: the
    caller's terminal rule)."""
    n = gen_legal(pos, evasions)
    if n == 0:
        return False
    for i in range(n):
        do_move(pos, evasions[i])
        found = mate_in_one(pos, moves, replies)
        undo_move(pos)
        if not found:
            return False
    return True
