"""The thread of one `go`: its deadline, the watchdog that ends its search, and its single best move.

Each `go` owns a `GoState` and runs in its own `GoThread` (`run_go`, or `run_mate` for `go mate`), which
waits for the previous go's thread (one search at a time), then searches and reports `SearchInfo`. The
deadline comes from the time plan (usi_engine/timeman.py), counted from the go or, when pondering, from the
`ponderhit`. A watchdog thread per go ends the search at its deadline or on `stop`, re-issuing
`Searcher.stop()` until the go thread ends (a stop that arrives before the search has started is not lost),
and answers with the latest 0.1 s snapshot of the search when the search does not return in time (one
expansion can take ~100 ms of CPU; docs/usi.md).

One best move per `go` (a GUI reads a second as a move): `GoThread.answer()` is the only way to report a
best move; it reports once under the state's lock and ignores later calls (info after it is dropped). In
ponder and infinite mode the answer is held until `stop`, `ponderhit` or `gameover` (even for mates,
declarations and resignations, which are found before searching). Every move reported is checked against
the position's legal moves; a search that fails or returns nothing legal is answered with the fallback
move: the best move of the latest snapshot, else the first legal move, else resign.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from . import timeman
from .clock import Clocks
from .engine_types import EngineCallbacks, GoLimits, MateAnswer, PvLine, Score, SearchInfo
from .options import OptionValues

if TYPE_CHECKING:
    from .search.result import SearchResult
    from .search.searcher import Searcher
    from .shogi import Board
    from .shogi_search.prepared import PreparedSearch

WATCHDOG_POLL = 0.005
SNAPSHOT_GRACE = 0.04  # s after stop/deadline: answer with the latest snapshot's move if the search
FALLBACK_AFTER_STOP = 0.15  # has not returned; without a snapshot wait this long, then any legal move
SNAPSHOT_INTERVAL = 0.1  # s between search snapshots (fallback move; PV checks when streaming)
MIN_PV_INTERVAL = 0.05
ROOT_MATE_PLY = 7  # mates this short are solved before the search ...
ROOT_MATE_SECONDS = 0.1  # ... within this time
ROOT_MATE_SHARE = 0.1  # ... and at most this share of the move's time


@dataclass
class GoState:
    """One `go` from start to its single best move."""

    limits: GoLimits
    board: Board | None  # a copy of the position searched (None: invalid position)
    mate_ms: int | None = None  # go_mate: time limit (None: until stop)
    start: float = field(default_factory=time.perf_counter)
    deadline: float | None = None  # perf_counter time to end the search
    pondering: bool = False
    stop: threading.Event = field(default_factory=threading.Event)
    hold: threading.Event = field(default_factory=threading.Event)  # set = the best move may be reported
    done: threading.Event = field(default_factory=threading.Event)  # set once the best move is reported
    stop_time: float | None = None
    legal: list = field(default_factory=list)
    last: SearchResult | None = None  # latest snapshot of the search
    searcher: Searcher | None = None  # the Searcher running this go (for the watchdog's stop)
    finished: threading.Event = field(default_factory=threading.Event)  # set when the go thread ends
    lock: threading.Lock = field(default_factory=threading.Lock)

    def release(self) -> None:
        """stop / gameover: end the search and allow the answer."""
        if self.stop_time is None:
            self.stop_time = time.perf_counter()
        self.stop.set()
        self.hold.set()


@dataclass
class Answer:
    """A best move decided by the engine (move "resign" / "win" included) and its ponder move."""

    move: str
    ponder: str | None = None


class GoThread:
    """What one go does in its thread: decide the best move (or the mate answer) and report it once."""

    def __init__(
        self,
        state: GoState,
        callbacks: EngineCallbacks,
        options: OptionValues,
        search: PreparedSearch,
        prepare: Callable[[], None],
        position_error: str | None,
    ):
        self.state = state
        self.callbacks = callbacks
        self.options = options
        self.search = search
        self.prepare = prepare  # the engine's preparation of `search` (normally done before the go)
        self.position_error = position_error  # why there is no position (board None)

    def _error(self, text: str) -> None:
        self.callbacks.message("error: " + text)

    # --- commands of the running go ----------------------------------------------------------------
    def stop(self) -> None:
        """End the go; its search is told at once (the watchdog repeats it)."""
        state = self.state
        state.release()
        if state.searcher is not None:
            state.searcher.stop()

    def ponderhit(self, clocks: Clocks | None) -> None:
        """The predicted move was played: the clock starts now (with new clocks if given)."""
        state = self.state
        if not state.pondering:
            return
        if clocks is not None:
            state.limits.clocks = clocks
        state.pondering = False
        state.limits.ponder = False
        self.set_deadline(time.perf_counter())
        state.hold.set()

    # --- the go thread -------------------------------------------------------------------------------
    def run_go(self, previous: threading.Thread | None) -> None:
        """The go thread: decide and report the best move; `previous` is the thread of the go before."""
        try:
            self.answer(self._decide(previous))
        finally:
            self.state.finished.set()

    def _decide(self, previous: threading.Thread | None) -> Answer:
        """The best move of a go (after the hold is released; legal or resign/win)."""
        state = self.state
        try:
            answer = self._root_answer()
            if answer is None:
                self.set_deadline(state.start)
                threading.Thread(target=self._watchdog, daemon=True).start()
                if previous is not None:
                    previous.join()  # one search at a time; the watchdog answers if this is late
                self.prepare()  # normally done by prepare(); the watchdog covers a late one
                answer = self._root_mate() or self._search()
        except Exception as e:  # never die without answering
            self._error(f"search failed: {type(e).__name__}: {e}")
            answer = self._fallback()
        state.hold.wait()
        if answer.move not in ("resign", "win") and answer.move not in state.legal:
            self._error(f"{answer.move} is not legal here; playing a legal move")
            answer = self._fallback()
        return answer

    def _root_answer(self) -> Answer | None:
        """The best move decided without searching (invalid position, no legal move, declaration)."""
        state = self.state
        board = state.board
        if board is None:
            self._error(f"{self.position_error or 'no position'}; resigning")
            return Answer("resign")
        state.legal = board.legal_moves()
        if not state.legal:
            return Answer("resign")
        rule = self.options["EnteringKingRule"]
        if rule == "TryRule":
            move = board.try_rule_move()
            if move is not None:
                self.callbacks.message(f"declaration: try rule move {move}")
                return Answer(move)
        elif rule != "NoEnteringKing" and board.declaration_result(rule) == "win":
            points, pieces = board.declaration_points()
            self.callbacks.message(f"declaration: {points} points, {pieces} pieces in camp")
            return Answer("win")
        return None

    def set_deadline(self, start: float) -> None:
        """Deadline from the time plan counted from `start` (none while pondering or in infinite mode)."""
        state = self.state
        limits = state.limits
        if state.board is None:
            return
        if limits.ponder or limits.infinite:
            state.deadline = None
            return
        o = self.options
        settings = timeman.TimeSettings(
            network_delay=o["NetworkDelay"],
            network_delay2=o["NetworkDelay2"],
            minimum_thinking_time=o["MinimumThinkingTime"],
            slow_mover=o["SlowMover"],
            ponder=o["USI_Ponder"],
            max_moves_to_draw=o["MaxMovesToDraw"],
        )
        limited = bool(limits.nodes or limits.depth or o["NodesLimit"] or o["DepthLimit"])
        seconds = timeman.stop_seconds(limits.clocks.of(state.board.turn), settings, limited, state.board.ply)
        state.deadline = None if seconds is None else start + seconds

    def _watchdog(self) -> None:
        """Until the go thread ends: stop its search at the deadline or on stop (re-issued, so a search
        that starts late stops too), and answer with the best move known if the search has not
        returned SNAPSHOT_GRACE (with a snapshot) or FALLBACK_AFTER_STOP (without) after that."""
        state = self.state
        while not state.finished.is_set():
            now = time.perf_counter()
            if state.deadline is not None and now >= state.deadline and state.stop_time is None:
                state.stop_time = now
                state.stop.set()
            if state.stop.is_set():
                if state.searcher is not None:
                    state.searcher.stop()
                grace = SNAPSHOT_GRACE if state.last is not None else FALLBACK_AFTER_STOP
                stopped_at = state.stop_time if state.stop_time is not None else now
                if not state.done.is_set() and state.hold.is_set() and now - stopped_at > grace:
                    self.callbacks.message("search did not stop in time; answering with the best move so far")
                    self.answer(self._fallback(), state.last)
            time.sleep(WATCHDOG_POLL)

    def _root_mate(self) -> Answer | None:
        """`M [ponder P]` of a mate of at most ROOT_MATE_PLY plies proved before the search within
        min(ROOT_MATE_SECONDS, ROOT_MATE_SHARE of the move's time); None otherwise."""
        state = self.state
        budget = ROOT_MATE_SECONDS
        if state.deadline is not None:
            budget = min(budget, ROOT_MATE_SHARE * max(0.0, state.deadline - time.perf_counter()))
        solver = self.search.mate_solver
        assert solver is not None and state.board is not None  # prepared; a valid position
        result = solver.solve(state.board, budget, state.stop, max_ply=ROOT_MATE_PLY)
        if result.status != "mate":
            return None
        line = result.line
        limit = self.options["MaxMovesToDraw"]
        if limit and state.board.move_number - 1 + len(line) - 1 >= limit:
            return None  # the game is drawn before the mate completes: leave it to the search
        self.callbacks.info(
            SearchInfo(depth=len(line), nodes=result.nodes, lines=(PvLine(Score(mate=len(line)), tuple(line)),))
        )
        return Answer(line[0], line[1] if len(line) > 1 else None)

    def _search(self) -> Answer:
        """The searched best move (resign below -ResignValue), with its ponder move."""
        from .search.settings import Limits

        state = self.state
        limits, o = state.limits, self.options
        nodes = limits.nodes or o["NodesLimit"] or None
        depth = limits.depth or o["DepthLimit"] or None
        unlimited = limits.ponder or limits.infinite
        time_ms = None
        if state.deadline is not None:
            time_ms = max(1.0, (state.deadline - time.perf_counter()) * 1000.0)
        search_limits = Limits(time_ms=time_ms, nodes=nodes, depth=depth, infinite=unlimited)
        board, searcher = state.board, self.search.searcher
        assert board is not None and searcher is not None  # a valid position (_root_answer) and a prepared engine
        self.search.set_draw_value(o["DrawValueBlack"] if board.turn == 0 else -o["DrawValueWhite"])
        streaming = limits.infinite or o["ConsiderationMode"] or o["PvInterval"] == 0
        reporter = InfoReporter(self, streaming, max(MIN_PV_INTERVAL, o["PvInterval"] / 1000.0))
        with self.search.search_lock:
            state.searcher = searcher
            if state.stop.is_set():  # stopped before it could start (the watchdog may
                return self._fallback()  # already have answered)
            result = searcher.search(
                board.pos, search_limits, on_info=reporter, multipv=o["MultiPV"], info_interval=SNAPSHOT_INTERVAL
            )
        state.last = result
        if result.best_move_str is None:  # root not expanded in time: legal moves exist
            return self._fallback()
        reporter.emit(result)
        if result.value <= -o["ResignValue"]:
            return Answer("resign")
        return self._with_ponder(result)

    def _with_ponder(self, result: SearchResult) -> Answer:
        """`M [ponder P]` after the final legality check of M (and of P after M)."""
        state = self.state
        best = result.best_move_str
        if best is None or best not in state.legal:
            self._error(f"search returned illegal move {best}; playing a legal one")
            return self._fallback()
        if len(result.pv_str) >= 2 and state.board is not None:
            after = state.board.copy()
            after.push_usi(best)
            if after.is_legal(result.pv_str[1]):
                return Answer(best, result.pv_str[1])
        return Answer(best)

    def _fallback(self) -> Answer:
        """Best legal move known so far (last info), else the first legal move, else resign."""
        state = self.state
        last = state.last
        if last is not None and last.best_move_str is not None and last.best_move_str in state.legal:
            return Answer(last.best_move_str)
        return Answer(state.legal[0] if state.legal else "resign")

    def info(self, result: SearchResult) -> SearchInfo | None:
        """The report of a search result (None before the search is prepared)."""
        adapter = self.search.adapter
        return None if adapter is None else SearchInfo.from_result(result, adapter.move_to_str)

    def answer(self, answer: Answer, final: SearchResult | None = None) -> None:
        """Report the best move once per go (the one-bestmove gate, docs/usi.md), after the info of `final`
        if given."""
        state = self.state
        with state.lock:
            if state.done.is_set():
                return
            info = None if final is None else self.info(final)
            if info is not None:
                self.callbacks.info(info)
            self.callbacks.bestmove(answer.move, answer.ponder)
            state.done.set()

    # --- go mate -------------------------------------------------------------------------------------
    def run_mate(self, previous: threading.Thread | None) -> None:
        """The mate search thread: one MateAnswer (stop -> timeout)."""
        state = self.state
        answer = MateAnswer("nomate")
        try:
            if previous is not None:
                previous.join()
            if state.board is None:
                self._error(self.position_error or "no position")
            else:
                self.search.prepare_rules()
                limit = None if state.mate_ms is None else state.mate_ms / 1000.0
                solver = self.search.mate_solver
                assert solver is not None  # made by prepare_rules
                result = solver.solve(state.board, limit, state.stop)
                self.callbacks.info(SearchInfo(time_ms=max(1, int(result.seconds * 1000)), nodes=result.nodes))
                answer = MateAnswer(result.status, tuple(result.line) if result.status == "mate" else ())
        except Exception as e:
            self._error(f"mate search failed: {type(e).__name__}: {e}")
            answer = MateAnswer("timeout")
        with state.lock:
            if not state.done.is_set():
                self.callbacks.mate(answer)
                state.done.set()


class InfoReporter:
    """Receives a snapshot of the search every SNAPSHOT_INTERVAL (kept as the watchdog's fallback move)
    and reports it: every `interval` s, or on every change of PV or score when streaming."""

    def __init__(self, go: GoThread, streaming: bool, interval: float):
        self.go, self.streaming, self.interval = go, streaming, interval
        self.last_key: tuple | None = None
        self.next_report = time.perf_counter() + interval

    def __call__(self, result: SearchResult) -> None:
        """A snapshot of the running search."""
        self.go.state.last = result
        if self.streaming:
            key = (tuple(result.pv_str), round(result.value))
            if key == self.last_key:
                return
            self.last_key = key
        else:
            now = time.perf_counter()
            if now < self.next_report:
                return
            self.next_report = now + self.interval
        self.emit(result)

    def emit(self, result: SearchResult) -> None:
        """Report `result` unless the go has already answered."""
        state = self.go.state
        with state.lock:
            if state.done.is_set():
                return
            info = self.go.info(result)
            if info is not None:
                self.go.callbacks.info(info)
