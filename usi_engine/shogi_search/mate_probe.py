"""Cheap exact mate probes for the expansion.

- `mate_in_one(pos)`: does the side to move have a checking move after which the opponent has no legal
  move (a pawn-drop mate is never generated, so it never counts)? `expand` asks it of each child whose side
  to move is not in check (the *threat probe*): a move of ours that allows a mate in one is then a proven
  loss at once, where the quiescence search (captures only) would value it as quiet.
- `mated_in_two(pos)`: is the side to move, standing in check, mated whatever it plays, i.e. does every
  legal evasion allow a mate in one? From the parent that gave the check this is a mate in three (check, any
  evasion, mate); `expand` asks it of each child that gives check (the *mate probe*).

Exact: no depth cut, no heuristics; repetition cannot occur within three plies of a mating attack that ends
in mate. Both return (answer, work), work = the positions whose moves were generated (one per move
generation), counted as nodes like quiescence nodes so that node limits stay proportional to CPU.
"""

import numpy as np

from usi_engine.jit import bare_kernel, counted_kernel
from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi.movegen import gen_legal
from usi_engine.shogi.position import do_move, undo_move

from .mate import gives_check


@counted_kernel
def probe_scratch():
    """Move buffers for one probe: evasions, attacking moves, defender replies."""
    return (
        np.empty(MAX_MOVES, dtype=np.int32),
        np.empty(MAX_MOVES, dtype=np.int32),
        np.empty(MAX_MOVES, dtype=np.int32),
    )


@bare_kernel
def mate_in_one(pos, moves, replies):
    """(found, work): whether the side to move has a checking move that leaves the opponent without a legal
    move."""
    n = gen_legal(pos, moves)
    work = 1
    for i in range(n):
        m = moves[i]
        if not gives_check(pos, m):
            continue
        do_move(pos, m)
        mated = gen_legal(pos, replies) == 0
        undo_move(pos)
        work += 1
        if mated:
            return True, work
    return False, work


@bare_kernel
def mated_in_two(pos, evasions, moves, replies):
    """(mated, work): whether the side to move (in check, with at least one legal move) is mated in two plies
    whatever it plays: every evasion allows mate_in_one. False when it has no legal move at all (mated now:
    the caller's terminal rule)."""
    n = gen_legal(pos, evasions)
    work = 1
    if n == 0:
        return False, work
    for i in range(n):
        do_move(pos, evasions[i])
        found, w = mate_in_one(pos, moves, replies)
        undo_move(pos)
        work += w
        if not found:
            return False, work
    return True, work
