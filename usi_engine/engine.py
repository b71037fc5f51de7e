"""The shogi engine behind the USI front-end: game state, options, and the life of each `go`.

Threads: the protocol reader calls the public methods and never waits for a search. Each `go` runs in its
own thread (`_run_go`), which waits for the previous go's thread (one search at a time), then calls
`Searcher.search` and prints `info` lines; a watchdog thread per `go` ends the search at its deadline or
on `stop`, re-issuing `Searcher.stop()` until the go thread ends (a stop that arrives before the search
has started is not lost), and answers with the latest 0.1 s snapshot of the search when the search does
not return in time (one expansion can take ~100 ms of CPU; docs/usi.md).

One `bestmove` per `go` (a GUI reads a second as a move): every `go` owns a `GoState`; `_answer()` is the only way to
print `bestmove`; it prints once under a lock and ignores later calls. In ponder and infinite
mode the answer is held until `stop`, `ponderhit` or `gameover` (even for mates, declarations and
resignations, which are found before searching).

Invalid positions: after a `position` command that fails (bad SFEN, illegal or malformed move), the
engine keeps NO position: it prints `info string error: ...`, and a later `go` answers
`bestmove resign` with another error line instead of a move for a position the GUI does not have.

Heavy modules (numpy, numba, the rules core, the search) are imported lazily, at the first `isready`,
`position` or `go`, so `usi` is answered at once.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import timeman
from .options import OptionValues
from .search.values import MATE, MATE_THRESHOLD

if TYPE_CHECKING:
    from .search.searcher import SearchResult

KEEPALIVE_SECONDS = 3.0        # empty line while isready works (GUIs time out after ~5 s of silence)
WATCHDOG_POLL = 0.005
SNAPSHOT_GRACE = 0.04         # s after stop/deadline: answer with the latest snapshot's move if the search
FALLBACK_AFTER_STOP = 0.15     # has not returned; without a snapshot wait this long, then any legal move
SNAPSHOT_INTERVAL = 0.1        # s between search snapshots (fallback move; PV checks when streaming)
MIN_PV_INTERVAL = 0.05
WARMUP_SAMPLES = 64
WARMUP_MS = 2000.0
ROOT_MATE_PLY = 7              # mates this short are solved before the search ...
ROOT_MATE_SECONDS = 0.1        # ... within this time
ROOT_MATE_SHARE = 0.1          # ... and at most this share of the move's time


@dataclass
class GoCommand:
    """A parsed `go`: times in ms (None = not given)."""
    btime: int = 0
    wtime: int = 0
    binc: int = 0
    winc: int = 0
    byoyomi: int = 0
    movetime: int = 0
    nodes: int = 0
    depth: int = 0
    mate: int | None = None       # ms; -1 = infinite
    ponder: bool = False
    infinite: bool = False
    is_mate: bool = False


INT_KEYS = ("btime", "wtime", "binc", "winc", "byoyomi", "movetime", "nodes", "depth")


def parse_go(tokens: list[str]) -> GoCommand:
    """Keyword parser for `go` arguments; unknown tokens and unparsable numbers are skipped."""
    go = GoCommand()
    i = 0
    while i < len(tokens):
        tok = tokens[i].lower()
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok in INT_KEYS and nxt is not None and _is_int(nxt):
            setattr(go, tok, max(0, int(nxt)))
            i += 2
            continue
        if tok == "mate":
            go.is_mate = True
            if nxt is not None and _is_int(nxt):
                go.mate = max(0, int(nxt))
                i += 2
                continue
            go.mate = -1
            if nxt is not None and nxt.lower() == "infinite":
                i += 1
        elif tok == "ponder":
            go.ponder = True
        elif tok == "infinite":
            go.infinite = True
        i += 1
    return go


def _is_int(text: str) -> bool:
    return text.lstrip("+-").isdigit()


def parse_ponderhit(tokens: list[str]) -> GoCommand | None:
    """YaneuraOu's `ponderhit btime ... wtime ... byoyomi ...`: new clock values, or None if absent."""
    return parse_go(tokens) if tokens else None


@dataclass
class GoState:
    """One `go` from start to its single `bestmove`."""
    cmd: GoCommand
    board: object                        # a copy of the position searched (None: invalid position)
    start: float = field(default_factory=time.perf_counter)
    deadline: float | None = None        # perf_counter time to end the search
    pondering: bool = False
    stop: threading.Event = field(default_factory=threading.Event)
    hold: threading.Event = field(default_factory=threading.Event)   # set = bestmove may be printed
    done: threading.Event = field(default_factory=threading.Event)   # set once bestmove is printed
    stop_time: float | None = None
    legal: list = field(default_factory=list)
    last: SearchResult | None = None     # latest snapshot of the search
    searcher: object = None              # the Searcher running this go (for the watchdog's stop)
    finished: threading.Event = field(default_factory=threading.Event)   # set when the go thread ends
    lock: threading.Lock = field(default_factory=threading.Lock)

    def release(self):
        """stop / gameover: end the search and allow the answer."""
        if self.stop_time is None:
            self.stop_time = time.perf_counter()
        self.stop.set()
        self.hold.set()


class Engine:
    """State and commands of the USI engine; `out(line)` prints one line (thread-safe)."""

    def __init__(self, out, options: OptionValues | None = None):
        self.out = out
        self.options = options or OptionValues()
        self.board = None
        self.position_error = None
        self.current: GoState | None = None
        self.thread: threading.Thread | None = None
        self.searcher = None
        self.adapter = None
        self.mate_solver = None
        self._search_key = None
        self._weights_path = None
        self._ready = False
        self._lock = threading.Lock()            # preparation (isready, a go without isready)
        self._search_lock = threading.Lock()     # one Searcher.search at a time
        for err in self.options.errors:
            self.info_string(f"error: {err}")

    # --- output helpers -----------------------------------------------------------------------
    def info_string(self, text: str) -> None:
        self.out("info string " + text.replace("\n", " "))

    @property
    def searching(self) -> bool:
        return self.current is not None and not self.current.done.is_set()

    # --- commands ------------------------------------------------------------------------------
    def setoption(self, name: str, value: str | None) -> None:
        opt = self.options.set(name, value)
        if opt.name in ("EvalFile",):
            self._ready = False

    def isready(self) -> None:
        """Load and compile everything (keep-alive lines meanwhile); at once during a search."""
        if not self.searching:
            stop = threading.Event()
            keepalive = threading.Thread(target=self._keepalive, args=(stop,), daemon=True)
            keepalive.start()
            try:
                self._prepare()
            finally:
                stop.set()
                keepalive.join()
        self.out("readyok")

    def _keepalive(self, stop: threading.Event) -> None:
        while not stop.wait(KEEPALIVE_SECONDS):
            self.out("")

    def usinewgame(self) -> None:
        if self.searcher is not None and not self.searching:
            self.searcher.clear()

    def position(self, tokens: list[str]) -> None:
        """`position startpos|sfen ... [moves ...]`; on any error no position is kept (see module doc)."""
        from .shogi import Board
        self.board = None
        try:
            if "moves" in tokens:
                k = tokens.index("moves")
                head, moves = tokens[:k], tokens[k + 1:]
            else:
                head, moves = tokens, []
            if head == ["startpos"]:
                board = Board()
            elif head and head[0] == "sfen":
                board = Board(" ".join(head[1:]))
            else:
                raise ValueError("expected 'startpos' or 'sfen <sfen>'")
            for i, move in enumerate(moves):
                try:
                    board.push_usi(move)
                except ValueError:
                    raise ValueError(f"move {i + 1} {move!r} is illegal or malformed in {board.sfen()}") from None
        except ValueError as e:
            self.position_error = f"position: {e}"
            self.info_string(f"error: {self.position_error}; no position is set")
            return
        self.board = board
        self.position_error = None

    def go(self, tokens: list[str]) -> None:
        """Start a go thread and return at once (the reader must stay free for stop / isready)."""
        cmd = parse_go(tokens)
        previous = self._release_current()
        board = None if self.board is None else self.board.copy()
        state = GoState(cmd, board, pondering=cmd.ponder)
        if cmd.is_mate or not (cmd.ponder or cmd.infinite):
            state.hold.set()
        self.current = state
        target = self._run_mate if cmd.is_mate else self._run_go
        self.thread = threading.Thread(target=target, args=(state, previous), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        """End the running go; its search is told at once (the watchdog repeats it)."""
        state = self.current
        if state is not None:
            state.release()
            if state.searcher is not None:
                state.searcher.stop()

    def ponderhit(self, tokens: list[str]) -> None:
        """The predicted move was played: our clock starts now (with new times if given)."""
        state = self.current
        if state is None or not state.pondering:
            return
        update = parse_ponderhit(tokens)
        if update is not None:
            for key in ("btime", "wtime", "binc", "winc", "byoyomi"):
                setattr(state.cmd, key, getattr(update, key))
        state.pondering = False
        state.cmd.ponder = False
        self._set_deadline(state, time.perf_counter())
        state.hold.set()

    def gameover(self, tokens: list[str]) -> None:
        """Acts as `stop` (GUIs may send it during ponder without stop); the bestmove is still printed."""
        self.stop()

    def quit(self) -> None:
        self.stop()

    # --- go: life of one search ----------------------------------------------------------------
    def _release_current(self) -> threading.Thread | None:
        """Release the running go (its own threads still print its one bestmove, without blocking the
        reader); returns its thread, which the next go waits for before it searches."""
        if self.current is not None:
            self.current.release()
        return self.thread

    def _run_go(self, state: GoState, previous: threading.Thread | None) -> None:
        try:
            self._answer(state, self._decide(state, previous))
        finally:
            state.finished.set()

    def _decide(self, state: GoState, previous: threading.Thread | None) -> str:
        """The bestmove text of a go (after the hold is released; legal or resign/win)."""
        try:
            answer = self._root_answer(state)
            if answer is None:
                self._set_deadline(state, state.start)
                threading.Thread(target=self._watchdog, args=(state,), daemon=True).start()
                if previous is not None:
                    previous.join()          # one search at a time; the watchdog answers if this is late
                self._prepare()              # normally done by isready; the watchdog covers a late one
                answer = self._root_mate(state) or self._search(state)
        except Exception as e:           # never die without answering
            self.info_string(f"error: search failed: {type(e).__name__}: {e}")
            answer = self._fallback(state)
        state.hold.wait()
        if answer not in ("resign", "win") and answer.split()[0] not in state.legal:
            self.info_string(f"error: {answer.split()[0]} is not legal here; playing a legal move")
            answer = self._fallback(state)
        return answer

    def _root_answer(self, state: GoState) -> str | None:
        """`bestmove` decided without searching (invalid position, no legal move, declaration)."""
        board = state.board
        if board is None:
            self.info_string(f"error: {self.position_error or 'no position'}; resigning")
            return "resign"
        state.legal = board.legal_moves()
        if not state.legal:
            return "resign"
        rule = self.options["EnteringKingRule"]
        if rule == "TryRule":
            move = board.try_rule_move()
            if move is not None:
                self.info_string(f"declaration: try rule move {move}")
                return move
        elif rule != "NoEnteringKing" and board.declaration_result(rule) == "win":
            points, pieces = board.declaration_points()
            self.info_string(f"declaration: {points} points, {pieces} pieces in camp")
            return "win"
        return None

    def _set_deadline(self, state: GoState, start: float) -> None:
        """Deadline from the time plan (none while pondering or in infinite mode)."""
        cmd = state.cmd
        if state.board is None:
            return
        if cmd.ponder or cmd.infinite:
            state.deadline = None
            return
        black = state.board.turn == 0
        clock = timeman.Clock(time=cmd.btime if black else cmd.wtime, inc=cmd.binc if black else cmd.winc,
                              byoyomi=cmd.byoyomi, movetime=cmd.movetime, ply=state.board.ply)
        if not (clock.time or clock.inc or clock.byoyomi or clock.movetime):
            state.deadline = None       # go nodes / depth / bare go: limits only
            if not (cmd.nodes or cmd.depth or self.options["NodesLimit"] or self.options["DepthLimit"]):
                state.deadline = start + self._default_bare_seconds()
            return
        o = self.options
        plan = timeman.plan(clock, timeman.TimeSettings(
            network_delay=o["NetworkDelay"], network_delay2=o["NetworkDelay2"],
            minimum_thinking_time=o["MinimumThinkingTime"], slow_mover=o["SlowMover"],
            ponder=o["USI_Ponder"], max_moves_to_draw=o["MaxMovesToDraw"]))
        state.deadline = start + plan.stop_ms / 1000.0

    @staticmethod
    def _default_bare_seconds() -> float:
        """A bare `go` (no clock, no limit) thinks this long."""
        return 5.0

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
                if not state.done.is_set() and state.hold.is_set() and now - state.stop_time > grace:
                    self.info_string("search did not stop in time; answering with the best move so far")
                    self._answer(state, self._fallback(state), state.last)
            time.sleep(WATCHDOG_POLL)

    def _search(self, state: GoState) -> str:
        from .search.searcher import Limits
        cmd, o = state.cmd, self.options
        nodes = cmd.nodes or o["NodesLimit"] or None
        depth = cmd.depth or o["DepthLimit"] or None
        unlimited = cmd.ponder or cmd.infinite
        time_ms = None
        if state.deadline is not None:
            time_ms = max(1.0, (state.deadline - time.perf_counter()) * 1000.0)
        limits = Limits(time_ms=time_ms, nodes=nodes, depth=depth, infinite=unlimited)
        self._set_draw_value(state.board.turn)
        streaming = cmd.infinite or o["ConsiderationMode"] or o["PvInterval"] == 0
        printer = InfoPrinter(self, state, streaming, max(MIN_PV_INTERVAL, o["PvInterval"] / 1000.0))
        with self._search_lock:
            state.searcher = self.searcher
            if state.stop.is_set():                # stopped before it could start (the watchdog may
                return self._fallback(state)       # already have answered)
            result = self.searcher.search(state.board.pos, limits, on_info=printer, multipv=o["MultiPV"],
                                          info_interval=SNAPSHOT_INTERVAL)
        state.last = result
        if result.best_move_str is None:          # root not expanded in time: legal moves exist
            return self._fallback(state)
        printer.final(result)
        if result.value <= -o["ResignValue"]:
            return "resign"
        return self._with_ponder(state, result)

    def _with_ponder(self, state: GoState, result) -> str:
        """`M [ponder P]` after the final legality check of M (and of P after M)."""
        best = result.best_move_str
        if best not in state.legal:
            self.info_string(f"error: search returned illegal move {best}; playing a legal one")
            return self._fallback(state)
        if len(result.pv_str) >= 2:
            after = state.board.copy()
            after.push_usi(best)
            if after.is_legal(result.pv_str[1]):
                return f"{best} ponder {result.pv_str[1]}"
        return best

    def _fallback(self, state: GoState) -> str:
        """Best legal move known so far (last info), else the first legal move, else resign."""
        last = state.last
        if last is not None and last.best_move_str in state.legal:
            return last.best_move_str
        return state.legal[0] if state.legal else "resign"

    def _answer(self, state: GoState, answer: str, final: SearchResult | None = None) -> None:
        """Print `bestmove` once per go (the one-bestmove gate, docs/usi.md), after the info lines of
        `final` if given."""
        with state.lock:
            if state.done.is_set():
                return
            if final is not None:
                for line in info_lines(final, self.adapter.move_to_str):
                    self.out(line)
            self.out(f"bestmove {answer}")
            state.done.set()

    # --- preparation ----------------------------------------------------------------------------
    def _prepare(self) -> None:
        """Import, load weights and compile (first isready), and rebuild the searcher on option changes."""
        with self._lock:
            self._prepare_rules()
            self._load_adapter()
            key = self._search_options_key()
            if self.searcher is None or key != self._search_key:
                from .search.searcher import SearchOptions, Searcher
                threads, hash_mb, t_sel, t_back, spread, policy, graph, seed = key
                self.searcher = Searcher(self.adapter, SearchOptions(
                    threads=threads, hash_mb=hash_mb, t_sel=t_sel, t_back=t_back, t_sel_spread=spread,
                    policy=policy, graph=graph, seed=seed))
                self._search_key = key
                self._ready = False
            if not self._ready:
                self._warm_search()
                self._ready = True
                gc.collect()
                gc.freeze()      # the ~10^5 objects of numba's compiler stay out of later collections:
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

    def _search_options_key(self) -> tuple:
        o = self.options
        return (o["Threads"], float(o["USI_Hash"]), float(o["SoftmaxTemperature"]),
                float(o["BackupTemperature"]), o["TemperatureSpread"] / 100.0, o["SelectionPolicy"],
                o["GraphSearch"], o["Seed"])

    def _load_adapter(self) -> None:
        """Weights (EvalFile; a bad file -> error line and the default weights) and game params."""
        from eval.weightfile import load_weights
        from .shogi.board import declaration_rule_code
        from .shogi_search.game import ShogiAdapter, make_params
        path = self.options["EvalFile"] or None
        if self.adapter is None or path != self._weights_path:
            try:
                weights = load_weights(path)
            except (ValueError, OSError) as e:
                self.info_string(f"error: EvalFile {path}: {e}; using the default weights")
                weights = load_weights(None)
            self._weights_path = path
            if self.adapter is None:
                self.adapter = ShogiAdapter(weights)
            else:
                self.adapter.weights = weights
            self._ready = False
        o = self.options
        rule = o["EnteringKingRule"]
        params = make_params(qsearch_depth=o["QSearchDepth"], entering_rule=declaration_rule_code(rule),
                             max_moves=o["MaxMovesToDraw"])
        self.adapter.params[:] = params

    def _set_draw_value(self, turn: int) -> None:
        """Repetition value from Black's view, given the colour we play (YaneuraOu's DrawValue*)."""
        from .shogi_search.game import P_DRAW_FOR_BLACK
        o = self.options
        self.adapter.params[P_DRAW_FOR_BLACK] = o["DrawValueBlack"] if turn == 0 else -o["DrawValueWhite"]

    def _warm_search(self) -> None:
        """Compile the search kernels (or load them from numba's cache) with two tiny searches, the
        second after a move so that tree reuse (reroot) is compiled here and not in a timed move."""
        from .search.searcher import Limits
        from .shogi import Board
        board = Board()
        limits = Limits(samples=WARMUP_SAMPLES, time_ms=WARMUP_MS)
        with self._search_lock:
            result = self.searcher.search(board.pos, limits)
            if result.best_move_str is not None:
                board.push_usi(result.best_move_str)
                self.searcher.search(board.pos, limits)
            self.searcher.clear()

    # --- go mate ----------------------------------------------------------------------------------
    def _run_mate(self, state: GoState, previous: threading.Thread | None) -> None:
        """`go mate MS|infinite`: one `checkmate ...` line (stop -> `checkmate timeout`)."""
        answer = "nomate"
        try:
            if previous is not None:
                previous.join()
            if state.board is None:
                self.info_string(f"error: {self.position_error or 'no position'}")
            else:
                with self._lock:
                    self._prepare_rules()
                limit = None if state.cmd.mate < 0 else state.cmd.mate / 1000.0
                result = self.mate_solver.solve(state.board, limit, state.stop)
                ms = max(1, int(result.seconds * 1000))
                self.out(f"info time {ms} nodes {result.nodes} nps {result.nodes * 1000 // ms}")
                answer = " ".join(result.line) if result.status == "mate" else result.status
        except Exception as e:
            self.info_string(f"error: mate search failed: {type(e).__name__}: {e}")
            answer = "timeout"
        with state.lock:
            if not state.done.is_set():
                self.out(f"checkmate {answer}")
                state.done.set()

    def _root_mate(self, state: GoState) -> str | None:
        """`M [ponder P]` of a mate of at most ROOT_MATE_PLY plies proved before the search within
        min(ROOT_MATE_SECONDS, ROOT_MATE_SHARE of the move's time); None otherwise."""
        budget = ROOT_MATE_SECONDS
        if state.deadline is not None:
            budget = min(budget, ROOT_MATE_SHARE * max(0.0, state.deadline - time.perf_counter()))
        result = self.mate_solver.solve(state.board, budget, state.stop, max_ply=ROOT_MATE_PLY)
        if result.status != "mate":
            return None
        line = result.line
        limit = self.options["MaxMovesToDraw"]
        if limit and state.board.move_number - 1 + len(line) - 1 >= limit:
            return None             # the game is drawn before the mate completes: leave it to the search
        self.out(f"info depth {len(line)} nodes {result.nodes} score mate {len(line)} pv {' '.join(line)}")
        return f"{line[0]} ponder {line[1]}" if len(line) > 1 else line[0]

    # --- extensions ---------------------------------------------------------------------------------
    def display(self) -> None:
        """`d`: the board as text and its SFEN."""
        if self.board is None:
            self.info_string(f"error: {self.position_error or 'no position'}")
            return
        sfen = self.board.sfen()
        for line in board_diagram(sfen):
            self.out(line)
        self.out(f"sfen {sfen}")
        self.out(f"moves {' '.join(self.board.move_history())}")

    def bench(self, seconds: float = 3.0) -> None:
        """`bench`: search the start position for a few seconds and report nodes per second."""
        from .search.searcher import Limits
        from .shogi import Board
        self._prepare()
        with self._search_lock:
            result = self.searcher.search(Board().pos, Limits(time_ms=seconds * 1000.0))
        nps = int(result.nodes * 1000 / max(1.0, result.time_ms))
        self.info_string(f"bench: nodes {result.nodes} samples {result.samples} time {int(result.time_ms)} "
                         f"nps {nps} threads {self.options['Threads']}")
        self.searcher.clear()


class InfoPrinter:
    """Receives a snapshot of the search every SNAPSHOT_INTERVAL (kept as the watchdog's fallback move)
    and prints `info` lines: every `interval` s, or on every change of PV or score when streaming."""

    def __init__(self, engine: Engine, state: GoState, streaming: bool, interval: float):
        self.engine, self.state, self.streaming, self.interval = engine, state, streaming, interval
        self.last_key = None
        self.next_print = time.perf_counter() + interval

    def __call__(self, result: SearchResult) -> None:
        self.state.last = result
        if self.streaming:
            key = (tuple(result.pv_str), round(result.value))
            if key == self.last_key:
                return
            self.last_key = key
        else:
            now = time.perf_counter()
            if now < self.next_print:
                return
            self.next_print = now + self.interval
        self.emit(result)

    def final(self, result) -> None:
        self.emit(result)

    def emit(self, result) -> None:
        with self.state.lock:
            if self.state.done.is_set():
                return
            for line in info_lines(result, self.engine.adapter.move_to_str):
                self.engine.out(line)


def score_text(value: float) -> str:
    """`score cp X` or `score mate N` (N plies, negative when we are mated)."""
    if abs(value) >= MATE_THRESHOLD:
        plies = max(0, int(round(MATE - abs(value))))
        return f"score mate {plies if value > 0 else -plies}"
    return f"score cp {int(round(value))}"


def info_lines(result, move_to_str) -> list[str]:
    """One `info` line per MultiPV line (or one line with the main PV)."""
    t = max(0, int(result.time_ms))
    nps = int(result.nodes * 1000 / max(1, t))
    depth = max(1, result.depth)
    head = (f"info depth {depth} seldepth {max(depth, result.seldepth)} time {t} nodes {result.nodes} "
            f"nps {nps} hashfull {result.hashfull}")
    if len(result.multipv) <= 1:
        pv = " ".join(result.pv_str)
        return [f"{head} {score_text(result.value)}" + (f" pv {pv}" if pv else "")]
    lines = []
    for k, (_, value, moves) in enumerate(result.multipv, 1):
        pv = " ".join(move_to_str(m) for m in moves)
        lines.append(f"{head} multipv {k} {score_text(value)} pv {pv}")
    return lines


def board_diagram(sfen: str) -> list[str]:
    """Rows of the board part of an SFEN, files 9..1 left to right, ' . ' for empty squares."""
    rows, hand = sfen.split()[0].split("/"), sfen.split()[2]
    out = ["  9  8  7  6  5  4  3  2  1"]
    for r, row in enumerate(rows):
        cells, promote = [], False
        for ch in row:
            if ch == "+":
                promote = True
            elif ch.isdigit():
                cells.extend([" . "] * int(ch))
            else:
                cells.append(("+" if promote else " ") + ch + " ")
                promote = False
        out.append("".join(cells) + " " + "abcdefghi"[r])
    out.append(f"hand {hand}  side {sfen.split()[1]}")
    return out
