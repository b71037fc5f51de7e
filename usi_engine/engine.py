"""The shogi engine: game state, options and the life of each search, as a typed API that speaks no text.

The protocol front-end (usi.py) parses commands into typed calls (`set_position`, `go` with `GoLimits`,
`go_mate`, `stop`, `ponderhit`, `set_option`, `prepare`, `new_game`, `gameover`) and turns what the engine
reports through `EngineCallbacks` (search info, best move, mate answers, messages) into protocol lines; the
types are in usi_engine/engine_types.py.

This module is the facade: it keeps the position and the options and hands the work on. The search
prepared from the options (weights, move prior, game parameters, searcher) is a `PreparedSearch`
(usi_engine/shogi_search/prepared.py). Each `go` runs in its own thread, a `GoThread`
(usi_engine/gothread.py: the deadline from the time plan, the watchdog, the one best move per go). The
protocol reader calls the public methods and never waits for a search.

Invalid positions: after `set_position` fails (bad SFEN, illegal or malformed move) or `clear_position`,
the engine keeps NO position, and a later `go` answers `resign` with an error message instead of a move
for a position the GUI does not have.

Heavy modules (numpy, numba, the rules core, the search) are imported lazily, at the first `prepare`,
`set_position` or `go`, so the protocol answers its handshake at once.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable

from .clock import Clocks
from .engine_types import BenchResult, EngineCallbacks, GoLimits
from .gothread import GoState, GoThread
from .options import OptionValues, game_params, search_options
from .shogi_search.prepared import PreparedSearch, SearchSetup

if TYPE_CHECKING:
    from .numba_cache import GroupReport
    from .shogi import Board


def search_setup(o: OptionValues) -> SearchSetup:
    """What the prepared search is made of under the option values `o`."""
    return SearchSetup(
        eval_file=o["EvalFile"] or None,
        move_prior=o["MovePriorFile"],
        search=search_options(o),
        params=game_params(o),
        guard_ply=o["MateGuardPly"],
        guard_nodes=o["MateGuardNodes"],
    )


class Engine:
    """State and commands of the shogi engine; reports through `callbacks`."""

    def __init__(self, callbacks: EngineCallbacks, options: OptionValues | None = None):
        self.callbacks = callbacks
        self.options = options or OptionValues()
        self.board: Board | None = None
        self.position_error: str | None = None
        self.current: GoThread | None = None  # the latest go
        self.thread: threading.Thread | None = None  # ... and its thread
        self.search = PreparedSearch()
        for err in self.options.errors:
            self._error(err)

    def _error(self, text: str) -> None:
        self.callbacks.message("error: " + text)

    @property
    def searching(self) -> bool:
        """A go has not answered yet."""
        return self.current is not None and not self.current.state.done.is_set()

    # --- commands ------------------------------------------------------------------------------
    def set_option(self, name: str, value: str | None) -> None:
        """Set an option from its text value; ValueError (nothing changed) if the name or value is bad."""
        self.options.set(name, value)

    def prepare(self) -> None:
        """Load and compile everything (blocks); returns at once during a search."""
        if not self.searching:
            self._prepare()

    def new_game(self) -> None:
        """Forget the search tree of the last game (not during a search)."""
        if self.search.searcher is not None and not self.searching:
            self.search.searcher.clear()

    def set_position(self, sfen: str | None, moves: list[str]) -> None:
        """The position after `moves` from `sfen` (None: the start position). ValueError on a bad SFEN or an
        illegal or malformed move; the engine then keeps no position (see `clear_position`)."""
        from .shogi import Board

        self.board = None
        board = Board() if sfen is None else Board(sfen)
        for i, move in enumerate(moves):
            try:
                board.push_usi(move)
            except ValueError:
                raise ValueError(f"move {i + 1} {move!r} is illegal or malformed in {board.sfen()}") from None
        self.board = board
        self.position_error = None

    def clear_position(self, reason: str) -> None:
        """Keep no position; a later go resigns and reports `reason`."""
        self.board = None
        self.position_error = reason

    def position(self) -> tuple[str, list[str]]:
        """SFEN and move history of the current position; ValueError when there is none."""
        if self.board is None:
            raise ValueError(self.position_error or "no position")
        return self.board.sfen(), self.board.move_history()

    def go(self, limits: GoLimits) -> None:
        """Start a search thread and return at once (the reader must stay free for stop / isready)."""
        go = self._new_go(limits)
        if not (limits.ponder or limits.infinite):
            go.state.hold.set()
        self._start(go, go.run_go)

    def go_mate(self, time_ms: int | None) -> None:
        """Start a mate search (`time_ms` None: until stop); the answer comes through `callbacks.mate`."""
        go = self._new_go(GoLimits(), time_ms)
        go.state.hold.set()
        self._start(go, go.run_mate)

    def _new_go(self, limits: GoLimits, mate_ms: int | None = None) -> GoThread:
        """A go on a copy of the current position."""
        board = None if self.board is None else self.board.copy()
        state = GoState(limits, board, mate_ms=mate_ms, pondering=limits.ponder)
        return GoThread(state, self.callbacks, self.options, self.search, self._prepare, self.position_error)

    def _start(self, go: GoThread, target: Callable[[threading.Thread | None], None]) -> None:
        """Release the running go (its own threads still report its one best move, without blocking the
        reader) and start `target` in the new go's thread; it waits for the previous thread before it searches."""
        if self.current is not None:
            self.current.state.release()
        previous = self.thread
        self.current = go
        self.thread = threading.Thread(target=target, args=(previous,), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """End the running go; its search is told at once (the watchdog repeats it)."""
        if self.current is not None:
            self.current.stop()

    def ponderhit(self, clocks: Clocks | None = None) -> None:
        """The predicted move was played: our clock starts now (with new clocks if given)."""
        if self.current is not None:
            self.current.ponderhit(clocks)

    def gameover(self) -> None:
        """Acts as `stop` (GUIs may send it during ponder without stop); the best move is still reported."""
        self.stop()

    def quit(self) -> None:
        """Stop the running go before the process ends."""
        self.stop()

    def bench(self, seconds: float = 3.0) -> BenchResult:
        """Search the start position for `seconds` and measure the speed."""
        self._prepare()
        result = self.search.timed_search(seconds)
        nps = int(result.nodes * 1000 / max(1.0, result.time_ms))
        return BenchResult(result.nodes, result.samples, int(result.time_ms), nps, self.options["Threads"])

    # --- preparation --------------------------------------------------------------------------------
    def _prepare(self) -> None:
        """Bring the prepared search up to date with the options (blocks; compiles on the first call)."""
        self.search.prepare(search_setup(self.options), self._error, self._compiled)

    def _compiled(self, report: GroupReport) -> None:
        """A message for each kernel group the preparation compiled (not for groups loaded from the cache)."""
        if report.compiled:
            self.callbacks.message(f"compiled {report.group} kernels: {report.compiled} in {report.seconds:.1f} s")
