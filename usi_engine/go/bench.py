"""Playout benchmark: ``python -m usi_engine.go.bench [--size 9] [--seconds 3] [--search [--policy P]
[--move-prior] [--expand-after E]] [--playout-patterns] [--playout-tactics] [--playout-ladders]
[--playout-selfatari] [--playout-moggy] [--playout-sacrifice] [--playout-local] [--playout-lgrf] [--playout-softmax |
--softmax-ratio N | --ladders-ratio N | --selfatari-ratio N | --moggy-ratio N | --sacrifice-ratio N
| --local-ratio N]``.

Runs playouts from the empty board on one thread (after a warm-up call that compiles or loads the
kernels), then game.expand with one playout per child (children/s = playouts/s inside the search's
leaf evaluation, including move generation with superko checks), and prints ``playouts_per_sec=X
moves_per_sec=Y`` as its last line. With ``--search`` it instead runs the full search (Searcher, one
thread, fresh tree, policy rave by default) from the empty board and prints
``search_playouts_per_sec=X`` last (playouts = children evaluated, one playout each). ``--playout-patterns``
measures the playouts with MoGo's pattern rule on (playout.py rule 5), ``--playout-tactics`` with the local tactics
(rules 0, 3, 4 and the patterns around the mover's previous move). ``--search --move-prior`` runs the search
twice in the same process, first without and then with the board size's shipped learned move prior (moveprior.py,
the default on every board, in Pachi's per-move form below 15x15), and prints what the prior's features cost as
``move_prior_speed_ratio=X`` last.
``--playout-softmax`` measures the playouts with rule 6 drawn by the shipped move model's 3x3 gammas
(softplayout.py). ``--softmax-ratio N`` instead runs N alternated pairs of playout measurements in one process,
without and then with the softmax draw (the other flags as given), one line each, and prints the ratio of the
summed playouts per CPU second, with over without, as ``softmax_speed_ratio=X`` last. ``--playout-ladders`` measures
the playouts whose atari escapes avoid working ladders (POLICY_LADDERS); ``--ladders-ratio N`` runs N alternated pairs
without and with it and prints ``ladders_speed_ratio=X`` last; ``--playout-selfatari`` and ``--selfatari-ratio N`` do
the same for the refusal of bad single-stone self-ataris (POLICY_SELFATARI), ``--playout-moggy`` and ``--moggy-ratio N``
for Pachi's moggy patterns in rule 5 (POLICY_MOGGY; the flag turns the rule on, the ratio compares it with the MoGo
set of ``--playout-patterns``), ``--playout-sacrifice`` and ``--sacrifice-ratio N`` for the killing sacrifices
(POLICY_SACRIFICE), ``--playout-local`` and ``--local-ratio N`` for Pachi's local atari and two-liberty checks
(POLICY_MOGGY_LOCAL); ``--search --playout-lgrf`` the search with the last good reply (POLICY_LGRF). ``--search
--expand-after E`` runs the
search twice, first with the default expansion and then with MoGo's tree (leaf playouts until an edge has E of them,
no child simulated at an expansion: GTP ``--expand-after E --rave-children none``), and prints the samples and
playouts per second of each and ``expand_after_sample_ratio=X`` last (samples per second, with over without).
"""

import argparse
import time

import numpy as np

from usi_engine.go.layout import new_pos
from usi_engine.go.playout import (
    POLICY_LADDERS,
    POLICY_MOGGY,
    POLICY_MOGGY_LOCAL,
    POLICY_PATTERNS,
    POLICY_SACRIFICE,
    POLICY_SELFATARI,
    POLICY_SOFTMAX,
    move_cap,
    playout_policy,
    run_playouts,
    seed_rng,
)
from usi_engine.go.workspace import new_workspace

# The playout bits whose cost `--NAME-ratio N` measures (policy_ratio).
RATIO_BITS = {
    "softmax": POLICY_SOFTMAX,
    "ladders": POLICY_LADDERS,
    "selfatari": POLICY_SELFATARI,
    "moggy": POLICY_MOGGY,
    "sacrifice": POLICY_SACRIFICE,
    "local": POLICY_MOGGY_LOCAL,
}

BATCH = 500


def _gammas(softmax: bool):
    """The shipped softmax playout table when `softmax`, else None."""
    if not softmax:
        return None
    from usi_engine.go.softplayout import playout_table

    return playout_table()


def measure(size: int = 9, seconds: float = 3.0, seed: int = 1, policy: int = 0, gammas=None):
    """(playouts/s, moves/s, playouts per CPU second, mean moves per playout, Black's winrate) of the playouts with
    the policy bitmask `policy` (playout.playout_policy; with POLICY_SOFTMAX the gamma table `gammas`)."""
    pos = new_pos(size, komi=7.0)
    ws, rng = new_workspace(), seed_rng(seed)
    none = np.empty(0, dtype=np.float64)
    cap = move_cap(size)
    run_playouts(pos, ws, rng, 10, cap, none, none, policy, gammas)  # compile / load from cache
    n = moves = 0
    wins = 0.0
    start, cpu = time.perf_counter(), time.process_time()
    while n == 0 or time.perf_counter() - start < seconds:  # at least one batch
        w, m, _ = run_playouts(pos, ws, rng, BATCH, cap, none, none, policy, gammas)
        n += BATCH
        moves += m
        wins += w
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    return n / elapsed, moves / elapsed, n / cpu, moves / n, wins / n


def measure_expand(
    size: int = 9,
    seconds: float = 1.0,
    seed: int = 2,
    patterns: bool = False,
    tactics: bool = False,
    softmax: bool = False,
    ladders: bool = False,
    selfatari: bool = False,
    moggy: bool = False,
    sacrifice: bool = False,
    local: bool = False,
):
    """(children/s, playout moves/s) of game.expand with K = 1 from the empty board."""
    from usi_engine.go import game

    pos = new_pos(size, komi=7.0)
    moves = np.empty(game.MAX_MOVES, dtype=np.int32)
    values = np.empty(game.MAX_MOVES, dtype=np.float64)
    flags = np.empty(game.MAX_MOVES, dtype=np.int8)
    weights, rng = game.pack_weights(None, None, None, _gammas(softmax)), seed_rng(seed)
    params = game.default_params(
        playouts=1,
        playout_patterns=patterns,
        playout_tactics=tactics,
        playout_softmax=softmax,
        playout_ladders=ladders,
        playout_selfatari=selfatari,
        playout_moggy=moggy,
        playout_sacrifice=sacrifice,
        playout_local=local,
    )
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
    softmax: bool = False,
    ladders: bool = False,
    expand_after: int = 0,
    selfatari: bool = False,
    moggy: bool = False,
    sacrifice: bool = False,
    local: bool = False,
    lgrf: bool = False,
):
    """(playouts/s wall, samples/s wall, KEY=VALUE line) of the full one-thread search; move_prior: RAVE's prior
    mixes in the board size's shipped learned move prior at weight 1, below LARGE_BOARD in the player's form there
    (per-move counts 14 + 210 sqrt(P), MC visits only); softmax: the softmax playouts; ladders: POLICY_LADDERS;
    selfatari: POLICY_SELFATARI; moggy: Pachi's moggy patterns in rule 5 (POLICY_MOGGY); sacrifice: POLICY_SACRIFICE;
    local: POLICY_MOGGY_LOCAL; lgrf: POLICY_LGRF (the last good reply, its table in the adapter's weights);
    expand_after > 0: leaf playouts until an edge has that many, no child simulated at an expansion (RAVE_NONE)."""
    from usi_engine.go.game import RAVE_NONE, RAVE_UNIFORM, GoAdapter, default_params, moves_form
    from usi_engine.go.moveprior import read_model, shipped_model
    from usi_engine.go.player import PlayerSettings
    from usi_engine.search.searcher import Searcher
    from usi_engine.search.settings import Limits, SearchOptions

    pos = new_pos(size, komi=7.0)
    player = PlayerSettings()  # the player's form of the prior for this board size
    per_move = move_prior and player.per_move_counts(size)
    params = default_params(
        prior_counts=per_move,
        moves_experience_form=(*moves_form(size), player.prior_moves_amaf if per_move else 1.0),
        playout_patterns=patterns,
        playout_tactics=tactics,
        playout_softmax=softmax,
        playout_ladders=ladders,
        playout_selfatari=selfatari,
        playout_moggy=moggy,
        playout_sacrifice=sacrifice,
        playout_local=local,
        playout_lgrf=lgrf,
        prior_moves=1.0 if move_prior else 0.0,
        rave_children=RAVE_NONE if expand_after > 0 else RAVE_UNIFORM,
    )
    adapter = GoAdapter(size, params, playout_gammas=_gammas(softmax))
    if move_prior:
        adapter.set_move_model(read_model(shipped_model(size))[0])
    searcher = Searcher(
        adapter,
        SearchOptions(
            policy=policy,
            hash_mb=256,
            reuse=False,
            seed=seed,
            t_sel=300.0,
            t_back=300.0,
            c_uct=300.0,
            expand_visits=expand_after,
            prior_counts=per_move,
        ),
    )
    searcher.search(pos, Limits(samples=2))  # compile / load from cache
    cpu = time.process_time()
    r = searcher.search(pos, Limits(time_ms=1000.0 * seconds))
    cpu = max(time.process_time() - cpu, 1e-9)
    playouts = r.children  # children evaluated and leaf playouts (both C_CHILDREN)
    pps, sps = playouts / (r.time_ms / 1000.0), r.samples / (r.time_ms / 1000.0)
    line = (
        f"size={size} policy={policy} move_prior={int(move_prior)} expand_after={expand_after} samples={r.samples} "
        f"playouts={playouts} depth={r.depth} best={r.best_move_str} playouts_per_cpu_sec={playouts / cpu:.0f} "
        f"samples_per_sec={sps:.0f} search_playouts_per_sec={pps:.0f}"
    )
    return pps, sps, line


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=9)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--search", action="store_true", help="benchmark the full search instead")
    ap.add_argument("--policy", choices=("rave", "softmax", "uct"), default="rave")
    ap.add_argument("--playout-patterns", action="store_true", help="playouts with MoGo's pattern rule")
    ap.add_argument("--playout-tactics", action="store_true", help="playouts with the local tactics")
    ap.add_argument("--playout-ladders", action="store_true", help="atari escapes avoid working ladders")
    ap.add_argument("--playout-selfatari", action="store_true", help="playouts refuse bad single-stone self-ataris")
    ap.add_argument("--playout-softmax", action="store_true", help="playouts with rule 6 drawn by 3x3 gammas")
    ap.add_argument("--playout-moggy", action="store_true", help="rule 5 with Pachi's moggy patterns and gammas")
    ap.add_argument("--playout-sacrifice", action="store_true", help="playouts may play killing sacrifices")
    ap.add_argument("--playout-local", action="store_true", help="Pachi's local atari and two-liberty checks")
    ap.add_argument("--playout-lgrf", action="store_true", help="with --search: the last good reply (LGRF-2)")
    for name in RATIO_BITS:
        ap.add_argument(
            f"--{name}-ratio",
            type=int,
            default=0,
            metavar="N",
            help=f"N alternated playout measurements without and with --playout-{name}; their speed ratio",
        )
    ap.add_argument(
        "--move-prior", action="store_true", help="with --search: the search without, then with the learned move prior"
    )
    ap.add_argument(
        "--expand-after",
        type=int,
        default=0,
        metavar="E",
        help="with --search: the search with the default expansion, then with leaf playouts until E per edge",
    )
    args = ap.parse_args(argv)
    patterns, tactics, softmax = args.playout_patterns, args.playout_tactics, args.playout_softmax
    ladders, selfatari, moggy = args.playout_ladders, args.playout_selfatari, args.playout_moggy
    sacrifice, local = args.playout_sacrifice, args.playout_local
    common = dict(
        patterns=patterns,
        tactics=tactics,
        softmax=softmax,
        ladders=ladders,
        selfatari=selfatari,
        moggy=moggy,
        sacrifice=sacrifice,
        local=local,
    )
    if args.search:
        common["lgrf"] = args.playout_lgrf
        reference, reference_sps, line = measure_search(args.size, args.seconds, args.policy, **common)
        print(line)
        if args.move_prior:
            with_prior, _, line = measure_search(args.size, args.seconds, args.policy, move_prior=True, **common)
            print(line)
            print(f"move_prior_speed_ratio={with_prior / reference:.3f}")
        elif args.expand_after > 0:
            leaf = args.expand_after
            _, sps, line = measure_search(args.size, args.seconds, args.policy, expand_after=leaf, **common)
            print(line)
            print(f"expand_after_sample_ratio={sps / reference_sps:.3f}")
        return
    policy = playout_policy(
        patterns, tactics, softmax, ladders, selfatari, moggy=moggy, sacrifice=sacrifice, moggy_local=local
    )
    if args.moggy_ratio > 0:
        policy |= POLICY_PATTERNS  # moggy's patterns against MoGo's: rule 5 on in both runs
    for name, bit in RATIO_BITS.items():
        if getattr(args, f"{name}_ratio") > 0:
            policy_ratio(args.size, args.seconds, getattr(args, f"{name}_ratio"), policy & ~bit, name)
            return
    pps, mps, per_cpu, length, black = measure(args.size, args.seconds, policy=policy, gammas=_gammas(softmax))
    children, work = measure_expand(args.size, min(args.seconds, 1.0), **common)
    print(f"size={args.size} mean_moves={length:.1f} black_winrate={black:.3f} playouts_per_cpu_sec={per_cpu:.0f}")
    print(f"expand_k1_children_per_sec={children:.0f} expand_playout_moves_per_sec={work:.0f}")
    print(f"playouts_per_sec={pps:.0f} moves_per_sec={mps:.0f}")


def policy_ratio(size: int, seconds: float, rounds: int, policy: int, name: str) -> float:
    """Alternated measurements (`rounds` pairs of `seconds` each) of the playouts of `policy` without and with one
    more bit, RATIO_BITS[name] (softmax: with the shipped gamma table), in this process; prints one line per run and
    the ratio of the summed playouts per CPU second (with / without) last, as NAME_speed_ratio, and returns it."""
    bit = RATIO_BITS[name]
    gammas = _gammas(bool((policy | bit) & POLICY_SOFTMAX))
    measure(size, 0.01, policy=policy, gammas=gammas)  # compile / load both from the cache before timing
    measure(size, 0.01, policy=policy | bit, gammas=gammas)
    rates = {False: 0.0, True: 0.0}
    for r in range(rounds):
        for on in (False, True):
            p = policy | bit if on else policy
            pps, _, per_cpu, length, black = measure(size, seconds, seed=1 + r, policy=p, gammas=gammas)
            rates[on] += per_cpu
            print(
                f"round={r} {name}={int(on)} mean_moves={length:.1f} black_winrate={black:.3f} "
                f"playouts_per_sec={pps:.0f} playouts_per_cpu_sec={per_cpu:.0f}"
            )
    ratio = rates[True] / rates[False]
    print(f"{name}_speed_ratio={ratio:.3f}")
    return ratio


if __name__ == "__main__":
    main()
