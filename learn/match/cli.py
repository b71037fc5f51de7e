"""`python -m learn match`: the command line of the match runner (engines over real pipes, strict referee)."""

from __future__ import annotations

import argparse
import sys

from .clock import DEFAULT_FIXED_TIMEOUT_MS, DEFAULT_MARGIN_MS, TimeControl
from .go_game import DEFAULT_REFEREE, GoRules
from .match import EngineSpec, Match, MatchConfig, MatchError, SprtSpec, load_openings
from .shogi_game import DECLARATION_RULES, DEFAULT_MAX_MOVES, DEFAULT_STOP_GRACE_S, ShogiRules


def _option(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


def add_option_argument(parser, flag: str, help: str) -> None:
    """A repeatable `flag NAME=VALUE` argument: USI options for one engine, collected as (name, value) pairs."""
    parser.add_argument(flag, type=_option, action="append", default=[], metavar="NAME=VALUE", help=help)


def add_openings_arguments(parser) -> None:
    """--openings and --shuffle-openings (a match's or a ladder's)."""
    parser.add_argument("--openings", help="opening file (see docs/match.md)")
    parser.add_argument("--shuffle-openings", type=int, metavar="SEED", default=None)


def add_clock_arguments(group) -> None:
    """The clock's --time, --byoyomi, --inc and --margin, in milliseconds (a match's or a ladder's)."""
    group.add_argument("--time", type=int, default=0, help="main time per side")
    group.add_argument("--byoyomi", type=int, default=0)
    group.add_argument("--inc", type=int, default=0, help="Fischer increment per move")
    group.add_argument("--margin", type=int, default=DEFAULT_MARGIN_MS, help="grace added to the clock")


def add_match_parser(sub) -> None:
    p = sub.add_parser(
        "match",
        help="engine-vs-engine match (USI shogi or GTP Go) with Elo/SPRT",
        description="Play a match between two engines with a strict referee.",
    )
    p.add_argument("--game", choices=("shogi", "go"), default="shogi")
    p.add_argument("--engine1", required=True, help="command line of engine 1 (the one Elo is reported for)")
    p.add_argument("--engine2", required=True, help="command line of engine 2")
    p.add_argument("--name1", default="engine1")
    p.add_argument("--name2", default="engine2")
    add_option_argument(p, "--option1", "USI option for engine 1 (repeatable)")
    add_option_argument(p, "--option2", "USI option for engine 2 (repeatable)")
    p.add_argument("--games", type=int, default=2, help="number of games (pairs of colours per opening)")
    p.add_argument("--concurrency", type=int, default=1, help="games played at the same time")
    add_openings_arguments(p)
    t = p.add_argument_group("time control (milliseconds)")
    add_clock_arguments(t)
    t.add_argument("--movetime", type=int, default=0, help="fixed time per move (no clock)")
    t.add_argument("--nodes", type=int, default=0, help="fixed nodes per move (no clock; USI only)")
    t.add_argument(
        "--fixed-timeout",
        type=int,
        default=DEFAULT_FIXED_TIMEOUT_MS,
        help="extra wait beyond --movetime (or per --nodes move) before an engine counts as hung",
    )
    s = p.add_argument_group("shogi rules")
    s.add_argument(
        "--max-moves",
        type=int,
        default=None,
        help=f"game-length draw (shogi default {DEFAULT_MAX_MOVES}; Go default none)",
    )
    s.add_argument("--declaration-rule", choices=DECLARATION_RULES, default="CSARule27")
    s.add_argument(
        "--stop-grace",
        type=float,
        default=DEFAULT_STOP_GRACE_S,
        help="seconds to wait for bestmove after stop on a time loss before killing",
    )
    g = p.add_argument_group("go rules")
    g.add_argument("--size", type=int, default=9)
    g.add_argument("--komi", type=float, default=7.0)
    g.add_argument("--referee", default=DEFAULT_REFEREE, help="GTP referee command (scores, checks legality)")
    r = p.add_argument_group("statistics and output")
    r.add_argument("--sprt", nargs=2, type=float, metavar=("ELO0", "ELO1"))
    r.add_argument("--alpha", type=float, default=0.05)
    r.add_argument("--beta", type=float, default=0.05)
    r.add_argument("--no-sprt-stop", action="store_true", help="play all games even after an SPRT verdict")
    r.add_argument("--records", metavar="DIR", help="write CSA+KIF (shogi) or SGF (Go) per game here")
    r.add_argument("--log-dir", metavar="DIR", help="protocol transcripts and engine stderr per process")
    r.add_argument("--json", metavar="PATH", help="write results and summary as JSON (after every game)")
    r.add_argument(
        "--resume", action="store_true", help="keep the finished games of --json (same settings), play the rest"
    )
    p.set_defaults(handler=run_match)


def build_config(a: argparse.Namespace) -> MatchConfig:
    tc = TimeControl.from_args(a.time, a.byoyomi, a.inc, a.movetime, a.nodes, a.margin, a.fixed_timeout)
    sprt = SprtSpec(a.sprt[0], a.sprt[1], a.alpha, a.beta, not a.no_sprt_stop) if a.sprt else None
    if sprt is not None and sprt.elo0 >= sprt.elo1:
        raise ValueError("--sprt needs ELO0 < ELO1")
    return MatchConfig(
        game=a.game,
        engines=(EngineSpec(a.name1, a.engine1, dict(a.option1)), EngineSpec(a.name2, a.engine2, dict(a.option2))),
        tc=tc,
        games=a.games,
        concurrency=a.concurrency,
        openings=load_openings(a.game, a.openings, a.size, a.shuffle_openings),
        shogi_rules=ShogiRules(
            a.declaration_rule, DEFAULT_MAX_MOVES if a.max_moves is None else a.max_moves, a.stop_grace
        ),
        go_rules=GoRules(a.size, a.komi, a.max_moves or 0, a.referee),
        sprt=sprt,
        records_dir=a.records,
        log_dir=a.log_dir,
        json_path=a.json,
        resume=a.resume,
    )


def run_match(a: argparse.Namespace) -> int:
    try:
        config = build_config(a)
        Match(config).run()
    except (ValueError, OSError, MatchError) as e:
        print(f"match: error: {e}", file=sys.stderr)
        return 2
    return 0
