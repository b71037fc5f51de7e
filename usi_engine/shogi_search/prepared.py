"""The shogi search as the engine's options configure it: weights, move prior, game parameters, searcher.

`PreparedSearch.prepare(setup)` loads the evaluation weights (a bad file: an error message and the default
weights), the move prior (a bad file: an error message and no prior), sets the game parameters and the root
mate guard on one ShogiAdapter, compiles (or loads from numba's cache) the rules kernels and the mate solver,
builds the Searcher and warms it up with three tiny searches (the helper-thread kernel too when the options
give the search helper threads); each of the three kernel groups (rules, mate, search) is timed for the
caller's report (numba_cache.measured; the groups: usi_engine/warmup.py). A later `prepare` redoes only what
changed: a new weight file or move prior is loaded, a change of the search options builds a new Searcher, and
only then is the search warmed up again. `SearchSetup` is what it depends on (the engine maps its USI options
to it).

Heavy modules (numpy, numba, the rules core, the search) are imported at the first `prepare`, so that the
protocol front-end answers its handshake at once.
"""

from __future__ import annotations

import gc
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from usi_engine.numba_cache import Report, measured

if TYPE_CHECKING:
    from usi_engine.search.result import SearchResult
    from usi_engine.search.searcher import Searcher

    from .game import ShogiAdapter
    from .mate import MateSolver

WARMUP_SAMPLES = 64
WARMUP_MS = 2000.0


@dataclass(frozen=True)
class SearchSetup:
    """What the prepared search is made of."""

    eval_file: str | None  # weight file (None: the shipped weights)
    move_prior: str  # MovePriorFile: empty = the shipped file, `none` = no prior, else a path
    search: dict  # SearchOptions fields
    params: dict  # make_params keywords (the game parameters)
    guard_ply: int  # root mate guard depth (0: no guard)
    guard_nodes: int  # ... and its node budget


class PreparedSearch:
    """The searcher, its ShogiAdapter and the mate solver; they exist after the first `prepare`."""

    def __init__(self) -> None:
        self.searcher: Searcher | None = None
        self.adapter: ShogiAdapter | None = None
        self.mate_solver: MateSolver | None = None
        self.lock = threading.Lock()  # preparation
        self.search_lock = threading.Lock()  # one Searcher.search at a time
        self._search_key: tuple | None = None
        self._weights_path: str | None = None
        self._move_prior_option: str | None = None  # the MovePriorFile value of the loaded prior
        self._ready = False

    def prepare(self, setup: SearchSetup, error: Callable[[str], None], report: Report | None = None) -> None:
        """Import, load weights and compile (first prepare), and rebuild the searcher on option changes; a
        file that cannot be loaded is reported through `error` (and replaced by the default), each kernel
        group made ready through `report`."""
        with self.lock:
            self._prepare_rules(report)
            self._load_adapter(setup, error)
            key = tuple(sorted(setup.search.items()))
            if self.searcher is None or key != self._search_key:
                from usi_engine.search.searcher import Searcher
                from usi_engine.search.settings import SearchOptions

                self.searcher = Searcher(self.adapter, SearchOptions(**setup.search))
                self._search_key = key
                self._ready = False
            if not self._ready:
                with measured("search", report):
                    self._warm_search()
                self._ready = True
                gc.collect()
                gc.freeze()  # the ~10^5 objects of numba's compiler stay out of later collections:
                # a full collection over them holds the GIL ~0.2 s (a late bestmove)

    def prepare_rules(self) -> None:
        """The rules kernels and the mate solver only (what a mate search needs)."""
        with self.lock:
            self._prepare_rules(None)

    def _prepare_rules(self, report: Report | None) -> None:
        """Compile (or load) the rules kernels and the mate solver; allocate the solver's table once."""
        if self.mate_solver is None:
            from usi_engine.shogi import board

            from . import mate

            with measured("rules", report):
                board.warm_up()
            with measured("mate", report):
                solver = mate.MateSolver()
                mate.warm_up(solver)
            self.mate_solver = solver

    def _load_adapter(self, setup: SearchSetup, error: Callable[[str], None]) -> None:
        """Weights (EvalFile; a bad file -> error message and the default weights) and game params."""
        from usi_engine.shogi_eval.evalfile import load_weights

        from .game import ShogiAdapter, make_params

        path = setup.eval_file
        if self.adapter is None or path != self._weights_path:
            try:
                weights = load_weights(path)
            except (ValueError, OSError) as e:
                error(f"EvalFile {path}: {e}; using the default weights")
                weights = load_weights(None)
            self._weights_path = path
            if self.adapter is None:
                self.adapter = ShogiAdapter(weights)
            else:
                self.adapter.weights = weights
            self._ready = False
        self._load_move_prior(setup.move_prior, error)
        self.adapter.params = make_params(**setup.params)
        self.adapter.root_verifier = None
        if setup.guard_ply:
            from .guard import RootMateGuard

            assert self.mate_solver is not None  # made by _prepare_rules
            self.adapter.root_verifier = RootMateGuard(
                self.mate_solver, self.adapter.params, setup.guard_ply, setup.guard_nodes
            )

    def _load_move_prior(self, value: str, error: Callable[[str], None]) -> None:
        """The move prior progressive widening orders moves by (MovePriorFile: empty = the shipped file, none =
        no prior; a bad file -> error message and no prior, so every child enters at once)."""
        from .moveprior import option_model

        assert self.adapter is not None  # made by _load_adapter
        if value == self._move_prior_option:
            return
        try:
            self.adapter.move_model = option_model(value)
        except (ValueError, OSError) as e:
            error(f"MovePriorFile {value}: {e}; no move prior (every child enters at once)")
            self.adapter.move_model = None
        self._move_prior_option = value

    def set_draw_value(self, for_black: float) -> None:
        """The value of a repetition draw from Black's view (YaneuraOu's DrawValue*, for the colour we play)."""
        from .params import P_DRAW_FOR_BLACK

        assert self.adapter is not None  # loaded by prepare
        self.adapter.params[P_DRAW_FOR_BLACK] = for_black

    def _warm_search(self) -> None:
        """Compile the search kernels (or load them from numba's cache) with three tiny searches: the first
        compiles the sample kernel (a compile outlasts its time limit, so it may end before its first sample),
        the second, afresh, leaves a tree, and the third, after a move, reuses it, so that tree reuse (reroot:
        child_of, collect_probable, rebuild_table) is compiled here and not in a timed move."""
        from usi_engine.search.settings import Limits
        from usi_engine.shogi import Board

        board = Board()
        limits = Limits(samples=WARMUP_SAMPLES, time_ms=WARMUP_MS)
        searcher = self.searcher
        assert searcher is not None  # built by prepare
        with self.search_lock:
            searcher.search(board.pos, limits)
            searcher.clear()
            result = searcher.search(board.pos, limits)
            if result.best_move_str is not None:
                board.push_usi(result.best_move_str)
                searcher.search(board.pos, limits)
            searcher.clear()

    def timed_search(self, seconds: float) -> SearchResult:
        """Search the start position for `seconds` with a fresh tree (a benchmark of the prepared search)."""
        from usi_engine.search.settings import Limits
        from usi_engine.shogi import Board

        searcher = self.searcher
        assert searcher is not None  # built by prepare
        with self.search_lock:
            result = searcher.search(Board().pos, Limits(time_ms=seconds * 1000.0))
        searcher.clear()
        return result
