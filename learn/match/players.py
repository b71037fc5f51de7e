"""In-process shogi players for the arena (learn/match/arena.py): MCSS, a 1-ply material player, a small alpha-beta.

Every player has `name`, `new_game(seed)` (forget the last game, reseed) and `choose(board) -> int | None`
(a packed legal move of `board`, or None to resign), and `game_stats()` (a dict about the current game's
searches, empty when there is nothing to say). Players never change the board they are given.

- `MCSSPlayer`: the project's Searcher (one instance per player, tree reused within a game) with a per-move
  limit of samples, nodes or time. With one thread and a samples/nodes limit a move depends only on the
  position and the seed, so arena runs are reproducible and do not depend on machine load. `pick` > 0
  plays like the learner instead of like the engine: the move is drawn from the root policy
  softmax(E*(a)/pick) (eq. 12-13, usi_engine/search/policy.root_policy) rather than taken as the best value.
- `MaterialPlayer`: plays the legal move whose resulting position has the best static *material* balance
  (the shipped material table of eval/make_material_weights, whatever weights the engine uses); ties are
  broken by a seeded RNG. No look-ahead: it takes a hanging piece and leaves its own pieces hanging.
- `AlphaBetaPlayer`: the fixed reference opponent of the temperature sweep. Full-width alpha-beta of depth
  1 or 2 plies with the engine's quiescence search (usi_engine/shogi_search/quiescence.py) at the leaves and the
  same evaluation weights as MCSS. This mirrors seed 001 §4.1 (Table 1), where MCSS at several T played a
  fixed alpha-beta program (Shibaura Shogi Jr.) using the same static evaluation plus quiescence. It is
  chosen over "MCSS at fixed settings" because the opponent must not share the knob being varied: MCSS
  against itself would measure T against T = 92 rather than against a fixed strength. Depth 2 costs tens
  of milliseconds per move in numba, so the sweep's time goes to the MCSS side. Terminals (mate,
  repetition, declaration, game length) are judged by the game's own terminal rule (shogi_search.game), root
  ties are broken by a seeded shuffle of the root moves.
"""

from __future__ import annotations

import random

import numpy as np
from numba import njit

from eval.make_material_weights import material_weights
from usi_engine.search import layout
from usi_engine.search.policy import root_policy
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions
from usi_engine.search.values import is_proven
from usi_engine.shogi import position
from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi_eval.linear import evaluate
from usi_engine.shogi_search.alphabeta import ab_value
from usi_engine.shogi_search.game import ShogiAdapter
from usi_engine.shogi_search.quiescence import DEFAULT_MAX_DEPTH, INF
from usi_engine.shogi_search.terminal import terminal_value

AB_DEPTHS = (1, 2)
STAT_KEYS = ("moves", "nodes", "samples", "depth", "seldepth", "time_ms")  # MCSS per-game statistics


class Player:
    """Base: a named player with a seeded RNG."""

    def __init__(self, name: str):
        self.name = name
        self.rng = random.Random(0)

    def new_game(self, seed: int) -> None:
        self.rng.seed(seed)

    def choose(self, board) -> int | None:
        raise NotImplementedError

    def game_stats(self) -> dict:
        return {}


class MaterialPlayer(Player):
    """1-ply greedy player over the material balance (module docstring)."""

    def __init__(self, name: str = "material"):
        super().__init__(name)
        self.weights = material_weights()

    def move_values(self, board) -> tuple[np.ndarray, np.ndarray]:
        """(legal moves, material value of each move for the mover)."""
        moves = board.legal_move_codes()
        work = board.copy()
        values = np.empty(len(moves))
        for i, move in enumerate(moves):
            work.push_code(int(move))
            values[i] = -evaluate(work.pos, self.weights)
            work.pop()
        return moves, values

    def choose(self, board) -> int | None:
        moves, values = self.move_values(board)
        if len(moves) == 0:
            return None
        best = np.flatnonzero(values == values.max())
        return int(moves[best[self.rng.randrange(len(best))]])


@njit(cache=True, nogil=True)
def ab_root(pos, w, params, depth, qs, pp_zero, root_moves, scratch):
    """(index of the best root move in root_moves, its value for the mover) of a depth-1 or -2 alpha-beta
    (usi_engine/shogi_search/alphabeta.py below each root move; qs its quiescence settings).

    Root moves are searched in the given order; a later move must be strictly better to replace the best,
    so the caller's order breaks ties."""
    alpha = -INF
    best_i = 0
    for i in range(root_moves.shape[0]):
        position.do_move(pos, root_moves[i])
        terminal, value = terminal_value(pos, params, scratch)
        if not terminal:
            value = ab_value(pos, w, params, depth - 1, -INF, -alpha, qs, pp_zero)[0]
        position.undo_move(pos)
        if -value > alpha:
            alpha = -value
            best_i = i
    return best_i, alpha


class AlphaBetaPlayer(Player):
    """Fixed-depth alpha-beta + quiescence over the engine's evaluation (module docstring)."""

    def __init__(
        self, name: str = "alphabeta", depth: int = 2, weights=None, params=None, qdepth: int = DEFAULT_MAX_DEPTH
    ):
        super().__init__(name)
        if depth not in AB_DEPTHS:
            raise ValueError(f"alpha-beta depth must be one of {AB_DEPTHS}, got {depth}")
        if qdepth < 1:
            raise ValueError(f"quiescence depth must be >= 1, got {qdepth}")
        self.depth, self.qdepth = depth, qdepth
        self.adapter = ShogiAdapter(weights, params)
        self.quiescence = (qdepth, False, 0.0, 0)  # exact captures-only quiescence (no pruning)
        self.scratch = np.zeros(MAX_MOVES, np.int32)
        self.last_value = 0.0

    def choose(self, board) -> int | None:
        moves = board.legal_move_codes()
        if len(moves) == 0:
            return None
        self.rng.shuffle(order := list(range(len(moves))))
        root_moves = moves[order].astype(np.int32)
        work = board.copy()
        index, self.last_value = ab_root(
            work.pos,
            self.adapter.weights,
            self.adapter.params,
            self.depth,
            self.quiescence,
            self.adapter.pp_zero,
            root_moves,
            self.scratch,
        )
        return int(root_moves[index])


class MCSSPlayer(Player):
    """The project's MCSS (or UCT) Searcher with a fixed per-move limit (module docstring)."""

    def __init__(
        self,
        name: str = "mcss",
        options: SearchOptions | None = None,
        limits: Limits | None = None,
        weights=None,
        params=None,
        pick: float = 0.0,
    ):
        super().__init__(name)
        self.pick = pick
        self.limits = limits or Limits(samples=1000)
        if self.limits.samples is None and self.limits.nodes is None and self.limits.time_ms is None:
            raise ValueError("an MCSS player needs a samples, nodes or time limit per move")
        self.searcher = Searcher(ShogiAdapter(weights, params), options or SearchOptions())
        self.game_seed = 0
        self.last_result = None
        self.totals = dict.fromkeys(STAT_KEYS, 0.0)

    def new_game(self, seed: int) -> None:
        super().new_game(seed)
        self.game_seed = seed
        self.searcher.clear()
        self.totals = dict.fromkeys(STAT_KEYS, 0.0)

    def choose(self, board) -> int | None:
        self.searcher.options.seed = self.game_seed * 1009 + board.ply  # a fresh, reproducible stream per move
        result = self.searcher.search(board.pos, self.limits)
        self.last_result = result
        self.totals["moves"] += 1
        for key in STAT_KEYS[1:]:
            self.totals[key] += getattr(result, key)
        if self.pick > 0 and result.best_move is not None and not is_proven(result.value):
            return self.draw_from_root_policy()
        return result.best_move

    def draw_from_root_policy(self) -> int:
        assert self.searcher.pool is not None  # after a search
        tree = self.searcher.pool.tree
        edges, p = root_policy(tree, 0, self.pick)
        i = self.rng.choices(range(len(edges)), weights=p)[0]
        return int(tree[layout.T_EMOVE][edges[i]])

    def game_stats(self) -> dict:
        """Per-move means of the searches of the current game (moves = how many searches)."""
        n = max(1.0, self.totals["moves"])
        return {k: (v if k == "moves" else round(v / n, 1)) for k, v in self.totals.items()}
