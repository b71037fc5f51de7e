"""The shogi engine: game state, options and the life of each search, as a typed API that speaks no text.

The protocol front-end (usi.py) parses commands into typed calls (`set_position`, `go` with `GoLimits`,
`go_mate`, `stop`, `ponderhit`, `set_option`, `prepare`, `new_game`, `gameover`) and turns what the engine
reports through `EngineCallbacks` (search info, best move, mate answers, messages) into protocol lines; the
types are in usi_engine/engine_types.py.

Threads: the protocol reader calls the public methods and never waits for a search. Each `go` runs in its
own thread (`_run_go`), which waits for the previous go's thread (one search at a time), then calls
`Searcher.search` and reports `SearchInfo`; a watchdog thread per `go` ends the search at its deadline or
on `stop`, re-issuing `Searcher.stop()` until the go thread ends (a stop that arrives before the search
has started is not lost), and answers with the latest 0.1 s snapshot of the search when the search does
not return in time (one expansion can take ~100 ms of CPU; docs/usi.md).

One best move per `go` (a GUI reads a second as a move): every `go` owns a `GoState`; `_answer()` is the only way to
report a best move; it reports once under a lock and ignores later calls (info after it is dropped). In
ponder and infinite mode the answer is held until `stop`, `ponderhit` or `gameover` (even for mates,
declarations and resignations, which are found before searching).

Invalid positions: after `set_position` fails (bad SFEN, illegal or malformed move) or `clear_position`,
the engine keeps NO position, and a later `go` answers `resign` with an error message instead of a move
for a position the GUI does not have.

Heavy modules (numpy, numba, the rules core, the search) are imported lazily, at the first `prepare`,
`set_position` or `go`, so the protocol answers its handshake at once.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import timeman
from .engine_types import BenchResult, EngineCallbacks, GoLimits, MateAnswer, PvLine, Score, SearchInfo, Times
from .options import OptionValues, game_params, search_options

if TYPE_CHECKING:
    from .search.searcher import SearchResult, Searcher
    from .shogi import Board
    from .shogi_search.game import ShogiAdapter
    from .shogi_search.mate import MateSolver

WATCHDOG_POLL = 0.005
SNAPSHOT_GRACE = 0.04  # s after stop/deadline: answer with the latest snapshot's move if the search
FALLBACK_AFTER_STOP = 0.15  # has not returned; without a snapshot wait this long, then any legal move
SNAPSHOT_INTERVAL = 0.1  # s between search snapshots (fallback move; PV checks when streaming)
MIN_PV_INTERVAL = 0.05
WARMUP_SAMPLES = 64
WARMUP_MS = 2000.0
BARE_GO_SECONDS = 5.0  # a `go` without clock or limit thinks this long
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

    def release(self):
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


class Engine:
    """State and commands of the shogi engine; reports through `callbacks`."""

    def __init__(self, callbacks: EngineCallbacks, options: OptionValues | None = None):
        self.callbacks = callbacks
        self.options = options or OptionValues()
        self.board: Board | None = None
        self.position_error: str | None = None
        self.current: GoState | None = None
        self.thread: threading.Thread | None = None
        self.searcher: Searcher | None = None  # these three exist after the first prepare
        self.adapter: ShogiAdapter | None = None
        self.mate_solver: MateSolver | None = None
        self._search_key: tuple | None = None
        self._weights_path: str | None = None
        self._move_prior_option: str | None = None  # the MovePriorFile value of the loaded prior
        self._ready = False
        self._lock = threading.Lock()  # preparation (prepare, a go without prepare)
        self._search_lock = threading.Lock()  # one Searcher.search at a time
        for err in self.options.errors:
            self._error(err)

    def _error(self, text: str) -> None:
        self.callbacks.message("error: " + text)

    @property
    def searching(self) -> bool:
        return self.current is not None and not self.current.done.is_set()

    # --- commands ------------------------------------------------------------------------------
    def set_option(self, name: str, value: str | None) -> None:
        """Set an option from its text value; ValueError (nothing changed) if the name or value is bad."""
        opt = self.options.set(name, value)
        if opt.name == "EvalFile":
            self._ready = False

    def prepare(self) -> None:
        """Load and compile everything (blocks); returns at once during a search."""
        if not self.searching:
            self._prepare()

    def new_game(self) -> None:
        if self.searcher is not None and not self.searching:
            self.searcher.clear()

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
        state = self._new_state(limits)
        if not (limits.ponder or limits.infinite):
            state.hold.set()
        self._start(state, self._run_go)

    def go_mate(self, time_ms: int | None) -> None:
        """Start a mate search (`time_ms` None: until stop); the answer comes through `callbacks.mate`."""
        state = self._new_state(GoLimits(), time_ms)
        state.hold.set()
        self._start(state, self._run_mate)

    def _new_state(self, limits: GoLimits, mate_ms: int | None = None) -> GoState:
        board = None if self.board is None else self.board.copy()
        return GoState(limits, board, mate_ms=mate_ms, pondering=limits.ponder)

    def _start(self, state: GoState, target) -> None:
        previous = self._release_current()
        self.current = state
        self.thread = threading.Thread(target=target, args=(state, previous), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """End the running go; its search is told at once (the watchdog repeats it)."""
        state = self.current
        if state is not None:
            state.release()
            if state.searcher is not None:
                state.searcher.stop()

    def ponderhit(self, times: Times | None = None) -> None:
        """The predicted move was played: our clock starts now (with new times if given)."""
        state = self.current
        if state is None or not state.pondering:
            return
        if times is not None:
            state.limits.times = times
        state.pondering = False
        state.limits.ponder = False
        self._set_deadline(state, time.perf_counter())
        state.hold.set()

    def gameover(self) -> None:
        """Acts as `stop` (GUIs may send it during ponder without stop); the best move is still reported."""
        self.stop()

    def quit(self) -> None:
        self.stop()

    # --- go: life of one search ----------------------------------------------------------------
    def _release_current(self) -> threading.Thread | None:
        """Release the running go (its own threads still report its one best move, without blocking the
        reader); returns its thread, which the next go waits for before it searches."""
        if self.current is not None:
            self.current.release()
        return self.thread

    def _run_go(self, state: GoState, previous: threading.Thread | None) -> None:
        try:
            self._answer(state, self._decide(state, previous))
        finally:
            state.finished.set()

    def _decide(self, state: GoState, previous: threading.Thread | None) -> Answer:
        """The best move of a go (after the hold is released; legal or resign/win)."""
        try:
            answer = self._root_answer(state)
            if answer is None:
                self._set_deadline(state, state.start)
                threading.Thread(target=self._watchdog, args=(state,), daemon=True).start()
                if previous is not None:
                    previous.join()  # one search at a time; the watchdog answers if this is late
                self._prepare()  # normally done by prepare(); the watchdog covers a late one
                answer = self._root_mate(state) or self._search(state)
        except Exception as e:  # never die without answering
            self._error(f"search failed: {type(e).__name__}: {e}")
            answer = self._fallback(state)
        state.hold.wait()
        if answer.move not in ("resign", "win") and answer.move not in state.legal:
            self._error(f"{answer.move} is not legal here; playing a legal move")
            answer = self._fallback(state)
        return answer

    def _root_answer(self, state: GoState) -> Answer | None:
        """The best move decided without searching (invalid position, no legal move, declaration)."""
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

    def _set_deadline(self, state: GoState, start: float) -> None:
        """Deadline from the time plan (none while pondering or in infinite mode)."""
        limits, times = state.limits, state.limits.times
        if state.board is None:
            return
        if limits.ponder or limits.infinite:
            state.deadline = None
            return
        black = state.board.turn == 0
        clock = timeman.SideClock(
            time=times.btime if black else times.wtime,
            inc=times.binc if black else times.winc,
            byoyomi=times.byoyomi,
            movetime=limits.movetime,
            ply=state.board.ply,
        )
        if not (clock.time or clock.inc or clock.byoyomi or clock.movetime):
            state.deadline = None  # go nodes / depth / bare go: limits only
            if not (limits.nodes or limits.depth or self.options["NodesLimit"] or self.options["DepthLimit"]):
                state.deadline = start + BARE_GO_SECONDS
            return
        o = self.options
        plan = timeman.plan(
            clock,
            timeman.TimeSettings(
                network_delay=o["NetworkDelay"],
                network_delay2=o["NetworkDelay2"],
                minimum_thinking_time=o["MinimumThinkingTime"],
                slow_mover=o["SlowMover"],
                ponder=o["USI_Ponder"],
                max_moves_to_draw=o["MaxMovesToDraw"],
            ),
        )
        state.deadline = start + plan.stop_ms / 1000.0

    def _watchdog(self, state: GoState) -> None:
        """Until the go thread ends: stop its search at the deadline or on stop (re-issued, so a search
        that starts late stops too), and answer with the best move known if the search has not
        returned SNAPSHOT_GRACE (with a snapshot) or FALLBACK_AFTER_STOP (without) after that."""
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
                    self._answer(state, self._fallback(state), state.last)
            time.sleep(WATCHDOG_POLL)

    def _search(self, state: GoState) -> Answer:
        from .search.searcher import Limits

        limits, o = state.limits, self.options
        nodes = limits.nodes or o["NodesLimit"] or None
        depth = limits.depth or o["DepthLimit"] or None
        unlimited = limits.ponder or limits.infinite
        time_ms = None
        if state.deadline is not None:
            time_ms = max(1.0, (state.deadline - time.perf_counter()) * 1000.0)
        search_limits = Limits(time_ms=time_ms, nodes=nodes, depth=depth, infinite=unlimited)
        board, searcher = state.board, self.searcher
        assert board is not None and searcher is not None  # a valid position (_root_answer) and a prepared engine
        self._set_draw_value(board.turn)
        streaming = limits.infinite or o["ConsiderationMode"] or o["PvInterval"] == 0
        reporter = _InfoReporter(self, state, streaming, max(MIN_PV_INTERVAL, o["PvInterval"] / 1000.0))
        with self._search_lock:
            state.searcher = searcher
            if state.stop.is_set():  # stopped before it could start (the watchdog may
                return self._fallback(state)  # already have answered)
            result = searcher.search(
                board.pos, search_limits, on_info=reporter, multipv=o["MultiPV"], info_interval=SNAPSHOT_INTERVAL
            )
        state.last = result
        if result.best_move_str is None:  # root not expanded in time: legal moves exist
            return self._fallback(state)
        reporter.emit(result)
        if result.value <= -o["ResignValue"]:
            return Answer("resign")
        return self._with_ponder(state, result)

    def _with_ponder(self, state: GoState, result: SearchResult) -> Answer:
        """`M [ponder P]` after the final legality check of M (and of P after M)."""
        best = result.best_move_str
        if best is None or best not in state.legal:
            self._error(f"search returned illegal move {best}; playing a legal one")
            return self._fallback(state)
        if len(result.pv_str) >= 2 and state.board is not None:
            after = state.board.copy()
            after.push_usi(best)
            if after.is_legal(result.pv_str[1]):
                return Answer(best, result.pv_str[1])
        return Answer(best)

    def _fallback(self, state: GoState) -> Answer:
        """Best legal move known so far (last info), else the first legal move, else resign."""
        last = state.last
        if last is not None and last.best_move_str is not None and last.best_move_str in state.legal:
            return Answer(last.best_move_str)
        return Answer(state.legal[0] if state.legal else "resign")

    def _answer(self, state: GoState, answer: Answer, final: SearchResult | None = None) -> None:
        """Report the best move once per go (the one-bestmove gate, docs/usi.md), after the info of `final`
        if given."""
        with state.lock:
            if state.done.is_set():
                return
            if final is not None and self.adapter is not None:
                self.callbacks.info(SearchInfo.from_result(final, self.adapter.move_to_str))
            self.callbacks.bestmove(answer.move, answer.ponder)
            state.done.set()

    # --- preparation ----------------------------------------------------------------------------
    def _prepare(self) -> None:
        """Import, load weights and compile (first prepare), and rebuild the searcher on option changes."""
        with self._lock:
            self._prepare_rules()
            self._load_adapter()
            settings = search_options(self.options)
            key = tuple(sorted(settings.items()))
            if self.searcher is None or key != self._search_key:
                from .search.searcher import SearchOptions, Searcher

                self.searcher = Searcher(self.adapter, SearchOptions(**settings))
                self._search_key = key
                self._ready = False
            if not self._ready:
                self._warm_search()
                self._ready = True
                gc.collect()
                gc.freeze()  # the ~10^5 objects of numba's compiler stay out of later collections:
                # a full collection over them holds the GIL ~0.2 s (a late bestmove)

    def _prepare_rules(self) -> None:
        """Compile (or load) the rules kernels and the mate solver; allocate the solver's table once."""
        if self.mate_solver is None:
            from .shogi import board
            from .shogi_search import mate

            board.warm_up()
            solver = mate.MateSolver()
            mate.warm_up(solver)
            self.mate_solver = solver

    def _load_adapter(self) -> None:
        """Weights (EvalFile; a bad file -> error message and the default weights) and game params."""
        from eval.weightfile import load_weights

        from .shogi_search.game import ShogiAdapter, make_params

        path = self.options["EvalFile"] or None
        if self.adapter is None or path != self._weights_path:
            try:
                weights = load_weights(path)
            except (ValueError, OSError) as e:
                self._error(f"EvalFile {path}: {e}; using the default weights")
                weights = load_weights(None)
            self._weights_path = path
            if self.adapter is None:
                self.adapter = ShogiAdapter(weights)
            else:
                self.adapter.weights = weights
            self._ready = False
        self._load_move_prior()
        self.adapter.params = make_params(**game_params(self.options))
        ply = self.options["MateGuardPly"]
        self.adapter.root_verifier = None
        if ply:
            from .shogi_search.guard import RootMateGuard

            assert self.mate_solver is not None  # made by _prepare_rules
            self.adapter.root_verifier = RootMateGuard(
                self.mate_solver, self.adapter.params, ply, self.options["MateGuardNodes"]
            )

    def _load_move_prior(self) -> None:
        """The move prior progressive widening orders moves by (MovePriorFile: empty = the shipped file, none =
        no prior; a bad file -> error message and no prior, so every child enters at once)."""
        from .shogi_search.moveprior import option_model

        assert self.adapter is not None  # made by _load_adapter
        value = self.options["MovePriorFile"]
        if value == self._move_prior_option:
            return
        try:
            self.adapter.move_model = option_model(value)
        except (ValueError, OSError) as e:
            self._error(f"MovePriorFile {value}: {e}; no move prior (every child enters at once)")
            self.adapter.move_model = None
        self._move_prior_option = value

    def _set_draw_value(self, turn: int) -> None:
        """Repetition value from Black's view, given the colour we play (YaneuraOu's DrawValue*)."""
        from .shogi_search.params import P_DRAW_FOR_BLACK

        o = self.options
        assert self.adapter is not None  # loaded by _prepare
        self.adapter.params[P_DRAW_FOR_BLACK] = o["DrawValueBlack"] if turn == 0 else -o["DrawValueWhite"]

    def _warm_search(self) -> None:
        """Compile the search kernels (or load them from numba's cache) with two tiny searches, the
        second after a move so that tree reuse (reroot) is compiled here and not in a timed move."""
        from .search.searcher import Limits
        from .shogi import Board

        board = Board()
        limits = Limits(samples=WARMUP_SAMPLES, time_ms=WARMUP_MS)
        searcher = self.searcher
        assert searcher is not None  # built by _prepare
        with self._search_lock:
            result = searcher.search(board.pos, limits)
            if result.best_move_str is not None:
                board.push_usi(result.best_move_str)
                searcher.search(board.pos, limits)
            searcher.clear()

    # --- go mate ----------------------------------------------------------------------------------
    def _run_mate(self, state: GoState, previous: threading.Thread | None) -> None:
        """Mate search: one MateAnswer (stop -> timeout)."""
        answer = MateAnswer("nomate")
        try:
            if previous is not None:
                previous.join()
            if state.board is None:
                self._error(self.position_error or "no position")
            else:
                with self._lock:
                    self._prepare_rules()
                limit = None if state.mate_ms is None else state.mate_ms / 1000.0
                assert self.mate_solver is not None  # made by _prepare_rules
                result = self.mate_solver.solve(state.board, limit, state.stop)
                self.callbacks.info(SearchInfo(time_ms=max(1, int(result.seconds * 1000)), nodes=result.nodes))
                answer = MateAnswer(result.status, tuple(result.line) if result.status == "mate" else ())
        except Exception as e:
            self._error(f"mate search failed: {type(e).__name__}: {e}")
            answer = MateAnswer("timeout")
        with state.lock:
            if not state.done.is_set():
                self.callbacks.mate(answer)
                state.done.set()

    def _root_mate(self, state: GoState) -> Answer | None:
        """`M [ponder P]` of a mate of at most ROOT_MATE_PLY plies proved before the search within
        min(ROOT_MATE_SECONDS, ROOT_MATE_SHARE of the move's time); None otherwise."""
        budget = ROOT_MATE_SECONDS
        if state.deadline is not None:
            budget = min(budget, ROOT_MATE_SHARE * max(0.0, state.deadline - time.perf_counter()))
        assert self.mate_solver is not None and state.board is not None  # prepared; a valid position
        result = self.mate_solver.solve(state.board, budget, state.stop, max_ply=ROOT_MATE_PLY)
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

    # --- extensions ---------------------------------------------------------------------------------
    def bench(self, seconds: float = 3.0) -> BenchResult:
        """Search the start position for `seconds` and measure the speed."""
        from .search.searcher import Limits
        from .shogi import Board

        self._prepare()
        searcher = self.searcher
        assert searcher is not None  # built by _prepare
        with self._search_lock:
            result = searcher.search(Board().pos, Limits(time_ms=seconds * 1000.0))
        searcher.clear()
        nps = int(result.nodes * 1000 / max(1.0, result.time_ms))
        return BenchResult(result.nodes, result.samples, int(result.time_ms), nps, self.options["Threads"])


class _InfoReporter:
    """Receives a snapshot of the search every SNAPSHOT_INTERVAL (kept as the watchdog's fallback move)
    and reports it: every `interval` s, or on every change of PV or score when streaming."""

    def __init__(self, engine: Engine, state: GoState, streaming: bool, interval: float):
        self.engine, self.state, self.streaming, self.interval = engine, state, streaming, interval
        self.last_key: tuple | None = None
        self.next_report = time.perf_counter() + interval

    def __call__(self, result: SearchResult) -> None:
        self.state.last = result
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
        with self.state.lock:
            if self.state.done.is_set():
                return
            adapter = self.engine.adapter
            if adapter is not None:
                self.engine.callbacks.info(SearchInfo.from_result(result, adapter.move_to_str))
