"""`python -m learn go-review`: where a Go engine's points go, game by game.

Each SGF record is replayed into GNU Go, which estimates the score every `--every` moves (`estimate_score`:
area count with komi, dead stones judged by its own dragon analysis). Seen from the reviewed engine's side the
curve says when a game was lost: the change over each phase (opening, middle game, endgame, split by move
number), the largest drop over a window of moves, and the estimate when the game ended (a resignation while
ahead on GNU Go's count is flagged). GNU Go is weaker than the engines it judges, so single estimates are rough;
the phase sums over many games are what the review is for.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import asdict, dataclass, field

from .engines import GtpEngine, GtpError
from .go_game import DEFAULT_REFEREE
from .openings import format_vertex

COLOUR = {"b": "black", "w": "white"}
PHASES = ("opening", "middle", "endgame")
SCORE = re.compile(r"^\s*(?:([BW])\+(\d+(?:\.\d+)?)|0(?:\.0+)?)(?:\s|$)")


def parse_estimate(text: str) -> float:
    """GNU Go's `estimate_score` answer ('B+4.8 (upper bound: ...)', 'W+12', '0') -> Black's margin."""
    m = SCORE.match(text.upper())
    if not m:
        raise ValueError(f"cannot read a score estimate from {text!r}")
    if m.group(1) is None:
        return 0.0
    margin = float(m.group(2))
    return margin if m.group(1) == "B" else -margin


def default_phases(size: int) -> tuple[int, int]:
    """Moves that end the opening and start the endgame: a fifth and three fifths of the board's points
    (9x9: 16 and 48; 19x19: 72 and 216)."""
    points = size * size
    return points // 5, points * 3 // 5


@dataclass
class GameRecord:
    """The parts of an SGF game the review needs: size, komi, players, result, setup stones and moves."""

    path: str
    size: int
    komi: float
    black: str
    white: str
    result: str
    setup: list[tuple[str, tuple[int, int]]]
    moves: list[tuple[str, tuple[int, int] | None]]


def read_sgf(path: str) -> GameRecord:
    """One SGF file's main line (sgfmill); ValueError naming the file when it is no Go game."""
    from sgfmill import sgf  # runtime dependency of Go matches only

    try:
        with open(path, "rb") as f:
            game = sgf.Sgf_game.from_bytes(f.read())
    except (OSError, ValueError) as e:
        raise ValueError(f"not a readable SGF game ({e})") from None
    root = game.get_root()

    def prop(name: str, default: str = "") -> str:
        return str(root.get(name)) if root.has_property(name) else default

    komi = float(root.get("KM")) if root.has_property("KM") else 0.0
    setup = []
    for ident, colour in (("AB", "b"), ("AW", "w")):
        if root.has_property(ident):
            setup += [(colour, point) for point in sorted(root.get(ident))]
    moves = []
    for node in game.get_main_sequence()[1:]:
        colour, point = node.get_move()
        if colour is not None:
            moves.append((colour, point))
    return GameRecord(path, game.get_size(), komi, prop("PB", "?"), prop("PW", "?"), prop("RE", "?"), setup, moves)


@dataclass
class Review:
    """One game seen from the reviewed engine's side (`colour`): GNU Go's margin after each sampled move."""

    path: str
    colour: str
    opponent: str
    result: str
    moves: int
    curve: list[tuple[int, float]]  # (moves played, the engine's margin: > 0 ahead)
    phase_change: dict[str, float | None] = field(default_factory=dict)
    worst_drop: tuple[int, int, float] | None = None  # (from move, to move, points lost)

    @property
    def won(self) -> bool | None:
        """The record's result for the engine: True, False, or None (draw or no result)."""
        r = self.result.strip().upper()
        if len(r) < 2 or r[0] not in "BW" or r[1] != "+":
            return None
        return (r[0] == "B") == (self.colour == "b")

    @property
    def resigned(self) -> bool:
        """The engine lost by resignation."""
        return self.won is False and self.result.strip().upper().endswith("+R")

    @property
    def final_margin(self) -> float:
        return self.curve[-1][1] if self.curve else 0.0


def margin_at(curve: list[tuple[int, float]], move: int) -> float:
    """The margin at the last sample at or before `move` (the first sample before any)."""
    value = curve[0][1]
    for at, margin in curve:
        if at > move:
            break
        value = margin
    return value


def phase_changes(curve: list[tuple[int, float]], bounds: tuple[int, int]) -> dict[str, float | None]:
    """The change of the margin over each phase (None for a phase the game never reached)."""
    end = curve[-1][0]
    edges = (0, bounds[0], bounds[1], end)
    changes: dict[str, float | None] = {}
    for name, lo, hi in zip(PHASES, edges, edges[1:]):
        changes[name] = margin_at(curve, min(hi, end)) - margin_at(curve, lo) if lo < end else None
    return changes


def worst_drop(curve: list[tuple[int, float]], window: int) -> tuple[int, int, float] | None:
    """The largest fall of the margin between two samples at most `window` moves apart."""
    best = None
    for i, (a, ma) in enumerate(curve):
        for b, mb in curve[i + 1 :]:
            if b - a > window:
                break
            if best is None or ma - mb > best[2]:
                best = (a, b, ma - mb)
    return best if best is not None and best[2] > 0 else None


def engine_colour(record: GameRecord, engine: str) -> str:
    """'b' or 'w': the side whose player name contains `engine` (exactly one must)."""
    sides = [c for c, name in (("b", record.black), ("w", record.white)) if engine.lower() in name.lower()]
    if len(sides) != 1:
        raise ValueError(
            f"{engine!r} names {'both' if sides else 'neither'} of the players ({record.black!r}, {record.white!r})"
        )
    return sides[0]


def score_curve(judge: GtpEngine, record: GameRecord, every: int) -> list[tuple[int, float]]:
    """GNU Go's Black margin after move 0, every `every` moves and after the last move."""
    judge.ensure_started()
    judge.command_ok(f"boardsize {record.size}")
    judge.command_ok("clear_board")
    judge.command_ok(f"komi {record.komi}")
    for colour, stone in record.setup:
        judge.command_ok(f"play {COLOUR[colour]} {format_vertex(stone)}")
    curve = [(0, parse_estimate(judge.command_ok("estimate_score", timeout=300.0)))]
    for n, (colour, point) in enumerate(record.moves, 1):
        judge.command_ok(f"play {COLOUR[colour]} {format_vertex(point)}")
        if n % every == 0 or n == len(record.moves):
            curve.append((n, parse_estimate(judge.command_ok("estimate_score", timeout=300.0))))
    return curve


def review_game(
    judge: GtpEngine, record: GameRecord, engine: str, every: int, window: int, bounds: tuple[int, int] | None
) -> Review:
    """Replay one record into the judge and measure it from `engine`'s side."""
    colour = engine_colour(record, engine)
    sign = 1.0 if colour == "b" else -1.0
    curve = [(n, sign * m) for n, m in score_curve(judge, record, every)]
    review = Review(
        record.path,
        colour,
        record.white if colour == "b" else record.black,
        record.result,
        len(record.moves),
        curve,
    )
    review.phase_change = phase_changes(curve, bounds or default_phases(record.size))
    review.worst_drop = worst_drop(curve, window)
    return review


def summarize(reviews: list[Review]) -> dict:
    """Totals over the lost games: the mean change per phase, how many games lost the most in each phase,
    and the resignations GNU Go counted as ahead."""
    lost = [r for r in reviews if r.won is False]
    out: dict = {"games": len(reviews), "lost": len(lost), "won": sum(r.won is True for r in reviews)}
    for name in PHASES:
        values = [v for r in lost if (v := r.phase_change.get(name)) is not None]
        out[f"{name}_mean_change"] = sum(values) / len(values) if values else None
        out[f"{name}_games"] = len(values)
    worst_phase = {name: 0 for name in PHASES}
    for r in lost:
        known = {k: v for k, v in r.phase_change.items() if v is not None}
        if known:
            worst_phase[min(known, key=lambda k: known[k])] += 1
    out["lost_most_in"] = worst_phase
    out["resigned"] = sum(r.resigned for r in lost)
    out["resigned_while_ahead"] = [r.path for r in lost if r.resigned and r.final_margin > 0]
    return out


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:+.1f}"


def report(reviews: list[Review], summary: dict, out=sys.stdout) -> None:
    """One line per game and the totals over the lost games."""
    print("game | colour | result | moves | opening | middle | endgame | final | worst drop", file=out)
    for r in reviews:
        drop = f"{r.worst_drop[2]:.1f} (moves {r.worst_drop[0]}–{r.worst_drop[1]})" if r.worst_drop else "—"
        changes = " | ".join(_fmt(r.phase_change.get(p)) for p in PHASES)
        print(
            f"{os.path.basename(r.path)} | {r.colour} | {r.result} | {r.moves} | {changes} | {_fmt(r.final_margin)}"
            f" | {drop}",
            file=out,
        )
    means = ", ".join(f"{p} {_fmt(summary[f'{p}_mean_change'])} ({summary[f'{p}_games']})" for p in PHASES)
    print(
        f"\n{summary['games']} games, {summary['won']} won, {summary['lost']} lost; lost games, mean change: {means};"
        f" lost the most in {summary['lost_most_in']}; {summary['resigned']} resigned, "
        f"{len(summary['resigned_while_ahead'])} of them ahead on GNU Go's count",
        file=out,
    )


def sgf_paths(items: list[str]) -> list[str]:
    """SGF files named, and the .sgf files of folders named, sorted within each folder."""
    paths = []
    for item in items:
        if os.path.isdir(item):
            paths += sorted(os.path.join(item, f) for f in os.listdir(item) if f.lower().endswith(".sgf"))
        else:
            paths.append(item)
    return paths


def add_go_review_parser(sub) -> None:
    p = sub.add_parser(
        "go-review", help="GNU Go's score estimate along Go game records", description=__doc__.splitlines()[0]
    )
    p.add_argument("records", nargs="+", help="SGF files or folders of them (a match's --records folder)")
    p.add_argument("--engine", required=True, help="the reviewed engine: part of its player name (PB/PW)")
    p.add_argument("--judge", default=DEFAULT_REFEREE, help="GTP command of the judge (default: %(default)s)")
    p.add_argument("--every", type=int, default=2, help="estimate every N moves (default 2)")
    p.add_argument("--window", type=int, default=10, help="moves spanned by the worst drop (default 10)")
    p.add_argument(
        "--phases", metavar="OPENING_END,ENDGAME_START", help="phase bounds in moves (default: 1/5 and 3/5 of points)"
    )
    p.add_argument("--json", help="write every curve and the summary here")
    p.set_defaults(handler=run_go_review)


def run_go_review(a: argparse.Namespace) -> int:
    bounds = None
    if a.phases:
        try:
            lo, hi = (int(x) for x in a.phases.split(","))
        except ValueError:
            print(f"go-review: --phases wants two move numbers, got {a.phases!r}", file=sys.stderr)
            return 2
        bounds = (lo, hi)
    if a.every < 1 or a.window < 1:
        print("go-review: --every and --window must be at least 1", file=sys.stderr)
        return 2
    judge = GtpEngine(a.judge, "judge")
    reviews = []
    try:
        for path in sgf_paths(a.records):
            try:
                reviews.append(review_game(judge, read_sgf(path), a.engine, a.every, a.window, bounds))
            except (ValueError, GtpError) as e:  # not a Go record, no such player, an illegal move
                print(f"go-review: skipped {path}: {e}", file=sys.stderr)
    finally:
        judge.stop_process()
    if not reviews:
        print("go-review: no game reviewed", file=sys.stderr)
        return 1
    summary = summarize(reviews)
    report(reviews, summary)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"summary": summary, "games": [asdict(r) for r in reviews]}, f, indent=1)
    return 0
