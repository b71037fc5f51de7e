"""Playout benchmark: ``python -m usi_engine.go.bench [--size 9] [--seconds 3] [--search [--policy P]
[--move-prior]] [--playout-patterns] [--playout-tactics]``.

Runs playouts from the empty board on one thread (after a warm-up call that compiles or loads the
kernels), then game.expand with one playout per child (children/s = playouts/s inside the search's
leaf evaluation, including move generation with superko checks), and prints ``playouts_per_sec=X
moves_per_sec=Y`` as its last line. With ``--search`` it instead runs the full search (Searcher, one
thread, fresh tree, policy rave by default) from the empty board and prints
``search_playouts_per_sec=X`` last (playouts = children evaluated, one playout each). ``--playout-patterns``
measures the playouts with MoGo's pattern rule on (playout.py rule 5), ``--playout-tactics`` with the local tactics
(rules 0, 3, 4 and the patterns around the mover's previous move). ``--search --move-prior`` runs the search
twice in the same process, first without and then with the shipped learned move prior (moveprior.py, the default
on boards of 15 and more), and prints what the prior's features cost as ``move_prior_speed_ratio=X`` last.
"""

import argparse
import time

import numpy as np

from usi_engine.go.layout import new_pos
from usi_engine.go.playout import move_cap, playout_policy, run_playouts, seed_rng
from usi_engine.go.workspace import new_workspace

BATCH = 500


def measure(size: int = 9, seconds: float = 3.0, seed: int = 1, policy: int = 0):
    """(playouts/s, moves/s, playouts per CPU second, mean moves per playout, Black's winrate) of the playouts with
    the policy bitmask `policy` (playout.playout_policy)."""
    pos = new_pos(size, komi=7.0)
    ws, rng = new_workspace(), seed_rng(seed)
    none = np.empty(0, dtype=np.float64)
    cap = move_cap(size)
    run_playouts(pos, ws, rng, 10, cap, none, none, policy)  # compile / load from cache
    n = moves = 0
    wins = 0.0
    start, cpu = time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        w, m, _ = run_playouts(pos, ws, rng, BATCH, cap, none, none, policy)
        n += BATCH
        moves += m
        wins += w
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    return n / elapsed, moves / elapsed, n / cpu, moves / n, wins / n


def measure_expand(size: int = 9, seconds: float = 1.0, seed: int = 2, patterns: bool = False, tactics: bool = False):
    """(children/s, playout moves/s) of game.expand with K = 1 from the empty board."""
    from usi_engine.go import game

    pos = new_pos(size, komi=7.0)
    moves = np.empty(game.MAX_MOVES, dtype=np.int32)
    values = np.empty(game.MAX_MOVES, dtype=np.float64)
    flags = np.empty(game.MAX_MOVES, dtype=np.int8)
    weights, rng = np.empty(0), seed_rng(seed)
    params = game.default_params(playouts=1, playout_patterns=patterns, playout_tactics=tactics)
    game.expand(pos, weights, params, rng, moves, values, flags)
    children = work = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        n, w = game.expand(pos, weights, params, rng, moves, values, flags)
        children += n
        work += w
    elapsed = time.perf_counter() - start
    return children / elapsed, work / elapsed


def measure_search(
    size: int = 9,
    seconds: float = 3.0,
    policy: str = "rave",
    seed: int = 1,
    patterns: bool = False,
    move_prior: bool = False,
    tactics: bool = False,
):
    """(playouts/s wall, playouts per CPU second, KEY=VALUE line) of the full one-thread search; move_prior: RAVE's
    prior mixes in the shipped learned move prior at weight 1."""
    from usi_engine.go.game import GoAdapter, default_params
    from usi_engine.go.moveprior import read_model, shipped_model
    from usi_engine.search.searcher import Searcher
    from usi_engine.search.settings import Limits, SearchOptions

    pos = new_pos(size, komi=7.0)
    params = default_params(playout_patterns=patterns, playout_tactics=tactics, prior_moves=1.0 if move_prior else 0.0)
    adapter = GoAdapter(size, params)
    if move_prior:
        adapter.set_move_model(read_model(shipped_model(19))[0])
    searcher = Searcher(
        adapter,
        SearchOptions(policy=policy, hash_mb=256, reuse=False, seed=seed, t_sel=300.0, t_back=300.0, c_uct=300.0),
    )
    searcher.search(pos, Limits(samples=2))  # compile / load from cache
    cpu = time.process_time()
    r = searcher.search(pos, Limits(time_ms=1000.0 * seconds))
    cpu = max(time.process_time() - cpu, 1e-9)
    pps = r.children / (r.time_ms / 1000.0)
    line = (
        f"size={size} policy={policy} move_prior={int(move_prior)} samples={r.samples} playouts={r.children} "
        f"depth={r.depth} best={r.best_move_str} "
        f"playouts_per_cpu_sec={r.children / cpu:.0f} search_playouts_per_sec={pps:.0f}"
    )
    return pps, r.children / cpu, line


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=9)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--search", action="store_true", help="benchmark the full search instead")
    ap.add_argument("--policy", choices=("rave", "softmax", "uct"), default="rave")
    ap.add_argument("--playout-patterns", action="store_true", help="playouts with MoGo's pattern rule")
    ap.add_argument("--playout-tactics", action="store_true", help="playouts with the local tactics")
    ap.add_argument(
        "--move-prior", action="store_true", help="with --search: the search without, then with the learned move prior"
    )
    args = ap.parse_args(argv)
    patterns, tactics = args.playout_patterns, args.playout_tactics
    if args.search and args.move_prior:
        reference, _, line = measure_search(args.size, args.seconds, args.policy, patterns=patterns, tactics=tactics)
        print(line)
        with_prior, _, line = measure_search(
            args.size, args.seconds, args.policy, patterns=patterns, move_prior=True, tactics=tactics
        )
        print(line)
        print(f"move_prior_speed_ratio={with_prior / reference:.3f}")
        return
    if args.search:
        print(measure_search(args.size, args.seconds, args.policy, patterns=patterns, tactics=tactics)[2])
        return
    pps, mps, per_cpu, length, black = measure(args.size, args.seconds, policy=playout_policy(patterns, tactics))
    children, work = measure_expand(args.size, min(args.seconds, 1.0), patterns=patterns, tactics=tactics)
    print(f"size={args.size} mean_moves={length:.1f} black_winrate={black:.3f} playouts_per_cpu_sec={per_cpu:.0f}")
    print(f"expand_k1_children_per_sec={children:.0f} expand_playout_moves_per_sec={work:.0f}")
    print(f"playouts_per_sec={pps:.0f} moves_per_sec={mps:.0f}")


if __name__ == "__main__":
    main()
