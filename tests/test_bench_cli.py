"""`usi-engine bench ...` runs the real kernels and ends with a KEY=VALUE line."""

import subprocess
import sys

import pytest

pytestmark = pytest.mark.process


def _bench(*args):
    out = subprocess.run(
        [sys.executable, "-m", "usi_engine", "bench", *args], capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    last = out.stdout.strip().splitlines()[-1]
    return dict(field.split("=", 1) for field in last.split())


def test_bench_search_on_shogi_reports_positive_rates():
    fields = _bench("search", "--game", "shogi", "--seconds", "0.4", "--hash", "16")
    assert fields["game"] == "shogi" and fields["threads"] == "1"
    assert int(fields["nodes"]) > int(fields["samples"]) > 0
    assert float(fields["nps"]) > 0
    assert fields["restarts"] == "0"  # one thread never meets a node another thread is expanding
    per_position = [int(x) for x in fields["position_samples"].split(",")]
    assert len(per_position) == 8 and sum(per_position) == int(fields["samples"])


def test_bench_search_takes_engine_options_and_refuses_bad_ones():
    fields = _bench("search", "--seconds", "0.2", "--hash", "16", "--option", "QSearchRecapture=0")
    assert fields["game"] == "shogi" and int(fields["samples"]) > 0
    for bad in ("NoSuchOption=1", "QSearchRecapture=many", "QSearchRecapture"):
        out = subprocess.run(
            [sys.executable, "-m", "usi_engine", "bench", "search", "--option", bad],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert out.returncode != 0 and "usi-engine bench search:" in out.stderr, (bad, out.stderr)


def test_bench_perft_counts_the_known_leaves():
    fields = _bench("perft", "--depth", "3")
    assert fields["nodes"] == "25470"  # perft(3) of the start position
    assert float(fields["nps"]) > 0


# The behaviour fingerprint of the shogi search (Stockfish's `bench`): a commit that changes this number changes
# what the engine searches (search, evaluation, move generation or the shipped weights) and must say so.
# 542,824 before ExpansionWindow 250, 528,213 before the window expansion's second round sorted the children best
# first (a round any thread may join),
# 1,992,066 before Expansion window became the default, 2,009,320 before the dominated plain twins left the
# search's moves and recaptures were generated directly,
# 4,360,604 before QSearchRecapture 4, 4,441,530 before the EM and PE blocks, 4,722,673 before EF; 5,089,813 with
# EvalFile learned; 312,158 before progressive widening (WidenChildren 4) and the mate probes became the default;
# 477,701 with the hand-made weights (EvalFile handmade) before the learned default.npz (runs/learn-default v64)
BENCH_SIGNATURE_NODES = 499457


def test_bench_signature_is_pinned():
    fields = _bench("signature")
    pinned = {k: fields.pop(k) for k in ("nodes", "samples", "positions")}
    assert pinned == {"nodes": str(BENCH_SIGNATURE_NODES), "samples": "2000", "positions": "100"}
    assert float(fields["cpu_seconds"]) > 0 and int(fields["nodes_per_cpu_s"]) > 0 and len(fields) == 2
    assert _bench("signature", "--samples", "3")["samples"] == "300"  # the fixed work of a speed comparison


def test_bench_analysis_reports_each_minute_of_an_infinite_search():
    out = subprocess.run(
        [sys.executable, "-m", "usi_engine", "bench", "analysis", "--minutes", "0.05", "--threads", "1", "--hash", "8"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("minute=")]
    assert len(rows) == 1
    row = dict(field.split("=", 1) for field in rows[0].split())
    assert int(row["samples"]) > 0 and int(row["nodes"]) > int(row["samples"]) and float(row["resident_mb"]) > 0
    assert "every minute added samples: yes" in out.stdout
