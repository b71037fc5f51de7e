"""Root mate guard: a root move after which the opponent mates by checks is a proven loss.

Why: in the games our engine lost to an alpha-beta engine, almost every loss began with a root move that
allowed a forced mate of at most nine plies which another move avoided (docs/search.md, "Mate guard").
MCSS values the position after a root move by quiescence searches a few plies deep, and a quiet move
that leaves a mating attack by checks looks fine until the search happens to sample the attack.

The guard asks the df-pn solver (mate.py) the tsume question for the opponent — does the side to move
after our move mate by checks within `max_ply` plies? — with a node budget. A proof is exact (df-pn
proofs never depend on the path), so the Searcher stores it as the child's proven value MATE - plies
(values.py) and the root's softmax then gives that move no weight (Searcher root_verifier contract).
A mate that would end after the game-length draw (`P_MAX_MOVES`) is no loss and is ignored. Without a
proof within the budget the move stands (no claim is made).

Cost: df-pn visits about 4x fewer positions per second than the quiescence search, so its nodes are
counted MATE_NODE_WORK times in the search's `nodes` (node limits stay proportional to CPU).
"""

import threading

import numpy as np

from usi_engine.search.values import MATE
from usi_engine.shogi.board import Board
from usi_engine.shogi.position import game_length

from .mate import MateSolver
from .params import P_MAX_MOVES

DEFAULT_PLY = 11  # opponent mates up to this many plies are looked for
DEFAULT_NODES = 5000  # df-pn nodes per root move asked about
MATE_NODE_WORK = 4  # quiescence-node equivalents of one df-pn node (bench mate vs bench qsearch speed)


class RootMateGuard:
    """The shogi root verifier: `guard(pos, move, time_limit_s, stop_event)` -> (value of the child after `move` from
    its side to move, or None; work in search nodes)."""

    def __init__(self, solver: MateSolver, params: np.ndarray, max_ply: int = DEFAULT_PLY, nodes: int = DEFAULT_NODES):
        if max_ply < 1 or nodes < 1:
            raise ValueError("the mate guard needs max_ply >= 1 and nodes >= 1")
        self.solver, self.params, self.max_ply, self.nodes = solver, params, max_ply, nodes

    def __call__(
        self, pos: np.ndarray, move: int, time_limit_s: float | None, stop_event: threading.Event | None = None
    ) -> tuple[float | None, int]:
        board = Board.from_pos(pos)
        board.push_code(move)
        plies, nodes = self.solver.mate_distance(board, self.max_ply, self.nodes, time_limit_s, stop_event)
        work = MATE_NODE_WORK * nodes
        if plies < 0:
            return None, work
        limit = int(self.params[P_MAX_MOVES])
        if limit > 0 and game_length(board.pos) + plies - 1 >= limit:
            return None, work  # the game is drawn before the mate completes
        return MATE - plies, work
