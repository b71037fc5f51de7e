"""`usi-engine warmup` compiles into numba's cache what the engine's isready needs: after it, an engine process
compiles nothing (the cache's kernel count stays the same through its isready and first move)."""

import os
import subprocess
import sys

import pytest

from tests.usi_driver import FIRST_ISREADY_TIMEOUT, ROOT, UsiProcess, go_and_answer, legal_in
from usi_engine.numba_cache import cache_entries
from usi_engine.warmup import SHOGI_GROUPS

pytestmark = pytest.mark.process

WARMUP_TIMEOUT = 900.0  # an empty cache: every shogi kernel compiles


def warmup(*targets, env=None):
    """`python -m usi_engine warmup TARGET...` from this checkout; its output lines."""
    full_env = dict(os.environ, **(env or {}))
    full_env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    out = subprocess.run(
        [sys.executable, "-m", "usi_engine", "warmup", *targets],
        cwd=str(ROOT),
        env=full_env,
        capture_output=True,
        text=True,
        timeout=WARMUP_TIMEOUT,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def group_line(lines, group):
    """The warm-up's line of one kernel group."""
    found = [s for s in lines if s.startswith(f"warmup: {group} ")]
    assert len(found) == 1, lines
    return found[0]


def test_after_warmup_an_engine_compiles_nothing():
    """The default numba cache folder of this checkout (the tests' shared one): warm it, then a GUI-like session
    must load every kernel: with the default options (two sampling threads under progressive widening) and
    then without widening (the automatic helper thread, the sample kernel's other variant), neither isready
    reports a compiled group and neither they nor the moves add a kernel to the cache."""
    lines = warmup()  # the default target: shogi
    for group in SHOGI_GROUPS:
        group_line(lines, group)
    assert lines[-1].startswith("warmup: done in ")
    folder = os.environ["NUMBA_CACHE_DIR"]  # set by usi_engine's import (numba_cache.configure); inherited
    before = cache_entries(folder)
    assert before > 0
    engine = UsiProcess()
    try:
        engine.usi()
        for name, value in (("Threads", 2), ("USI_Hash", 64)):
            engine.send(f"setoption name {name} value {value}")
        for options in ((), (("WidenChildren", 0),)):
            for name, value in options:
                engine.send(f"setoption name {name} value {value}")
            ready, _ = engine.isready(FIRST_ISREADY_TIMEOUT)
            assert [s for s in ready if s.startswith("info string compiled")] == [], (options, ready)
            position = "position startpos moves 2g2f"
            _, answer = go_and_answer(engine, position, "go btime 0 wtime 0 byoyomi 1000")
            assert legal_in(position, answer[1])
    finally:
        engine.close()
    assert cache_entries(folder) == before


@pytest.mark.slow
def test_warmup_of_an_empty_cache_compiles_then_loads(tmp_path):
    """The smallest kernel group (the rules core) into an empty cache folder: the first run compiles and says so,
    the second loads everything from the cache."""
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    first = group_line(warmup("rules", env=env), "rules")
    compiled = cache_entries(str(tmp_path / "numba"))
    assert compiled > 0 and first.endswith(f", {compiled} kernels compiled"), first
    second = group_line(warmup("rules", env=env), "rules")
    assert second.endswith(", loaded from the cache"), second
    assert cache_entries(str(tmp_path / "numba")) == compiled
