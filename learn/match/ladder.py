"""`python -m learn ladder`: our engine at a real clock against an external USI engine limited by a ladder of
node budgets, and the budget at which the two are even (the *parity budget*).

Every rung is one ordinary match of the match runner (learn/match/match.py: same referee, clocks, records,
pentanomial statistics). Both engines play under the same clock (byoyomi or Fischer); the opponent is
additionally limited to `budget` nodes per move by one of its USI options (`NodesLimit` for YaneuraOu and
for our own engine), so its strength is set by the budget as long as it does not run out of time first.

Parity budget: with Elo(b) the rung's Elo of ours (positive = we are stronger), decreasing in b, the
parity budget b* is where Elo crosses 0, interpolated linearly in log budget between the last rung we win
and the next one:  log b* = log b1 + (log b2 - log b1) * Elo(b1) / (Elo(b1) - Elo(b2)).
The same interpolation through the lower and the upper ends of the 95 % intervals gives a rough interval
for b* (interval ends interpolated independently, not a proper confidence interval). A rung's Elo for
the interpolation is the pentanomial point estimate with its score clamped to [1/(4n), 1 - 1/(4n)] (n
pairs), so a clean sweep still has a finite value. When every rung is won the parity is above the top
rung ("above"), when every rung is lost below the bottom one ("below").

Output: one summary line per rung, a table at the end, `<out>/ladder.json` (rungs with their match
summaries and the parity), and per rung `<out>/rung-<budget>/` with the match JSON (rewritten after every
game) and CSA/KIF records. `--resume` keeps every finished game in `<out>` and plays only the missing ones, so
a ladder longer than a session continues where it was killed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass

from . import elo
from .cli import add_clock_arguments, add_openings_arguments, add_option_argument
from .clock import DEFAULT_FIXED_TIMEOUT_MS, TimeControl
from .match import EngineSpec, Match, MatchConfig, MatchError, load_openings
from .shogi_game import DECLARATION_RULES, DEFAULT_MAX_MOVES, DEFAULT_STOP_GRACE_S, ShogiRules

DEFAULT_NODES_OPTION = "NodesLimit"


@dataclass
class Rung:
    budget: int
    summary: dict

    def elo_bounds(self) -> tuple[float, float, float]:
        """(point, lower, upper) Elo of ours at this rung for the interpolation (module docstring)."""
        s = self.summary
        pairs = s["pentanomial"]
        n = sum(pairs)
        if n:
            est = elo.pentanomial(pairs)
        else:  # a single unpaired game: the trinomial estimate
            n = max(1, s["games"])
            est = elo.trinomial(s["wins"], s["losses"], s["draws"])
        eps = 1.0 / (4.0 * n)
        point = elo.score_to_elo(min(1.0 - eps, max(eps, est.score)))
        cap = elo.score_to_elo(1.0 - eps)
        lower = est.lower if est.lower is not None and math.isfinite(est.lower) else -cap
        upper = est.upper if est.upper is not None and math.isfinite(est.upper) else cap
        return point, max(-cap, min(lower, point)), min(cap, max(upper, point))


def crossing(points: list[tuple[int, float]]) -> float | str:
    """Budget where Elo crosses 0 (linear in log budget), 'above' / 'below' the ladder when it never does.
    `points` are (budget, Elo) sorted by budget; the first rung from which Elo stays <= 0 is the crossing."""
    if not points:
        raise ValueError("no rungs")
    if all(e > 0 for _, e in points):
        return "above"
    if points[0][1] <= 0:
        return "below"
    k = next(i for i, (_, e) in enumerate(points) if e <= 0)
    (b1, e1), (b2, e2) = points[k - 1], points[k]
    t = e1 / (e1 - e2)
    return math.exp(math.log(b1) + t * (math.log(b2) - math.log(b1)))


def parity(rungs: list[Rung]) -> dict:
    """The parity budget and its rough interval (module docstring)."""
    rungs = sorted(rungs, key=lambda r: r.budget)
    bounds = [(r.budget, r.elo_bounds()) for r in rungs]
    point = crossing([(b, e[0]) for b, e in bounds])
    low = crossing([(b, e[1]) for b, e in bounds])  # we are weaker: parity sooner
    high = crossing([(b, e[2]) for b, e in bounds])

    def fmt(x):
        return x if isinstance(x, str) else round(x)

    return {
        "budget": fmt(point),
        "low": fmt(low),
        "high": fmt(high),
        "method": "Elo = 0 crossing, linear in log budget; ends from the 95 % interval ends",
    }


def add_ladder_parser(sub) -> None:
    p = sub.add_parser(
        "ladder",
        help="our engine at a clock vs an external USI engine over node budgets",
        description="Strength ladder: one match per node budget of the opponent; parity budget.",
    )
    p.add_argument("--engine", required=True, help="command line of our engine")
    p.add_argument("--name", default="ours")
    add_option_argument(p, "--option", "USI option for our engine (repeatable)")
    p.add_argument("--opponent", required=True, help="command line of the opponent (a USI engine)")
    p.add_argument("--opponent-name", default="opponent")
    add_option_argument(p, "--opponent-option", "USI option for the opponent (repeatable), e.g. BookFile=no_book")
    p.add_argument("--budgets", required=True, help="comma-separated node budgets of the opponent, e.g. 3000,10000")
    p.add_argument(
        "--nodes-option", default=DEFAULT_NODES_OPTION, help="the opponent's USI option that limits its nodes per move"
    )
    p.add_argument("--games", type=int, default=20, help="games per rung (pairs of colours per opening)")
    p.add_argument("--concurrency", type=int, default=1)
    add_openings_arguments(p)
    t = p.add_argument_group("clock of both engines (milliseconds)")
    add_clock_arguments(t)
    t.add_argument("--fixed-timeout", type=int, default=DEFAULT_FIXED_TIMEOUT_MS)
    p.add_argument("--max-moves", type=int, default=DEFAULT_MAX_MOVES)
    p.add_argument("--declaration-rule", choices=DECLARATION_RULES, default="CSARule27")
    p.add_argument("--out", required=True, metavar="DIR", help="ladder.json and per-rung records go here")
    p.add_argument("--log-dir", metavar="DIR", help="protocol transcripts per process")
    p.add_argument(
        "--resume", action="store_true", help="keep the finished games of every rung in --out, play the rest"
    )
    p.set_defaults(handler=run_ladder)


def parse_budgets(text: str) -> list[int]:
    try:
        budgets = sorted({int(b) for b in text.split(",") if b.strip()})
    except ValueError:
        raise ValueError(f"--budgets takes comma-separated integers, got {text!r}") from None
    if not budgets or budgets[0] < 1:
        raise ValueError("--budgets needs at least one budget >= 1")
    return budgets


def rung_config(a: argparse.Namespace, budget: int, openings: list) -> MatchConfig:
    tc = TimeControl.from_args(a.time, a.byoyomi, a.inc, 0, 0, a.margin, a.fixed_timeout)
    folder = os.path.join(a.out, f"rung-{budget}")
    opponent_options = dict(a.opponent_option)
    opponent_options[a.nodes_option] = str(budget)
    return MatchConfig(
        game="shogi",
        engines=(
            EngineSpec(a.name, a.engine, dict(a.option)),
            EngineSpec(f"{a.opponent_name}-{budget}", a.opponent, opponent_options),
        ),
        tc=tc,
        games=a.games,
        concurrency=a.concurrency,
        openings=openings,
        shogi_rules=ShogiRules(a.declaration_rule, a.max_moves, DEFAULT_STOP_GRACE_S),
        records_dir=os.path.join(folder, "records"),
        log_dir=os.path.join(a.log_dir, f"rung-{budget}") if a.log_dir else None,
        json_path=os.path.join(folder, "match.json"),
        resume=a.resume,
    )


def format_table(rungs: list[Rung], par: dict) -> str:
    lines = ["budget | W-L-D | score | Elo (pentanomial, 95 %)", "---|---|---|---"]
    for r in rungs:
        s = r.summary
        e = s["elo_pentanomial"] or s["elo_trinomial"]
        lo = "-inf" if e["lower"] is None else f"{e['lower']:+.0f}"
        hi = "+inf" if e["upper"] is None else f"{e['upper']:+.0f}"
        mid = "n/a" if e["elo"] is None else f"{e['elo']:+.0f}"
        lines.append(
            f"{r.budget} | {s['wins']}-{s['losses']}-{s['draws']} | {100 * s['score']:.1f} % | {mid} [{lo}, {hi}]"
        )
    lines.append(f"parity budget: {par['budget']} (rough interval {par['low']} .. {par['high']})")
    return "\n".join(lines)


def run_ladder(a: argparse.Namespace, out=sys.stdout) -> int:
    try:
        budgets = parse_budgets(a.budgets)
        openings = load_openings("shogi", a.openings, 9, a.shuffle_openings)
        os.makedirs(a.out, exist_ok=True)
        rungs = []
        for budget in budgets:
            out.write(f"--- rung {a.nodes_option}={budget} ---\n")
            summary = Match(rung_config(a, budget, openings), out=out).run()
            rungs.append(Rung(budget, summary))
            write_json(a, rungs)
    except (ValueError, OSError, MatchError) as e:
        print(f"ladder: error: {e}", file=sys.stderr)
        return 2
    par = write_json(a, rungs)
    out.write(format_table(rungs, par) + "\n")
    return 0


def write_json(a: argparse.Namespace, rungs: list[Rung]) -> dict:
    """ladder.json after every rung (a long ladder that is interrupted keeps what it measured)."""
    par = parity(rungs)
    tc = TimeControl.from_args(a.time, a.byoyomi, a.inc, 0, 0, a.margin, a.fixed_timeout)
    data = {
        "engine": {"name": a.name, "command": a.engine, "options": dict(a.option)},
        "opponent": {
            "name": a.opponent_name,
            "command": a.opponent,
            "options": dict(a.opponent_option),
            "nodes_option": a.nodes_option,
        },
        "time_control": tc.as_dict(),
        "games_per_rung": a.games,
        "rungs": [{"budget": r.budget, "elo_for_parity": r.elo_bounds(), "summary": r.summary} for r in rungs],
        "parity": par,
    }
    path = os.path.join(a.out, "ladder.json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
    os.replace(path + ".tmp", path)
    return par
