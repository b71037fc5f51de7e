"""Engine processes over real pipes, with a watchdog on every read; USI and GTP clients on top.

One reader thread per process turns stdout into a queue of (arrival time, line); every read waits on
that queue with a deadline, so a hung engine costs at most its timeout and a crashed one is seen as
EOF at once. Arrival times are stamped by the reader thread, so the move clock does not include the
time the referee thread needed to notice the line.
"""

from __future__ import annotations

import queue
import shlex
import subprocess
import sys
import threading
import time
from typing import TextIO

EOF = None  # queue sentinel: the engine closed stdout (exited or crashed)
QUIT_GRACE = 2.0  # seconds an engine gets to exit after `quit` before it is killed
USI_HANDSHAKE_TIMEOUT = 10.0
READY_TIMEOUT = 30.0  # isready -> readyok; any line (blank keep-alive included) restarts it
READY_CAP = 300.0  # hard cap on one isready, keep-alives or not
GTP_TIMEOUT = 30.0  # any GTP command but genmove
GTP_START_TIMEOUT = 600.0  # the first answer: an engine may load or compile its kernels first (GTP has no isready)
PYTHON = "{python}"  # an engine command's first word standing for the interpreter that runs the referee


class EngineError(Exception):
    """The engine broke the protocol, crashed or did not answer in time."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind  # "crash", "timeout" or "protocol"


def split_command(command) -> list[str]:
    """An engine command as argv: a list is taken as is, a string is split like a POSIX shell would; a first word
    `{python}` (PYTHON) becomes this interpreter (sys.executable), so that a match's JSON names no machine path
    and resumes under another path to the same environment."""
    argv = [str(a) for a in command] if isinstance(command, (list, tuple)) else shlex.split(command)
    if not argv:
        raise ValueError("empty engine command")
    if argv[0] == PYTHON:
        argv[0] = sys.executable
    return argv


class EngineProcess:
    """A child process spoken to line by line; optional transcript (with the engine's stderr) to `log_path`
    and environment `env` (default: this process's). The one pipe driver of the project: the referee's
    USI/GTP clients below and the protocol tests (tests/usi_driver.py, tests/test_gtp.py) build on it."""

    def __init__(
        self, command, name: str, cwd: str | None = None, log_path: str | None = None, env: dict | None = None
    ):
        self.argv = split_command(command)
        self.name = name
        self.cwd = cwd
        self.log_path = log_path
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.lines: queue.Queue = queue.Queue()
        self._log: TextIO | None = None

    def start(self) -> None:
        self._log = open(self.log_path, "a", encoding="utf-8", buffering=1) if self.log_path else None
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log if self._log else subprocess.DEVNULL,
                cwd=self.cwd,
                env=self.env,
                text=True,
                encoding="utf-8",
                errors="replace",
                bufsize=1,
            )
        except OSError as e:
            raise EngineError("crash", f"{self.name}: cannot start {self.argv!r}: {e}") from e
        self.lines = queue.Queue()
        threading.Thread(
            target=self._read, args=(self.proc, self.lines), daemon=True, name=f"reader-{self.name}"
        ).start()

    def _read(self, proc: subprocess.Popen, lines: queue.Queue) -> None:
        try:
            for line in proc.stdout or ():
                lines.put((time.monotonic(), line.rstrip("\r\n")))
        except (OSError, ValueError):
            pass
        lines.put((time.monotonic(), EOF))

    def _note(self, direction: str, line: str) -> None:
        if self._log:
            try:
                self._log.write(f"{direction} {line}\n")
            except (OSError, ValueError):
                pass

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send(self, line: str) -> float:
        """Write one line; returns the time.monotonic() it was written at."""
        self._note(">", line)
        try:
            stdin = self.proc.stdin if self.proc is not None else None
            if stdin is None:
                raise ValueError("not started")
            stdin.write(line + "\n")
            stdin.flush()
        except (OSError, ValueError) as e:
            raise EngineError("crash", f"{self.name}: cannot write to engine ({e})") from e
        return time.monotonic()

    def readline(self, deadline: float) -> tuple[float, str]:
        """Next line and its arrival time; EngineError on EOF or when `deadline` (monotonic) passes."""
        try:
            stamp, line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise EngineError("timeout", f"{self.name}: no answer in time") from None
        if line is EOF:
            self.lines.put((stamp, EOF))  # stay at EOF for later reads
            try:
                code = self.proc.wait(timeout=1.0) if self.proc is not None else None
            except subprocess.TimeoutExpired:
                code = None
            raise EngineError("crash", f"{self.name}: engine exited (code {code})")
        self._note("<", line)
        return stamp, line

    def drain(self) -> None:
        """Forget lines already received (stale output of an aborted command)."""
        while True:
            try:
                stamp, line = self.lines.get_nowait()
            except queue.Empty:
                return
            if line is EOF:
                self.lines.put((stamp, EOF))
                return

    def close(self, quit_command: str | None) -> None:
        """Ask the engine to quit, then kill it if it lingers."""
        if self.proc is None:
            return
        if quit_command and self.alive():
            try:
                self.send(quit_command)
            except EngineError:
                pass
        try:
            self.proc.wait(timeout=QUIT_GRACE if quit_command else 0.01)
        except subprocess.TimeoutExpired:
            self.kill()
        self._close_files()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._close_files()

    def _close_files(self) -> None:
        if self.proc is not None:
            for f in (self.proc.stdin, self.proc.stdout):
                try:
                    if f is not None:
                        f.close()
                except (OSError, ValueError):
                    pass
        if self._log:
            self._log.close()
            self._log = None


class _Client:
    """What the USI and GTP clients share: a name and the process, None until started."""

    name: str
    proc: EngineProcess | None

    @property
    def _running(self) -> EngineProcess:
        """The started process; EngineError("crash") before start() or after stop_process()."""
        if self.proc is None:
            raise EngineError("crash", f"{self.name}: engine not started")
        return self.proc


class UsiEngine(_Client):
    """A USI engine: handshake, per-side options, one `go` at a time, `gameover` with the result."""

    def __init__(
        self, command, name: str, options: dict | None = None, cwd: str | None = None, log_path: str | None = None
    ):
        self.cmdline, self.cwd, self.log_path = command, cwd, log_path
        self.name = name
        self.options = dict(options or {})
        self.proc: EngineProcess | None = None
        self.restarts = -1  # the first start is not a restart

    def start(self) -> None:
        """(Re)start the process: `usi` ... `usiok`, then every configured `setoption`."""
        self.stop_process()
        self.restarts += 1
        self.proc = EngineProcess(self.cmdline, self.name, self.cwd, self.log_path)
        self.proc.start()
        self._running.send("usi")
        deadline = time.monotonic() + USI_HANDSHAKE_TIMEOUT
        while True:
            _, line = self._running.readline(deadline)
            if line.strip() == "usiok":
                break
        for key, value in self.options.items():
            self._running.send(f"setoption name {key} value {value}")

    def ensure_started(self) -> None:
        if self.proc is None or not self.proc.alive():
            self.start()

    def new_game(self) -> None:
        """`isready` until `readyok` (blank keep-alive lines extend the wait), then `usinewgame`."""
        self._running.send("isready")
        cap = time.monotonic() + READY_CAP
        while True:
            _, line = self._running.readline(min(cap, time.monotonic() + READY_TIMEOUT))
            if line.strip() == "readyok":
                break
        self._running.send("usinewgame")

    def go(self, position: str, go: str, timeout: float) -> tuple[list[str], float]:
        """Send `position` and `go`; return the `bestmove` tokens after the keyword and the seconds the
        engine took (from writing `go` to the arrival of `bestmove`). Raises EngineError("timeout") when
        no `bestmove` arrives within `timeout` seconds."""
        self._running.send(position)
        start = time.monotonic()
        self._running.send(go)
        deadline = start + timeout
        while True:
            stamp, line = self._running.readline(deadline)
            tokens = line.split()
            if tokens and tokens[0] == "bestmove":
                if len(tokens) < 2:
                    raise EngineError("protocol", f"{self.name}: bestmove without a move")
                return tokens[1:], stamp - start

    def stop_search(self, grace: float) -> bool:
        """After a time loss: `stop` and wait `grace` s for the late `bestmove`; False if none came."""
        try:
            self._running.send("stop")
            deadline = time.monotonic() + grace
            while True:
                _, line = self._running.readline(deadline)
                if line.startswith("bestmove"):
                    return True
        except EngineError:
            return False

    def gameover(self, result: str) -> None:
        """Tell the engine the result from its side: win, lose or draw (a dead pipe is not an error)."""
        try:
            self._running.send(f"gameover {result}")
        except EngineError:
            pass

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()

    def stop_process(self) -> None:
        if self.proc is not None:
            self.proc.close("quit")
            self.proc = None


class GtpError(Exception):
    """The engine answered a GTP command with `?`."""


class GtpEngine(_Client):
    """A GTP engine: numbered commands, `=`/`?` answers ended by an empty line."""

    def __init__(self, command, name: str, cwd: str | None = None, log_path: str | None = None):
        self.cmdline, self.cwd, self.log_path = command, cwd, log_path
        self.name = name
        self.proc: EngineProcess | None = None
        self.next_id = 1
        self.restarts = -1

    def start(self) -> None:
        self.stop_process()
        self.restarts += 1
        self.proc = EngineProcess(self.cmdline, self.name, self.cwd, self.log_path)
        self.proc.start()
        self.command("name", GTP_START_TIMEOUT)  # the first answer: the engine is up and speaks GTP

    def ensure_started(self) -> None:
        if self.proc is None or not self.proc.alive():
            self.start()

    def command(self, text: str, timeout: float = GTP_TIMEOUT, grace: float | None = None) -> tuple[bool, str, float]:
        """Send one command; return (success, response text, seconds until the answer began). With `grace`, an
        answer may lack its terminating empty line and ends when no line follows for `grace` s (Pachi's
        gogui-playout_moves when it lists no move)."""
        cid = self.next_id
        self.next_id += 1
        start = time.monotonic()
        self._running.send(f"{cid} {text}")
        deadline = start + timeout
        while True:  # skip noise before the answer (a conforming engine prints none)
            stamp, line = self._running.readline(deadline)
            if line[:1] in ("=", "?"):
                break
        head, _, rest = line[1:].partition(" ")
        if head.strip() and head.strip() != str(cid):
            raise EngineError("protocol", f"{self.name}: answer id {head!r} to command {cid} ({text!r})")
        body = [rest.strip()]
        while True:
            try:
                _, more = self._running.readline(deadline if grace is None else min(deadline, time.monotonic() + grace))
            except EngineError as e:
                if grace is None or e.kind != "timeout" or time.monotonic() >= deadline:
                    raise
                break
            if more.strip() == "":
                break
            body.append(more.rstrip())
        return line[0] == "=", "\n".join(body).strip(), stamp - start

    def command_ok(self, text: str, timeout: float = GTP_TIMEOUT) -> str:
        """A command that must succeed: the response, or GtpError with the engine's message."""
        ok, response, _ = self.command(text, timeout)
        if not ok:
            raise GtpError(f"{self.name}: `{text}` failed: {response}")
        return response

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()

    def stop_process(self) -> None:
        if self.proc is not None:
            self.proc.close(f"{self.next_id} quit")
            self.proc = None
