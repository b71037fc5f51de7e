"""Search benchmark: `run_bench(game, threads, seconds)` prints `nodes=… nps=… samples_per_sec=…`.

Each position of a fixed set is searched for seconds/len(set) with a fresh tree (no reuse), after one
untimed warm-up search that loads or compiles the kernels. `nodes` = positions evaluated (the games'
`work`); cpu_ratio = process CPU time / wall time (≈ threads when the threads really run in parallel);
restarts = samples restarted from the root because a thread met a node another thread was expanding
(`C_COLLISIONS`: work that searched nothing); joined = children a thread evaluated for another thread's
expansion (`C_JOINED`: joint expansion, `--no-joint` turns it off; helper threads, `--helpers N`, -1 = all
but one as in the engine, 0 = every thread samples); position_samples = the samples of each position in
order (a sharp position gets tens of times fewer than a quiet one, so the total hides it).
"""

import time

from usi_engine.search import layout
from usi_engine.search import synthetic as syn
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions

# Synthetic stand-ins for shogi middle games: ~30 children per expansion, each leaf costing ~40 hash rounds
# (about the cost ratio of a quiescence search to the tree walk), deep enough never to run out.
SYNTHETIC_SET = [
    dict(seed=s, bmin=20, bmax=40, term_depth=200, term_permille=2, leaf_cost=40, value_range=600) for s in range(1, 5)
]


def _synthetic_set():
    return syn.SyntheticAdapter(max_moves=64), [syn.make_pos(**kw) for kw in SYNTHETIC_SET]


BENCH_SETS = {'synthetic': _synthetic_set}


def run_bench(game='synthetic', threads=1, seconds=5.0, hash_mb=256.0, out=print, sets=None, joint=True, helpers=-1):
    """Benchmark the search on `game`'s position set (from `sets`, default BENCH_SETS: a game's own
    benchmark passes its set in, so the core names no game; a set may add search settings, e.g. the
    engine's temperatures); prints one summary line, returns the numbers."""
    sets = BENCH_SETS if sets is None else sets
    if game not in sets:
        raise ValueError(f"no search benchmark for {game!r}; available: {', '.join(sets)}")
    made = sets[game]()  # (adapter, positions) or (adapter, positions, the game's SearchOptions keywords)
    adapter, positions = made[0], made[1]
    settings = dict(made[2]) if len(made) > 2 else {}
    settings.update(threads=threads, hash_mb=hash_mb, reuse=False, seed=1, joint=joint, helpers=helpers)
    options = SearchOptions(**settings)
    searcher = Searcher(adapter, options)
    searcher.search(positions[0], Limits(samples=200))  # warm-up / compile
    nodes = samples = restarts = joined = 0
    hashfull = 0
    per_position = []  # samples of each position: sharp positions differ from quiet ones by 10-30x
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for pos in positions:
        r = searcher.search(pos, Limits(time_ms=1000.0 * seconds / len(positions)))
        nodes += r.nodes
        samples += r.samples
        per_position.append(r.samples)
        restarts += int(searcher.pool.ctl[layout.C_COLLISIONS])
        joined += int(searcher.pool.ctl[layout.C_JOINED])
        hashfull = max(hashfull, r.hashfull)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    result = dict(
        game=game,
        threads=threads,
        helpers=searcher.helper_count(),
        seconds=wall,
        nodes=nodes,
        nps=nodes / wall,
        samples=samples,
        samples_per_sec=samples / wall,
        cpu_ratio=cpu / wall,
        restarts=restarts,
        joined=joined,
        hashfull=hashfull,
        position_samples=per_position,
    )
    out(
        f"game={game} threads={threads} helpers={result['helpers']} nodes={nodes} nps={result['nps']:.0f} "
        f"samples={samples} samples_per_sec={result['samples_per_sec']:.0f} cpu_ratio={result['cpu_ratio']:.2f} "
        f"restarts={restarts} joined={joined} hashfull={hashfull} seconds={wall:.2f} "
        f"position_samples={','.join(map(str, per_position))}"
    )
    return result


def main(argv=None, extra_sets=None, default='synthetic'):
    """`usi-engine bench search [--game G] [--threads N] [--seconds S]` over BENCH_SETS plus `extra_sets`."""
    import argparse

    sets = {**BENCH_SETS, **(extra_sets or {})}
    ap = argparse.ArgumentParser(prog='usi-engine bench search', description=__doc__)
    ap.add_argument('--game', default=default, choices=sorted(sets))
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--seconds', type=float, default=5.0)
    ap.add_argument('--hash', type=float, default=256.0, help='node pool budget in MB')
    ap.add_argument('--no-joint', action='store_true', help='threads do not join each other\'s expansions')
    ap.add_argument('--helpers', type=int, default=-1, help='threads that only evaluate expansions (-1 = all but one)')
    a = ap.parse_args(argv)
    run_bench(a.game, a.threads, a.seconds, a.hash, sets=sets, joint=not a.no_joint, helpers=a.helpers)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
