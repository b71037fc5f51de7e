"""Benchmarks of the shogi search glue: ``usi-engine bench qsearch`` (quiescence nodes per second), the
shogi position set of ``usi-engine bench search`` (the MCSS core's runner, usi_engine/search/bench.py),
``usi-engine bench signature``, the behaviour fingerprint of the whole shogi search (Stockfish's `bench`),
and ``usi-engine bench analysis``, a long `go infinite` (GUI analysis mode) that prints what every minute
added and the process's resident memory.
"""

import math
import resource
import sys
import threading
import time

from numba import njit

from usi_engine.search import bench as search_bench
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions
from usi_engine.shogi.bench import bench_positions
from usi_engine.shogi_eval.bench import rates, report, timed
from usi_engine.shogi_eval.evalfile import load_weights
from usi_engine.shogi_eval.incremental import pp_block_zero

from .game import ShogiAdapter, make_params
from .moveprior import option_model
from .quiescence import DEFAULT_MAX_DEPTH, INF, QBuffers, qsearch

SEARCH_POSITIONS = 8  # the first positions of the set (middle games) for `bench search --game shogi`
SIGNATURE_SAMPLES = 20  # samples per position of `bench signature`
SIGNATURE_SEED = 1
SIGNATURE_HASH_MB = 64.0  # large enough never to fill: a full pool would stop the search at a clock poll


@njit(cache=True, nogil=True)
def _qsearch_loop(positions, w, max_depth, moves, keys, pv, frames, counts, nodes, gains, removed, pp_zero):
    total = 0.0
    for i in range(positions.shape[0]):
        pos = positions[i]
        buffers = moves, keys, pv, frames, counts, nodes, gains, removed
        total += qsearch(pos, w, -INF, INF, max_depth, *buffers, False, 0.0, 0, pp_zero)
    return total


def bench_qsearch(weights_path=None, max_depth=DEFAULT_MAX_DEPTH, out=sys.stdout):
    """Quiescence nodes per second (one thread, full window), as the search runs them (PP sums skipped when
    the PP block is all zero) and, for reference in the same run, with the PP sums; returns the KEY=VALUE
    dict it printed."""
    w = load_weights(weights_path)
    positions = bench_positions()
    buf = QBuffers(max_depth)
    pp_zero = pp_block_zero(w)
    rate = {}
    for kind, skip in (("engine", pp_zero), ("pp", False)):

        def run(z=skip):
            before = buf.nodes[0]
            _qsearch_loop(positions, w, max_depth, *buf.args(), z)
            return int(buf.nodes[0] - before)

        rate[kind] = timed(run)
    n, dt, cpu = rate["engine"]
    n_pp, _, cpu_pp = rate["pp"]
    result = {
        "positions": positions.shape[0],
        "max_depth": max_depth,
        **rates("node", n, dt, cpu),
        "pp_zero": int(pp_zero),
        "nodes_per_cpu_s_pp": round(n_pp / cpu_pp),
    }
    print(
        f"qsearch: {n} nodes in {dt:.2f} s ({cpu:.2f} s CPU) = {n / dt:,.0f} nodes/s, {n / cpu:,.0f} nodes/CPU-s "
        f"({n_pp / cpu_pp:,.0f} with the PP sums{'' if pp_zero else '; PP in use'})",
        file=out,
    )
    return report(result, out)


def shogi_search_set(overrides=()):
    """(adapter, positions, search settings) of the shogi search benchmark: the engine as a GUI gets it (the
    USI option defaults with any config file's overrides, the shipped weights) with `overrides`, (name, value) pairs
    of USI options, applied as setoption would."""
    from usi_engine.options import OptionValues, game_params, search_options

    values = OptionValues()
    for name, text in overrides:
        values.set(name, text)
    if values["EvalFile"]:
        raise ValueError("bench search runs the shipped weights; EvalFile is not taken")
    adapter = ShogiAdapter(params=make_params(**game_params(values)), move_model=option_model(values["MovePriorFile"]))
    settings = {k: v for k, v in search_options(values).items() if k not in ("threads", "hash_mb", "seed")}
    return adapter, [p.copy() for p in bench_positions()[:SEARCH_POSITIONS]], settings


def search_main(argv=None):
    """`usi-engine bench search [--game shogi|synthetic] [--option Name=Value ...] ...` (see
    usi_engine/search/bench.py); `--option` sets a USI option of the shogi set (repeatable)."""
    rest, overrides = [], []
    args = list(argv or [])
    while args:
        arg = args.pop(0)
        if arg == "--option" or arg.startswith("--option="):
            text = arg.partition("=")[2] if arg.startswith("--option=") else (args.pop(0) if args else "")
            name, eq, value = text.partition("=")
            if not eq or not name:
                raise SystemExit(f"usi-engine bench search: --option wants Name=Value, got {text!r}")
            overrides.append((name, value))
        else:
            rest.append(arg)
    try:
        made = shogi_search_set(overrides)  # a bad option is refused before any search runs
    except ValueError as e:
        raise SystemExit(f"usi-engine bench search: {e}") from None
    return search_bench.main(rest, extra_sets={"shogi": lambda: made}, default="shogi")


def bench_signature(samples=SIGNATURE_SAMPLES, out=sys.stdout):
    """Search every position of the committed set for a fixed number of samples (one thread, fixed seed,
    fresh tree, no clock) with the shipped weights and the engine's default options (the USI defaults, as
    shipped); prints and returns `nodes=<total> samples=<total> positions=<count> cpu_seconds=<s>
    nodes_per_cpu_s=<n>`. The node total changes exactly when the search's or the evaluation's behaviour (or a
    default) changes, so a test pins it and a commit that changes it says so. The CPU time of that fixed work
    (kernels loaded beforehand) is the speed figure that a loaded or noisy machine disturbs least: compare two
    commits by alternating runs with the same `samples` (their node totals must agree)."""
    from usi_engine.options import OptionValues, game_params, search_options

    defaults = OptionValues()
    adapter = ShogiAdapter(params=make_params(**game_params(defaults)))
    settings = search_options(defaults)
    settings.update(threads=1, hash_mb=SIGNATURE_HASH_MB, seed=SIGNATURE_SEED)
    positions = bench_positions()
    Searcher(adapter, SearchOptions(reuse=False, **settings)).search(positions[0].copy(), Limits(samples=2))  # load
    searcher = Searcher(adapter, SearchOptions(reuse=False, **settings))
    nodes = total_samples = 0
    cpu = time.process_time()
    for pos in positions:
        result = searcher.search(pos.copy(), Limits(samples=samples))
        nodes += result.nodes
        total_samples += result.samples
    cpu = time.process_time() - cpu
    result = {
        "nodes": nodes,
        "samples": total_samples,
        "positions": positions.shape[0],
        "cpu_seconds": round(cpu, 3),
        "nodes_per_cpu_s": round(nodes / max(cpu, 1e-9)),
    }
    return report(result, out)


ANALYSIS_SFEN = "ln1g3nl/1r1sk1g2/p1ppppspp/6p2/1p5P1/2P6/PPSPPPP1P/2G2S1R1/LN2KG1NL b Bb 21"  # a middlegame
RSS_ALLOWANCE_MB = 256  # what the process may hold beyond USI_Hash (interpreter, numba, code, buffers)


def resident_mb() -> float:
    """Current resident memory of this process in MB (/proc on Linux; the peak elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024.0 * 1024.0) if sys.platform == "darwin" else peak / 1024.0


def bench_analysis(minutes=10.0, threads=None, hash_mb=256.0, sfen=ANALYSIS_SFEN, out=sys.stdout):
    """An infinite search (the engine's default search options, `threads` default = the USI default) stopped
    after `minutes`; prints one line per minute (samples and nodes added in that minute, hashfull, pool
    prunes so far, resident MB) and the verdict on memory (resident <= hash_mb + RSS_ALLOWANCE_MB). Returns
    the per-minute rows."""
    from usi_engine.options import OptionValues
    from usi_engine.shogi import Board

    if threads is None:
        threads = int(OptionValues()["Threads"])
    searcher = Searcher(ShogiAdapter(), SearchOptions(threads=threads, hash_mb=hash_mb, seed=1, reuse=False))
    searcher.search(Board(sfen).pos, Limits(samples=200))  # compile and allocate before the clock starts
    rows: list[dict] = []
    last = {"samples": 0, "nodes": 0}
    start = time.monotonic()
    started_mb = resident_mb()
    print(
        f"analysis: go infinite for {minutes:g} min, threads {threads}, USI_Hash {hash_mb:g} MB, "
        f"resident after warm-up {started_mb:.0f} MB",
        file=out,
    )

    def add_row(result):
        row = {
            "minute": len(rows) + 1,
            "samples": result.samples - last["samples"],
            "nodes": result.nodes - last["nodes"],
            "hashfull": result.hashfull,
            "prunes": searcher.prunes,
            "resident_mb": round(resident_mb(), 1),
        }
        last.update(samples=result.samples, nodes=result.nodes)
        rows.append(row)
        report(row, out, flush=True)

    def on_info(result):
        if int((time.monotonic() - start) // 60.0) > len(rows):  # a minute has ended
            add_row(result)

    timer = threading.Timer(minutes * 60.0, searcher.stop)
    timer.start()
    try:
        final = searcher.search(Board(sfen).pos, Limits(infinite=True), on_info=on_info, info_interval=1.0)
    finally:
        timer.cancel()
    if len(rows) < math.ceil(minutes):
        add_row(final)
    peak = max(r["resident_mb"] for r in rows)
    growing = all(r["samples"] > 0 for r in rows)
    bound = hash_mb + RSS_ALLOWANCE_MB
    print(
        f"analysis: every minute added samples: {'yes' if growing else 'NO'}; resident after warm-up "
        f"{started_mb:.0f} MB, peak {peak:.0f} MB (growth {peak - started_mb:+.0f} MB); bound USI_Hash + "
        f"{RSS_ALLOWANCE_MB} = {bound:.0f} MB: {'within' if peak <= bound else 'EXCEEDED'}",
        file=out,
    )
    return rows
