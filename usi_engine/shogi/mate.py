"""Mate solver for `go mate` (tsume): iterative-deepening AND/OR search over checks and evasions.

Not df-pn: a depth-first AND/OR search with a fixed odd depth D (the attacker checks with every move, the
defender tries every legal reply), deepened D = 1, 3, 5, ... so the first mate found is the shortest.
No transposition table, so long or wide problems run out of time where df-pn would not; the answer is
then `checkmate timeout`, never a wrong mate. Rules come from the move generator: a pawn-drop mate is
never generated (so never counted), and a position where the defender has no legal move is mate.

- `solve(pos, depth, bufs, ctl)`: 1 = the side to move mates within `depth` plies, 0 = no mate within
  `depth`, -1 = stopped (ctl[C_STOP] set by another thread). ctl[C_CUTOFF] is set when the depth limit
  pruned a line that was still going; a 0 without a cutoff proves that no mate exists at any depth
  (checks ran out), which is how `checkmate nomate` is decided. On FOUND, ctl[C_BEST] is the mating
  first move.
- `mate_line(board, depth, ...)` (Python): the mating line, the defender choosing at every ply the reply
  with the longest shortest mate.
The kernel is iterative (an explicit stack), as recursion does not survive numba's cache.
"""

import threading
import time

import numpy as np
from numba import njit

from .layout import HIST, HIST_STRIDE, MAX_MOVES, PLY
from .movegen import gen_legal
from .position import do_move, in_check, undo_move

MAX_MATE_PLY = 63
C_STOP, C_NODES, C_CUTOFF, C_BEST = 0, 1, 2, 3
CTL_SIZE = 4
FOUND, NONE, STOPPED = 1, 0, -1


@njit(cache=True, nogil=True)
def _gen(pos, attacker, out):
    """Moves of a node: the attacker's checking moves, or every legal reply of the defender."""
    n = gen_legal(pos, out)
    if not attacker:
        return n
    k = 0
    for i in range(n):
        m = out[i]
        do_move(pos, m)
        if in_check(pos):
            out[k] = m
            k += 1
        undo_move(pos)
    return k


@njit(cache=True, nogil=True)
def solve(pos, depth, moves, counts, idx, ctl):
    """Whether the side to move mates within `depth` (odd) plies; see the module docstring."""
    ply = 0
    counts[0] = _gen(pos, True, moves[0])
    idx[0] = 0
    returning = False
    res = False
    while True:
        attacker = ply % 2 == 0
        node_done = False
        node_res = False
        if returning:
            undo_move(pos)
            returning = False
            if attacker and res:
                node_done, node_res = True, True
            elif not attacker and not res:
                node_done, node_res = True, False
        if not node_done:
            if ctl[C_STOP] != 0:
                for _ in range(ply):
                    undo_move(pos)
                return STOPPED
            if idx[ply] < counts[ply]:
                m = moves[ply, idx[ply]]
                idx[ply] += 1
                do_move(pos, m)
                ctl[C_NODES] += 1
                child = ply + 1
                left = depth - child
                n = _gen(pos, not attacker, moves[child])
                if attacker:                     # child: defender to move
                    if n == 0:
                        res = True               # mated
                    elif left == 0:
                        ctl[C_CUTOFF] = 1
                        res = False
                    else:
                        counts[child] = n
                        idx[child] = 0
                        ply = child
                        continue
                else:                            # child: attacker to move
                    if n == 0:
                        res = False              # no check left
                    elif left == 0:
                        ctl[C_CUTOFF] = 1
                        res = False
                    else:
                        counts[child] = n
                        idx[child] = 0
                        ply = child
                        continue
                returning = True
                continue
            node_res = not attacker              # all checks failed / every reply is mated
        if ply == 0:
            if node_res:
                ctl[C_BEST] = moves[0, idx[0] - 1]
            return FOUND if node_res else NONE
        ply -= 1
        res = node_res
        returning = True


class MateBuffers:
    """Per-search scratch of `solve`: move lists and counters for MAX_MATE_PLY + 1 plies, control words."""

    def __init__(self):
        self.moves = np.zeros((MAX_MATE_PLY + 2, MAX_MOVES), np.int32)
        self.counts = np.zeros(MAX_MATE_PLY + 2, np.int64)
        self.idx = np.zeros(MAX_MATE_PLY + 2, np.int64)
        self.ctl = np.zeros(CTL_SIZE, np.int64)

    def run(self, pos, depth):
        self.ctl[C_CUTOFF] = 0
        return solve(pos, np.int64(depth), self.moves, self.counts, self.idx, self.ctl)


def _with_room(board):
    """A copy of the board whose history can hold MAX_MATE_PLY more plies."""
    work = board.copy()
    while HIST + HIST_STRIDE * (work.ply + MAX_MATE_PLY + 4) > work.pos.shape[0]:
        work._grow_history()
    return work


def shortest_mate(pos, bufs, max_ply=MAX_MATE_PLY):
    """(status, depth): FOUND with the shortest mate length, NONE if proven mateless (checks run out),
    STOPPED when stopped or `max_ply` was reached without an answer."""
    for depth in range(1, max_ply + 1, 2):
        status = bufs.run(pos, depth)
        if status == STOPPED:
            return STOPPED, depth
        if status == FOUND:
            return FOUND, depth
        if bufs.ctl[C_CUTOFF] == 0:
            return NONE, depth
    return STOPPED, max_ply


def _first_mating_move(board, depth, bufs):
    """An attacker move that keeps a mate within `depth` plies (the caller knows one exists)."""
    from .sfen import move_to_usi
    for m in board.legal_move_codes():
        board.push_code(int(m))
        mated = board.is_checkmate()
        ok = mated or (depth > 1 and board.is_check() and _defender_mated_within(board, depth - 1, bufs))
        board.pop()
        if ok:
            return move_to_usi(int(m)), int(m)
    if bufs.ctl[C_STOP]:
        return None, None
    raise RuntimeError("no mating move found although a mate was proven")


def _defender_mated_within(board, depth, bufs):
    """Whether every defender reply leads to a mate within depth - 1 plies."""
    for r in board.legal_move_codes():
        board.push_code(int(r))
        status = bufs.run(board.pos, depth - 1)
        board.pop()
        if status != FOUND:
            return False
    return True


def mate_line(board, depth, bufs):
    """USI moves of a mate in `depth` plies from `board` (attacker to move): the defender picks the
    reply whose shortest mate is longest, the attacker a move that mates in time. Returns the line so
    far when ctl[C_STOP] is set meanwhile."""
    work = _with_room(board)
    line = []
    while depth > 0:
        usi, code = _first_mating_move(work, depth, bufs)
        if usi is None:
            return line
        line.append(usi)
        work.push_code(code)
        if work.is_checkmate():
            return line
        depth -= 1
        best, best_len = None, -1
        for r in work.legal_move_codes():
            work.push_code(int(r))
            status, d = shortest_mate(work.pos, bufs, depth - 1)
            work.pop()
            if status == FOUND and d > best_len:
                best, best_len = int(r), d
        if bufs.ctl[C_STOP]:
            return line
        from .sfen import move_to_usi
        line.append(move_to_usi(best))
        work.push_code(best)
        depth = best_len
    return line


def find_mate(board, time_limit_s=None, stop_event=None, max_ply=MAX_MATE_PLY, whole_line=True):
    """`go mate`: ('mate', [moves]) | ('nomate', []) | ('timeout', []) within the time limit (None =
    until stop_event is set) and `max_ply` plies; the time limit covers the line reconstruction too
    (cut short -> 'timeout'). With whole_line=False a mate is ('mate', [first move, ...] of length 1)
    plus the mate length as a third item. The board is not modified."""
    bufs = MateBuffers()
    work = _with_room(board)
    done = threading.Event()

    def timer():
        end = None if time_limit_s is None else time.perf_counter() + time_limit_s
        while not done.wait(0.002):
            if (stop_event is not None and stop_event.is_set()) or (end is not None and time.perf_counter() >= end):
                bufs.ctl[C_STOP] = 1
                return

    watcher = threading.Thread(target=timer, daemon=True)
    watcher.start()
    try:
        if work.is_check():
            return "nomate", []           # the attacker is in check: not a tsume position
        status, depth = shortest_mate(work.pos, bufs, max_ply)
        if status == NONE:
            return "nomate", []
        if status == STOPPED:
            return "timeout", []
        if not whole_line:
            from .sfen import move_to_usi
            return "mate", [move_to_usi(int(bufs.ctl[C_BEST]))], depth
        line = mate_line(work, depth, bufs)
        return ("timeout", []) if bufs.ctl[C_STOP] else ("mate", line)
    finally:
        done.set()


def warm_up():
    """Compile (or load) the solver kernels."""
    from .board import Board
    find_mate(Board("4k4/9/4P4/9/9/9/9/9/9 b G 1"), 5.0)
