"""USI protocol: parsing and dispatch only (the engine's behaviour lives in engine.py).

The main thread is the single stdin reader: it reads lines while a search runs in the engine's own
thread, so `stop`, `ponderhit`, `gameover`, `isready` and `quit` are handled at once. All output goes
through one `Writer` (a lock around write+flush), which also logs both directions to LogFile.
Every command runs inside a try/except: bad input prints `info string error: ...` and the loop goes on;
unknown commands are ignored (USI wire rule, docs/usi.md). Only pure-Python modules are imported before
`usiok`.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from . import __version__
from .options import OptionValues

ENGINE_NAME = f"MCSS {__version__}"
ENGINE_AUTHOR = "the mcss project"


class Writer:
    """Thread-safe line output to stdout, with an optional log of every line in and out."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.lock = threading.Lock()
        self.log_path = ""
        self.log = None

    def __call__(self, line: str) -> None:
        line = line.encode("ascii", "backslashreplace").decode("ascii")    # GUIs expect ASCII
        with self.lock:
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass                   # the GUI has gone; quit will follow or stdin hits EOF
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
            now = time.time()        # one reading: seconds and milliseconds of the same instant
            self.log.write(f"{time.strftime('%H:%M:%S', time.localtime(now))}.{int(now * 1000) % 1000:03d} "
                           f"{direction} {line}\n")


class UsiLoop:
    """Reads commands and calls the Engine; `run()` returns the exit code."""

    def __init__(self, stdin=None, writer: Writer | None = None):
        self.stdin = stdin or sys.stdin
        self.out = writer or Writer()
        self.options = OptionValues()
        self._engine = None
        self.handlers = {
            "usi": self.cmd_usi, "isready": self.cmd_isready, "setoption": self.cmd_setoption,
            "usinewgame": self.cmd_usinewgame, "position": self.cmd_position, "go": self.cmd_go,
            "stop": self.cmd_stop, "ponderhit": self.cmd_ponderhit, "gameover": self.cmd_gameover,
            "d": self.cmd_d, "bench": self.cmd_bench,
        }
        self._apply_log_option()

    @property
    def engine(self):
        """The Engine, created on first use (engine.py imports nothing heavy at module level)."""
        if self._engine is None:
            from .engine import Engine
            self._engine = Engine(self.out, self.options)
        return self._engine

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
            except Exception as e:         # bad input never ends the loop
                self.out(f"info string error: {tokens[0]}: {type(e).__name__}: {e}".replace("\n", " "))
        self.quit()                        # EOF: the GUI has gone
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
        self.engine.isready()

    def cmd_setoption(self, args) -> None:
        """`setoption name N [value V]` (V may contain spaces for file names)."""
        if not args or args[0] != "name" or len(args) < 2:
            raise ValueError("expected 'setoption name <name> [value <value>]'")
        if "value" in args[1:]:
            k = args.index("value", 1)
            name, value = " ".join(args[1:k]), " ".join(args[k + 1:])
        else:
            name, value = " ".join(args[1:]), None
        self.engine.setoption(name, value)
        if name.lower() == "logfile":
            self._apply_log_option()

    def _apply_log_option(self) -> None:
        try:
            self.out.set_log(self.options["LogFile"])
        except OSError as e:
            self.out(f"info string error: LogFile {self.options['LogFile']}: {e}")

    def cmd_usinewgame(self, args) -> None:
        self.engine.usinewgame()

    def cmd_position(self, args) -> None:
        self.engine.position(args)

    def cmd_go(self, args) -> None:
        self.engine.go(args)

    def cmd_stop(self, args) -> None:
        if self._engine is not None:
            self._engine.stop()

    def cmd_ponderhit(self, args) -> None:
        if self._engine is not None:
            self._engine.ponderhit(args)

    def cmd_gameover(self, args) -> None:
        if self._engine is not None:
            self._engine.gameover(args)

    def cmd_d(self, args) -> None:
        self.engine.display()

    def cmd_bench(self, args) -> None:
        self.engine.bench()


def main() -> int:
    """Run the USI loop on stdin/stdout; exits the process promptly (also mid-search)."""
    if hasattr(sys.stdin, "reconfigure"):
        sys.stdin.reconfigure(errors="replace")
    code = UsiLoop().run()
    sys.stdout.flush()
    os._exit(code)                         # do not wait for search threads
