"""USI protocol: the grammar (command parsing, output lines) and dispatch to the typed Engine API.

The engine (engine.py) speaks no text: this module turns commands into typed calls (`go` arguments into
`GoLimits`, `position` into an SFEN and moves) and the engine's callbacks (`SearchInfo`, best move, mate
answer, messages) into `info`, `bestmove`, `checkmate` and `info string` lines.

The main thread is the single stdin reader: it reads lines while a search runs in the engine's own
thread, so `stop`, `ponderhit`, `gameover`, `isready` and `quit` are handled at once. All output goes
through one `Writer` (a lock around write+flush), which also logs both directions to LogFile.
Every command runs inside a try/except: bad input prints `info string error: ...` and the loop goes on;
unknown commands are ignored (USI wire rule, docs/usi.md). Only pure-Python modules are imported before
`usiok` (the engine imports its heavy modules lazily).
"""

from __future__ import annotations

import os
import sys
import threading
import time

from . import __version__
from .clock import USI_CLOCK_WORDS, Clocks
from .engine import Engine
from .engine_types import EngineCallbacks, GoLimits, MateAnswer, SearchInfo
from .options import OptionValues

ENGINE_NAME = f"MCSS {__version__}"
ENGINE_AUTHOR = "the mcss project"
KEEPALIVE_SECONDS = 3.0  # empty line while isready works (GUIs time out after ~5 s of silence)
BENCH_SECONDS = 3.0
LIMIT_KEYS = ("nodes", "depth")
MATE_INFINITE = -1


# --- grammar: input -------------------------------------------------------------------------------
def _is_int(text: str) -> bool:
    return text.lstrip("+-").isdigit()


def parse_go(tokens: list[str]) -> tuple[GoLimits, int | None]:
    """Keyword parser for `go` arguments: the limits and, for `go mate MS|infinite`, the mate time in ms
    (MATE_INFINITE for infinite; None when not a mate search). Unknown tokens and unparsable numbers are
    skipped, negative numbers count as 0."""
    limits = GoLimits()
    clock_words: dict[str, int] = {}
    mate = None
    i = 0
    while i < len(tokens):
        tok = tokens[i].lower()
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok in USI_CLOCK_WORDS + LIMIT_KEYS and nxt is not None and _is_int(nxt):
            if tok in USI_CLOCK_WORDS:
                clock_words[tok] = max(0, int(nxt))
            else:
                setattr(limits, tok, max(0, int(nxt)))
            i += 2
            continue
        if tok == "mate":
            if nxt is not None and _is_int(nxt):
                mate = max(0, int(nxt))
                i += 2
                continue
            mate = MATE_INFINITE
            if nxt is not None and nxt.lower() == "infinite":
                i += 1
        elif tok == "ponder":
            limits.ponder = True
        elif tok == "infinite":
            limits.infinite = True
        i += 1
    limits.clocks = Clocks.from_usi(clock_words)
    return limits, mate


def parse_ponderhit(tokens: list[str]) -> Clocks | None:
    """YaneuraOu's `ponderhit btime ... wtime ... byoyomi ...`: new clocks, or None if absent."""
    return parse_go(tokens)[0].clocks if tokens else None


def parse_setoption(tokens: list[str]) -> tuple[str, str | None]:
    """`name N [value V]` -> (N, V or None); names and values may contain spaces (file names)."""
    if not tokens or tokens[0] != "name" or len(tokens) < 2:
        raise ValueError("expected 'setoption name <name> [value <value>]'")
    if "value" in tokens[1:]:
        k = tokens.index("value", 1)
        return " ".join(tokens[1:k]), " ".join(tokens[k + 1 :])
    return " ".join(tokens[1:]), None


# --- grammar: output ------------------------------------------------------------------------------
def score_text(score) -> str:
    """`score cp X` or `score mate N` (N plies, negative when we are mated)."""
    return f"score mate {score.mate}" if score.mate is not None else f"score cp {score.cp}"


def info_lines(info: SearchInfo) -> list[str]:
    """`info` lines of one report: one per MultiPV line (or one with the main PV); the known fields only."""
    head = "info"
    for key, value in (
        ("depth", info.depth),
        ("seldepth", info.seldepth),
        ("time", info.time_ms),
        ("nodes", info.nodes),
    ):
        if value is not None:
            head += f" {key} {value}"
    if info.time_ms is not None and info.nodes is not None:
        head += f" nps {info.nodes * 1000 // max(1, info.time_ms)}"
    if info.hashfull is not None:
        head += f" hashfull {info.hashfull}"
    if not info.lines:
        return [head]
    lines = []
    for k, line in enumerate(info.lines, 1):
        text = head + (f" multipv {k}" if info.multipv else "") + f" {score_text(line.score)}"
        if line.moves or info.multipv:
            text += " pv " + " ".join(line.moves)
        lines.append(text)
    return lines


def bestmove_line(move: str, ponder: str | None) -> str:
    return f"bestmove {move}" + (f" ponder {ponder}" if ponder else "")


def checkmate_line(answer: MateAnswer) -> str:
    """`checkmate <moves>|nomate|timeout` (the answer to `go mate`, docs/usi.md)."""
    return "checkmate " + (" ".join(answer.line) if answer.status == "mate" else answer.status)


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


class Writer:
    """Thread-safe line output to stdout, with an optional log of every line in and out."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.lock = threading.Lock()
        self.log_path = ""
        self.log = None

    def __call__(self, line: str) -> None:
        line = line.encode("ascii", "backslashreplace").decode("ascii")  # GUIs expect ASCII
        with self.lock:
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass  # the GUI has gone; quit will follow or stdin hits EOF
            self._log("<", line)

    def received(self, line: str) -> None:
        with self.lock:
            self._log(">", line)

    def set_log(self, path: str) -> None:
        """Open (or close, for an empty path) the log file; OSError if it cannot be opened."""
        with self.lock:
            if path == self.log_path:
                return
            if self.log is not None:
                self.log.close()
                self.log = None
            self.log_path = ""
            if path:
                self.log = open(path, "a", encoding="utf-8", buffering=1)
                self.log_path = path

    def _log(self, direction: str, line: str) -> None:
        if self.log is not None:
            now = time.time()  # one reading: seconds and milliseconds of the same instant
            self.log.write(
                f"{time.strftime('%H:%M:%S', time.localtime(now))}.{int(now * 1000) % 1000:03d} {direction} {line}\n"
            )


class UsiLoop:
    """Reads commands and calls the Engine; `run()` returns the exit code."""

    def __init__(self, stdin=None, writer: Writer | None = None):
        self.stdin = stdin or sys.stdin
        self.out = writer or Writer()
        self.options = OptionValues()
        self._engine: Engine | None = None
        self.handlers = {
            "usi": self.cmd_usi,
            "isready": self.cmd_isready,
            "setoption": self.cmd_setoption,
            "usinewgame": self.cmd_usinewgame,
            "position": self.cmd_position,
            "go": self.cmd_go,
            "stop": self.cmd_stop,
            "ponderhit": self.cmd_ponderhit,
            "gameover": self.cmd_gameover,
            "d": self.cmd_d,
            "bench": self.cmd_bench,
        }
        self._apply_log_option()

    @property
    def engine(self) -> Engine:
        """The Engine, created on first use."""
        if self._engine is None:
            self._engine = Engine(
                EngineCallbacks(
                    info=self.on_info, bestmove=self.on_bestmove, mate=self.on_mate, message=self.info_string
                ),
                self.options,
            )
        return self._engine

    # --- engine callbacks -----------------------------------------------------------------------
    def info_string(self, text: str) -> None:
        self.out("info string " + text.replace("\n", " "))

    def on_info(self, info: SearchInfo) -> None:
        for line in info_lines(info):
            self.out(line)

    def on_bestmove(self, move: str, ponder: str | None) -> None:
        self.out(bestmove_line(move, ponder))

    def on_mate(self, answer: MateAnswer) -> None:
        self.out(checkmate_line(answer))

    # --- loop -----------------------------------------------------------------------------------
    def run(self) -> int:
        for raw in self.stdin:
            line = raw.strip()
            self.out.received(line)
            if not line:
                continue
            tokens = line.split()
            if tokens[0] == "quit":
                self.quit()
                return 0
            handler = self.handlers.get(tokens[0])
            if handler is None:
                continue
            try:
                handler(tokens[1:])
            except Exception as e:  # bad input never ends the loop
                self.info_string(f"error: {tokens[0]}: {type(e).__name__}: {e}")
        self.quit()  # EOF: the GUI has gone
        return 0

    def quit(self) -> None:
        if self._engine is not None:
            self._engine.quit()
        self.out.set_log("")

    # --- commands -------------------------------------------------------------------------------
    def cmd_usi(self, args) -> None:
        self.out(f"id name {ENGINE_NAME}")
        self.out(f"id author {ENGINE_AUTHOR}")
        for line in self.options.usi_lines():
            self.out(line)
        self.out("usiok")

    def cmd_isready(self, args) -> None:
        """Prepare the engine (an empty line every KEEPALIVE_SECONDS meanwhile), then `readyok`."""
        stop = threading.Event()
        keepalive = threading.Thread(target=self._keepalive, args=(stop,), daemon=True)
        keepalive.start()
        try:
            self.engine.prepare()
        finally:
            stop.set()
            keepalive.join()
        self.out("readyok")

    def _keepalive(self, stop: threading.Event) -> None:
        while not stop.wait(KEEPALIVE_SECONDS):
            self.out("")

    def cmd_setoption(self, args) -> None:
        name, value = parse_setoption(args)
        self.engine.set_option(name, value)
        if name.lower() == "logfile":
            self._apply_log_option()

    def _apply_log_option(self) -> None:
        try:
            self.out.set_log(self.options["LogFile"])
        except OSError as e:
            self.out(f"info string error: LogFile {self.options['LogFile']}: {e}")

    def cmd_usinewgame(self, args) -> None:
        self.engine.new_game()

    def cmd_position(self, args) -> None:
        """On any error the engine keeps no position (a later go resigns with the reason)."""
        from .shogi.sfen import parse_position  # the rules' position line; imported here, after usiok (numpy)

        try:
            sfen, moves = parse_position(args)
            self.engine.set_position(sfen, moves)
        except ValueError as e:
            reason = f"position: {e}"
            self.engine.clear_position(reason)
            self.info_string(f"error: {reason}; no position is set")

    def cmd_go(self, args) -> None:
        limits, mate = parse_go(args)
        if mate is None:
            self.engine.go(limits)
        else:
            self.engine.go_mate(None if mate == MATE_INFINITE else mate)

    def cmd_stop(self, args) -> None:
        if self._engine is not None:
            self._engine.stop()

    def cmd_ponderhit(self, args) -> None:
        if self._engine is not None:
            self._engine.ponderhit(parse_ponderhit(args))

    def cmd_gameover(self, args) -> None:
        if self._engine is not None:
            self._engine.gameover()

    def cmd_d(self, args) -> None:
        """Extension `d`: the board as text, its SFEN and the moves played."""
        try:
            sfen, moves = self.engine.position()
        except ValueError as e:
            self.info_string(f"error: {e}")
            return
        for line in board_diagram(sfen):
            self.out(line)
        self.out(f"sfen {sfen}")
        self.out(f"moves {' '.join(moves)}")

    def cmd_bench(self, args) -> None:
        """Extension `bench`: search the start position for BENCH_SECONDS and report the speed."""
        b = self.engine.bench(BENCH_SECONDS)
        self.info_string(f"bench: nodes {b.nodes} samples {b.samples} time {b.time_ms} nps {b.nps} threads {b.threads}")


def main() -> int:
    """Run the USI loop on stdin/stdout; exits the process promptly (also mid-search)."""
    if hasattr(sys.stdin, "reconfigure"):
        sys.stdin.reconfigure(errors="replace")
    code = UsiLoop().run()
    sys.stdout.flush()
    os._exit(code)  # do not wait for search threads
