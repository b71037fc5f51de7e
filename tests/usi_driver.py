"""A GUI stand-in for the USI tests: drives the real engine process (`python -m usi_engine`) over pipes.

The project's pipe driver (learn/match/engines.py) timestamps every engine line, so tests can measure latencies
(usiok, stop -> bestmove, readyok during search) and count bestmoves. Shared helpers: `running_engine`
(a started, ready engine for a module fixture), `option` (set, then restore), `go_and_answer`, `bestmoves`,
`assert_quiet`, `legal_in` (cshogi as the legality oracle).
"""

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from learn.match.engines import EngineError, EngineProcess

ROOT = Path(__file__).resolve().parent.parent
FIRST_ISREADY_TIMEOUT = 600.0  # cold numba cache: the first isready compiles everything


class UsiProcess:
    """`python -m usi_engine [args]` on the project's pipe driver (learn/match/engines.EngineProcess), with
    this checkout first on PYTHONPATH; the transcript and stderr go to a temporary log shown on failures."""

    def __init__(self, env=None, args=()):
        full_env = dict(os.environ, **(env or {}))
        full_env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
        fd, self.log_path = tempfile.mkstemp(prefix="usi-test-", suffix=".log")
        os.close(fd)
        self.engine = EngineProcess(
            [sys.executable, "-m", "usi_engine", *args],
            "usi-engine",
            cwd=str(ROOT),
            log_path=self.log_path,
            env=full_env,
        )
        self.engine.start()
        self.proc = self.engine.proc

    def log_tail(self, chars=2000):
        try:
            return Path(self.log_path).read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def send(self, line):
        """Write one line; returns its time.monotonic()."""
        return self.engine.send(line)

    def expect(self, predicate, timeout=30.0):
        """Lines up to and including the first one satisfying predicate: (lines, time of that line)."""
        seen = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                t, line = self.engine.readline(deadline)
            except EngineError as e:
                raise AssertionError(
                    f"{e.kind} after {timeout} s at most; got {seen[-20:]}; log: {self.log_tail()}"
                ) from None
            seen.append(line)
            if predicate(line):
                return seen, t

    def expect_prefix(self, prefix, timeout=30.0):
        return self.expect(lambda s: s.startswith(prefix), timeout)

    def drain(self, wait=0.3):
        """Lines arriving within `wait` seconds."""
        out = []
        deadline = time.monotonic() + wait
        while True:
            try:
                _, line = self.engine.readline(deadline)
            except EngineError:
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
        """`usi`, the (name, value) options and the first `isready`; the lines up to `readyok`."""
        self.usi()
        for name, value in options:
            self.send(f"setoption name {name} value {value}")
        return self.isready(FIRST_ISREADY_TIMEOUT)[0]

    def close(self):
        self.engine.close("quit")
        with contextlib.suppress(OSError):
            os.unlink(self.log_path)


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
    moves = tokens[tokens.index("moves") + 1 :] if "moves" in tokens else []
    head = tokens[: tokens.index("moves")] if "moves" in tokens else tokens
    board = cshogi.Board() if head == ["startpos"] else cshogi.Board(" ".join(head[1:]))
    for m in moves:
        assert board.push_usi(m), m
    return move in [cshogi.move_to_usi(m) for m in board.legal_moves]
