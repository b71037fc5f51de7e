"""A GUI stand-in for the USI tests: drives the real engine process (`python -m usi_engine`) over pipes.

A reader thread timestamps every engine line into a queue, so tests can measure latencies
(usiok, stop -> bestmove, readyok during search) and count bestmoves. Shared helpers: `running_engine`
(a started, ready engine for a module fixture), `option` (set, then restore), `go_and_answer`, `bestmoves`,
`assert_quiet`, `legal_in` (cshogi as the legality oracle).
"""

import contextlib
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST_ISREADY_TIMEOUT = 600.0      # cold numba cache: the first isready compiles everything


class UsiProcess:
    def __init__(self, env=None):
        full_env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
        self.proc = subprocess.Popen([sys.executable, "-m", "usi_engine"], cwd=ROOT, env=full_env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        self.lines = queue.Queue()
        self.log = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            item = (time.perf_counter(), line.rstrip("\r\n"))
            self.log.append(item)
            self.lines.put(item)
        self.lines.put((time.perf_counter(), None))

    def send(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return time.perf_counter()

    def expect(self, predicate, timeout=30.0):
        """Lines up to and including the first one satisfying predicate: (lines, time of that line)."""
        seen = []
        end = time.perf_counter() + timeout
        while True:
            left = end - time.perf_counter()
            if left <= 0:
                raise AssertionError(f"timeout after {timeout} s; got {seen[-20:]}")
            try:
                t, line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"engine exited; stderr: {self.proc.stderr.read()[-2000:]}; got {seen[-20:]}")
            seen.append(line)
            if predicate(line):
                return seen, t

    def expect_prefix(self, prefix, timeout=30.0):
        return self.expect(lambda s: s.startswith(prefix), timeout)

    def drain(self, wait=0.3):
        """Lines arriving within `wait` seconds."""
        out = []
        end = time.perf_counter() + wait
        while True:
            left = end - time.perf_counter()
            if left <= 0:
                return out
            try:
                _, line = self.lines.get(timeout=left)
            except queue.Empty:
                return out
            if line is None:
                return out
            out.append(line)

    def usi(self):
        """`usi` -> the lines up to `usiok` and the seconds it took."""
        t0 = self.send("usi")
        lines, t1 = self.expect(lambda s: s == "usiok", 10.0)
        return lines, t1 - t0

    def isready(self, timeout=30.0):
        """`isready` -> the lines up to `readyok` and the seconds it took."""
        t0 = self.send("isready")
        lines, t1 = self.expect(lambda s: s == "readyok", timeout)
        return lines, t1 - t0

    def handshake(self, options=()):
        self.usi()
        for name, value in options:
            self.send(f"setoption name {name} value {value}")
        self.isready(FIRST_ISREADY_TIMEOUT)

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send("quit")
            except (BrokenPipeError, OSError):
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for s in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                s.close()
            except OSError:
                pass


@contextlib.contextmanager
def running_engine(options=(), env=None):
    """An engine process after `usi`, the (name, value) options and `isready`; closed afterwards."""
    engine = UsiProcess(env)
    try:
        engine.handshake(options)
        yield engine
    finally:
        engine.close()


@contextlib.contextmanager
def option(eng, name, value, restore):
    """`setoption name value` for the body of a with-block, then `restore`."""
    eng.send(f"setoption name {name} value {value}")
    try:
        yield
    finally:
        eng.send(f"setoption name {name} value {restore}")


def bestmoves(lines):
    return [s for s in lines if s.startswith("bestmove")]


def go_and_answer(eng, position, go, timeout=15.0):
    """Send `position` and `go`; the lines up to the bestmove and the bestmove's tokens."""
    eng.send(position)
    eng.send(go)
    lines, _ = eng.expect_prefix("bestmove", timeout)
    return lines, lines[-1].split()


def assert_quiet(eng, wait=0.5):
    """No stray bestmove after the one already read."""
    assert bestmoves(eng.drain(wait)) == []


def legal_in(position_cmd, move):
    """Whether `move` is legal in the position of a `position ...` command (cshogi as the oracle)."""
    import cshogi
    tokens = position_cmd.split()[1:]
    moves = tokens[tokens.index("moves") + 1:] if "moves" in tokens else []
    head = tokens[:tokens.index("moves")] if "moves" in tokens else tokens
    board = cshogi.Board() if head == ["startpos"] else cshogi.Board(" ".join(head[1:]))
    for m in moves:
        assert board.push_usi(m), m
    return move in [cshogi.move_to_usi(m) for m in board.legal_moves]
