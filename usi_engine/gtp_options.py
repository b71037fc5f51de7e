"""The command line of `usi-engine gtp`: its flags (build_parser) and the GoPlayer settings they give
(player_settings). The player's defaults are PlayerSettings' (usi_engine/go/player.py); `--seconds`, `--size`,
`--komi` and `--ko` belong to the GTP front-end (usi_engine/gtp.py) and have their defaults here."""

import argparse

from usi_engine.go.player import (
    PRIOR_AMAF_LARGE,
    PRIOR_AMAF_MOVES,
    PRIOR_AMAF_SMALL,
    PRIOR_COUNTS,
    PRIOR_VISITS_LARGE,
    PRIOR_VISITS_MOVES,
    PRIOR_VISITS_SMALL,
    RAVE_BIAS_LARGE,
    RAVE_BIAS_SMALL,
    RAVE_CHILDREN,
    PlayerSettings,
)

POLICY_NAMES = {"mcss": "softmax", "softmax": "softmax", "uct": "uct", "rave": "rave"}


def player_settings(args: argparse.Namespace) -> PlayerSettings:
    """The GoPlayer settings of the command line (build_parser)."""
    return PlayerSettings(
        policy=POLICY_NAMES[args.policy],
        threads=args.threads,
        hash_mb=args.hash,
        playouts=args.playouts,
        leaf_playouts=args.leaf_playouts,
        rave_playouts=args.rave_playouts,
        rave_children=args.rave_children,
        expand_after=args.expand_after,
        widen=args.widen,
        widen_visits=args.widen_visits,
        widen_growth=args.widen_growth,
        t_sel=args.t_sel,
        t_back=args.t_back,
        c_uct=args.c_uct,
        c_rave=args.c_rave,
        rave_bias=args.rave_bias,
        amaf_distance=args.amaf_distance,
        graph=not args.tree,
        seed=args.seed,
        resign=args.resign,
        leaf=args.leaf,
        prior_mix=args.prior_mix,
        td_share=args.td_share,
        value_weights=args.value_weights,
        playout_patterns=args.playout_patterns,
        playout_tactics=args.playout_tactics == "on",
        playout_ladders=args.playout_ladders == "on",
        playout_selfatari=args.playout_selfatari,
        playout_sacrifice=args.playout_sacrifice == "on",
        playout_local=args.playout_local,
        playout_lgrf=args.playout_lgrf == "on",
        playout_softmax=args.playout_softmax == "on",
        playout_softmax_beta=args.playout_softmax_beta,
        playout_weights=args.playout_weights,
        prior_patterns=args.prior_patterns == "on",
        prior_ladders=args.prior_ladders == "on",
        prior_moves=args.prior_moves,
        prior_moves_small=args.prior_moves_small,
        move_model=args.move_model,
        prior_visits=args.prior_visits,
        prior_amaf=args.prior_amaf,
        prior_counts=args.prior_counts,
        prior_moves_amaf=args.prior_moves_amaf,
    )


def _cli_policy(policy: str) -> str:
    """The `--policy` name of a SearchOptions policy (the first of POLICY_NAMES that maps onto it)."""
    return next(name for name, target in POLICY_NAMES.items() if target == policy)


def _on_off(flag: bool) -> str:
    """The `on` / `off` spelling of a boolean setting."""
    return "on" if flag else "off"


def _non_negative(text: str) -> int:
    """An integer >= 0 (argparse type)."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {value}")
    return value


def _non_negative_float(text: str) -> float:
    """A number >= 0 (argparse type)."""
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {text}")
    return value


def _positive_float(text: str) -> float:
    """A number > 0 (argparse type)."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, not {text}")
    return value


def _growth(text: str) -> float:
    """A number > 1 (argparse type: a logarithm's base)."""
    value = float(text)
    if not value > 1:
        raise argparse.ArgumentTypeError(f"must be > 1, not {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The `usi-engine gtp` command line. The defaults of the player's settings are PlayerSettings' (written
    there only; tests/test_defaults.py checks that the empty command line gives PlayerSettings()); `--seconds`,
    `--size`, `--komi` and `--ko` belong to this front-end and are written here."""
    d = PlayerSettings()
    p = argparse.ArgumentParser(prog="usi-engine gtp", description="Go over GTP (MCSS / UCT / MC-RAVE).")
    p.add_argument(
        "--policy",
        choices=sorted(POLICY_NAMES),
        default=_cli_policy(d.policy),
        help="tree policy: rave (MC-RAVE), mcss (softmax), uct (default %(default)s)",
    )
    p.add_argument("--threads", type=int, default=d.threads)
    p.add_argument("--hash", type=float, default=d.hash_mb, help="node pool in MB")
    p.add_argument("--seconds", type=float, default=1.0, help="seconds per move without a GTP clock")
    p.add_argument("--playouts", type=int, default=d.playouts, help="playouts per move (children evaluated)")
    p.add_argument(
        "--leaf-playouts", type=int, default=d.leaf_playouts, help="playouts per child for mcss/uct leaves (K)"
    )
    p.add_argument("--t-sel", type=float, default=d.t_sel, help="MCSS selection temperature (value scale 1000)")
    p.add_argument("--t-back", type=float, default=d.t_back, help="MCSS backup temperature")
    p.add_argument("--c-uct", type=float, default=d.c_uct, help="UCT exploration (value units)")
    p.add_argument("--c-rave", type=float, default=d.c_rave, help="RAVE exploration (outcomes in [0,1])")
    p.add_argument(
        "--rave-bias",
        type=float,
        default=d.rave_bias,
        help=f"RAVE bias b of seed 000 eq. 47 (default {RAVE_BIAS_SMALL:g}; on boards of 15 and more "
        f"{RAVE_BIAS_LARGE:g})",
    )
    p.add_argument(
        "--amaf-distance",
        type=_non_negative_float,
        default=d.amaf_distance,
        help="RAVE: an AMAF credit weighs 1 + floor(d (L - k) / (L + 1)) for the k-th of the L moves after a node, "
        "from 1 + d down to 1 (Pachi's distance_rave; 0 = every credit weighs 1, default %(default)s)",
    )
    p.add_argument(
        "--rave-playouts",
        type=int,
        default=d.rave_playouts,
        help="RAVE: children given a playout per expansion (+ tactical ones; 0 = all)",
    )
    p.add_argument(
        "--rave-children",
        choices=RAVE_CHILDREN,
        default=d.rave_children,
        help="RAVE: those children drawn uniformly, or by the playout policy's first move from the node, so that a "
        "leaf's playouts start as the playouts do, none (the expansion sets priors only; with --expand-after the "
        "search plays from the node itself), or top: the children of the highest prior (default %(default)s)",
    )
    p.add_argument(
        "--widen",
        type=_non_negative,
        default=d.widen,
        help="RAVE progressive widening: a node's children in prior order take part in selection, the first "
        "W + floor(log_G(1 + N / V)) after N real visits (W this, V --widen-visits, G --widen-growth; 0 = all, "
        "default %(default)s)",
    )
    p.add_argument(
        "--widen-visits", type=_positive_float, default=d.widen_visits, help="RAVE widening: V (default %(default)s)"
    )
    p.add_argument(
        "--widen-growth", type=_growth, default=d.widen_growth, help="RAVE widening: G > 1 (default %(default)s)"
    )
    p.add_argument(
        "--expand-after",
        type=_non_negative,
        default=d.expand_after,
        help="RAVE: a leaf plays one playout from itself per visit until its edge has this many real visits, then "
        "is expanded (MoGo's and Pachi's trees; 0 = expand at the first visit, default %(default)s)",
    )
    p.add_argument(
        "--leaf",
        choices=("playouts", "learned"),
        default=d.leaf,
        help="mcss/uct leaf value: playouts, or learned (local-shape value, no playout)",
    )
    p.add_argument(
        "--prior-mix",
        type=float,
        default=d.prior_mix,
        help="RAVE prior: weight of the learned value against the heuristic prior (0..1)",
    )
    p.add_argument(
        "--td-share",
        type=float,
        default=d.td_share,
        help="Dyna-2: share of each move's time spent on TD search of the short-term memory",
    )
    p.add_argument(
        "--value-weights",
        default=d.value_weights,
        help="Go value weight file (default: the shipped usi_engine/go/weights/go<size>.npz)",
    )
    p.add_argument(
        "--playout-patterns",
        choices=("on", "off", "moggy"),
        default=d.playout_patterns,
        help="playouts answer the last move with MoGo's 3x3 patterns (hane, cut, edge) before a random move "
        "(default %(default)s; on: 78 %% against GNU Go level 10 on 9x9 where off scored 66 %%, docs/go.md); moggy: "
        "Pachi's pattern set around the last two moves, drawn by its gammas",
    )
    p.add_argument(
        "--playout-tactics",
        choices=("on", "off"),
        default=_on_off(d.playout_tactics),
        help="playouts answer the last move with Pachi-style local tactics first: ataris on two-liberty blocks that "
        "cannot escape, saving own two-liberty blocks, the vital point of a small eye space, ko retakes, patterns "
        "around the mover's previous move too (default %(default)s: not yet measured, docs/go.md)",
    )
    p.add_argument(
        "--playout-ladders",
        choices=("on", "off"),
        default=_on_off(d.playout_ladders),
        help="playouts do not extend a block in atari into a working ladder (ladder reader; default %(default)s: "
        "not yet measured)",
    )
    p.add_argument(
        "--playout-selfatari",
        choices=("off", "on", "redirect"),
        default=d.playout_selfatari,
        help="playouts refuse, on 60 %% of their draws as Pachi's, single-stone self-ataris that are no snapback, "
        "throw-in or kill inside the opponent's last liberties; redirect: the random rule then plays an approach "
        "move instead, Pachi's selfatari_other (default %(default)s: not yet measured, docs/go.md)",
    )
    p.add_argument(
        "--playout-local",
        choices=("mogo", "pachi"),
        default=d.playout_local,
        help="the playouts' answers to the last move: mogo (capture, escape, with --playout-tactics on the two-liberty "
        "rule that keeps to ataris that hold) or pachi, Pachi's local atari and two-liberty checks (countercaptures, "
        "no escape into a first-line ladder or a self-atari, miai; default %(default)s: not yet measured, docs/go.md)",
    )
    p.add_argument(
        "--playout-lgrf",
        choices=("on", "off"),
        default=_on_off(d.playout_lgrf),
        help="playouts first play the last good reply to the previous move (or two) that the search's own playouts "
        "learned, forgetting replies that lost (Baier & Drake's LGRF-2; default %(default)s: 21 %% against Pachi over "
        "52 games, as without it, docs/go.md)",
    )
    p.add_argument(
        "--playout-sacrifice",
        choices=("on", "off"),
        default=_on_off(d.playout_sacrifice),
        help="playouts may put 2-6 own stones in atari when the move also leaves every surrounding opponent block in "
        "atari and the stones' points are a dead eye space once captured (nakade; default %(default)s: not yet "
        "measured, docs/go.md)",
    )
    p.add_argument(
        "--playout-softmax",
        choices=("on", "off"),
        default=_on_off(d.playout_softmax),
        help="playouts draw their random move by the learned 3x3 shape weights of the move model (--move-model) "
        "instead of uniformly: softmax playouts (default %(default)s: not yet measured, docs/go.md)",
    )
    p.add_argument(
        "--playout-softmax-beta",
        type=float,
        default=d.playout_softmax_beta,
        help="exponent of the softmax playouts' gammas: gamma ** beta (default %(default)s: the model's own; 0 = "
        "uniform)",
    )
    p.add_argument(
        "--playout-weights",
        metavar="FILE",
        default=d.playout_weights,
        help="softmax playouts (implies --playout-softmax on) with the 3x3 shape weights of this file, made by "
        "simulation balancing (`python -m learn go-balance`) instead of the move model's",
    )
    p.add_argument(
        "--prior-patterns",
        choices=("on", "off"),
        default=_on_off(d.prior_patterns),
        help="RAVE prior: favour MoGo pattern moves next to the last move (default %(default)s; on: 87 %% against "
        "GNU Go level 10 on 9x9 with the playout patterns, 78 %% without the prior, docs/go.md)",
    )
    p.add_argument(
        "--prior-ladders",
        choices=("on", "off"),
        default=_on_off(d.prior_ladders),
        help="RAVE prior: an atari escape into a working ladder counts as bad (ladder reader; default %(default)s: "
        "not yet measured)",
    )
    p.add_argument(
        "--prior-moves",
        type=float,
        default=d.prior_moves,
        help="RAVE prior on boards of 15 and more: weight b of the learned move prior against the heuristic one "
        f"(0..1; default %(default)s, with {PRIOR_VISITS_MOVES:g} virtual visits; 0 = off: the heuristic prior "
        f"with {PRIOR_VISITS_LARGE:g}, docs/go.md)",
    )
    p.add_argument(
        "--prior-moves-small",
        type=float,
        default=d.prior_moves_small,
        help="the same on boards below 15, with the shipped 9x9 model (default %(default)s; 0: the heuristic prior "
        "alone; with shared counts the prior then weighs as many virtual visits as on large boards)",
    )
    p.add_argument(
        "--move-model",
        default=d.move_model,
        help="learned move prior file, also the source of the softmax playouts' 3x3 gammas (default: the shipped "
        "usi_engine/go/weights/moves9.npz below 15x15, moves19.npz from 15x15 on; the gammas: moves19.npz)",
    )
    p.add_argument(
        "--prior-visits",
        type=float,
        default=d.prior_visits,
        help=f"RAVE prior: virtual MC visits of the prior, per-move counts: of the heuristic prior (default "
        f"{PRIOR_VISITS_SMALL:g}; on boards of 15 and more {PRIOR_VISITS_MOVES:g} with the learned move prior and "
        f"shared counts, else {PRIOR_VISITS_LARGE:g})",
    )
    p.add_argument(
        "--prior-amaf",
        type=float,
        default=d.prior_amaf,
        help=f"RAVE prior: virtual AMAF visits of the prior, per-move counts: of the heuristic prior (default "
        f"{PRIOR_AMAF_SMALL:g}; on boards of 15 and more {PRIOR_AMAF_MOVES:g} with the learned move prior and "
        f"shared counts, else {PRIOR_AMAF_LARGE:g})",
    )
    p.add_argument(
        "--prior-counts",
        choices=PRIOR_COUNTS,
        default=d.prior_counts,
        help="RAVE prior's virtual visits: shared (one pair for every child, --prior-visits / --prior-amaf), "
        "per-move (each child the sum of its prior terms': the heuristic rule's --prior-visits / --prior-amaf, the "
        "learned move prior's 20 + 300 sqrt(P), 14 + 210 sqrt(P) below 15x15), or auto: per-move below 15x15, "
        "shared from 15x15 on (default %(default)s, docs/go.md)",
    )
    p.add_argument(
        "--prior-moves-amaf",
        type=float,
        default=d.prior_moves_amaf,
        help="with --prior-counts per-move: the share of the learned move prior's visits that are AMAF visits too "
        "(default %(default)s; 0 = MC only, as Pachi's prior)",
    )
    p.add_argument("--resign", type=float, default=d.resign, help="resign below this winrate (0 = never)")
    p.add_argument("--size", type=int, default=19)
    p.add_argument("--komi", type=float, default=7.5)
    p.add_argument("--ko", choices=("positional", "simple", "situational"), default="positional")
    p.add_argument("--tree", action="store_true", default=not d.graph, help="tree search (no transposition sharing)")
    p.add_argument("--seed", type=int, default=d.seed)
    return p
