"""`python -m learn go-playout-moves`: the first move of our playout policies against another program's.

A port of a playout policy is faithful when, in every position, it draws each move with the probability the
original does. This command measures that directly. For labelled positions (a `learn go-label` file), optionally
walked on by a few moves of our default playout policy (`--walk K`: a uniform draw of 0..K moves, the positions a
playout passes through), it asks the engine for its playout policy's move distribution (Pachi's
`gogui-playout_moves`: 1,000 draws of its moggy policy's first move, in whole percent, passes left out) and draws
`--draws` first moves from each of our policies (`playout.first_moves`). Per policy it reports the mean total
variation distance

    TV(P, Q) = 1/2 * sum_m |P(m) - Q(m)|            (0: the same distribution, 1: no move in common)

between the engine's distribution P (the pass taking what the listed moves leave) and ours Q, the share of
positions where both put their most likely move on the same point, and the pass rates. A second seed of our
default policy, rounded to whole percents as the engine reports, against the first gives the noise of TV at this
many draws. `--show N` prints the N positions where the policy `--policy` differs most, with both distributions,
and `--out` writes every position's distributions (JSON lines) for a closer look.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from usi_engine.go.goboard import GoBoard, vertex_str
from usi_engine.go.layout import PASS
from usi_engine.go.playout import NO_GAMMAS, first_move_counts

from .go_balance import label_board, standard_policies
from .match.engines import EngineError, GtpEngine, GtpError
from .match.go_label import Label, sample_labels, set_position

Dist = dict[str, float]
UNTERMINATED_GRACE = 2.0  # s: Pachi ends a gogui-playout_moves answer that lists no move without its empty line


def parse_playout_moves(text: str) -> Dist:
    """An engine's `gogui-playout_moves` answer (`VAR colour vertex` then `LABEL vertex percent` lines) as move ->
    probability; the pass gets what the listed moves leave (at least 0)."""
    dist: Dist = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].upper() == "LABEL":
            try:
                dist[parts[1].lower()] = float(parts[2]) / 100.0
            except ValueError:
                raise ValueError(f"not a percentage: {line!r}") from None
    total = sum(dist.values())
    if not dist and "VAR" not in text.upper():
        dist["pass"] = 1.0
    else:
        dist["pass"] = max(0.0, 1.0 - total)
    norm = sum(dist.values())
    return {m: p / norm for m, p in dist.items() if p > 0.0}


def draw_distribution(board: GoBoard, policy: int, draws: int, seed: int, table=NO_GAMMAS) -> Dist:
    """Our playout policy's first move from the board's position: the frequencies of `draws` seeded draws."""
    return {
        ("pass" if m == PASS else vertex_str(m, board.size).lower()): k / draws
        for m, k in first_move_counts(board.pos, policy, draws, seed, table)
    }


def as_reported(d: Dist) -> Dist:
    """A distribution as `gogui-playout_moves` reports it: whole percents, the pass taking what is left."""
    return parse_playout_moves("\n".join(f"LABEL {m} {round(100 * p)}" for m, p in d.items() if m != "pass"))


def total_variation(p: Dist, q: Dist) -> float:
    """TV(P, Q) = 1/2 sum |P(m) - Q(m)| over the moves of either."""
    return 0.5 * sum(abs(p.get(m, 0.0) - q.get(m, 0.0)) for m in set(p) | set(q))


def _mode(d: Dist) -> str:
    return max(d, key=lambda m: d[m])


def walk(board: GoBoard, policy: int, steps: int, seed: int) -> list[str]:
    """Play up to `steps` moves of the playout policy on the board (stopping at a pass); the moves."""
    played: list[str] = []
    for k in range(steps):
        move = _mode(draw_distribution(board, policy, 1, seed + k))
        if move == "pass":
            break
        board.play(board.to_move, move, allow_superko=True)
        played.append(move)
    return played


def compare(engine: GtpEngine, labels: list[Label], draws: int, walk_moves: int, seed: int) -> list[dict]:
    """Each position's engine distribution and our policies' (module docstring), with its TV per policy."""
    policies = standard_policies()
    records: dict = {}
    rng = np.random.default_rng(seed)
    rows = []
    for i, lab in enumerate(labels):
        board = label_board(lab, records)
        steps = int(rng.integers(0, walk_moves + 1)) if walk_moves > 0 else 0
        extra = walk(board, policies["patterns"][0], steps, seed + 1000 * i)
        set_position(engine, records[lab.record], lab.moves)
        colour = lab.to_move
        for move in extra:
            engine.command_ok(f"play {colour} {move}")
            colour = "w" if colour == "b" else "b"
        ok, answer, _ = engine.command("gogui-playout_moves", grace=UNTERMINATED_GRACE)
        if not ok:
            raise GtpError(f"gogui-playout_moves failed: {answer}")
        theirs = parse_playout_moves(answer)
        ours = {
            name: draw_distribution(board, policy, draws, seed + i, NO_GAMMAS if table is None else table)
            for name, (policy, table) in policies.items()
        }
        noise = draw_distribution(board, policies["patterns"][0], draws, seed + i + 7_777_777)
        rows.append(
            {
                "record": lab.record,
                "moves": lab.moves,
                "walk": extra,
                "to_move": colour,
                "board": board.to_string(),
                "engine": theirs,
                "ours": ours,
                "tv": {name: total_variation(theirs, q) for name, q in ours.items()},
                "noise": total_variation(ours["patterns"], as_reported(noise)),
            }
        )
    return rows


def summary(rows: list[dict], out=sys.stdout) -> dict:
    """Per policy: mean TV, the share of positions with the same most likely move, the pass rates."""
    report: dict = {}
    engine_pass = float(np.mean([r["engine"].get("pass", 0.0) for r in rows]))
    for name in rows[0]["ours"]:
        tv = np.array([r["tv"][name] for r in rows])
        same = np.mean([_mode(r["engine"]) == _mode(r["ours"][name]) for r in rows])
        passes = float(np.mean([r["ours"][name].get("pass", 0.0) for r in rows]))
        report[name] = {"tv": float(tv.mean()), "tv_se": float(tv.std() / np.sqrt(len(tv))), "same_mode": float(same)}
        print(
            f"{name}: TV {tv.mean():.3f} (se {report[name]['tv_se']:.3f}) same most likely move {same:.2f} "
            f"pass {passes:.3f} (engine {engine_pass:.3f})",
            file=out,
        )
    noise = float(np.mean([r["noise"] for r in rows]))
    report["noise"] = noise
    print(
        f"noise (patterns against itself: another seed, whole percents): TV {noise:.3f}; {len(rows)} positions",
        file=out,
    )
    return report


def show(rows: list[dict], policy: str, n: int, out=sys.stdout) -> None:
    """The n positions where `policy` differs most from the engine, with both distributions' leading moves."""

    def top(d: Dist) -> str:
        return " ".join(f"{m}:{p:.2f}" for m, p in sorted(d.items(), key=lambda kv: -kv[1])[:8])

    for r in sorted(rows, key=lambda r: -r["tv"][policy])[:n]:
        print(
            f"\n{r['record']} after {r['moves']} moves + walk {' '.join(r['walk']) or '-'}: TV {r['tv'][policy]:.2f}",
            file=out,
        )
        print(r["board"], file=out)
        print(f"  engine: {top(r['engine'])}", file=out)
        print(f"  {policy}: {top(r['ours'][policy])}", file=out)


def add_go_playout_moves_parser(sub) -> None:
    p = sub.add_parser(
        "go-playout-moves",
        help="our playout policies' first moves against another program's",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("labels", help="a go-label file (JSON lines): the positions")
    p.add_argument("--engine", required=True, help="a GTP engine with gogui-playout_moves (Pachi)")
    p.add_argument("--positions", type=int, default=0, help="a seeded draw of this many labels (0: all)")
    p.add_argument("--walk", type=int, default=0, help="walk on 0..K moves of our default playouts (default 0)")
    p.add_argument("--draws", type=int, default=1000, help="our draws per position and policy (default 1000)")
    p.add_argument("--policy", default="moggy+tactics+redirect", help="the policy --show looks at")
    p.add_argument("--show", type=int, default=0, help="print the N positions where --policy differs most")
    p.add_argument("--out", help="write every position's distributions here (JSON lines)")
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(handler=run_go_playout_moves)


def run_go_playout_moves(a: argparse.Namespace) -> int:
    def fail(message: str) -> int:
        print(f"go-playout-moves: {message}", file=sys.stderr)
        return 2

    if a.draws < 1 or a.walk < 0 or a.positions < 0 or a.show < 0:
        return fail("--draws must be at least 1, --walk, --positions and --show at least 0")
    if a.policy not in standard_policies():
        return fail(f"unknown --policy {a.policy!r} (one of: {', '.join(standard_policies())})")
    try:
        labels = sample_labels(a.labels, a.positions, a.seed)
    except ValueError as e:
        return fail(str(e))
    engine = GtpEngine(a.engine, "engine")
    try:
        rows = compare(engine, labels, a.draws, a.walk, a.seed)
    except (EngineError, GtpError, ValueError, OSError) as e:  # a crash, a refused command, an unreadable record
        return fail(str(e))
    finally:
        engine.stop_process()
    summary(rows)
    if a.show:
        show(rows, a.policy, a.show)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
    return 0
