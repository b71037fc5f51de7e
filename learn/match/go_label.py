"""`python -m learn go-label`: Go positions from game records, valued by an oracle engine's analysis.

Simulation balancing (Silver & Tesauro 2009; Huang, Coulom & Lin 2010, seed 000 §6) fits a playout policy so that
the mean outcome of its playouts matches an oracle value computed by deep search. This command makes that oracle
data: positions sampled along SGF records (after every `--every`-th move from `--skip` on), each analysed for
`--seconds` (or until `--playouts` root visits, which makes the labels independent of the machine's load) by any
GTP engine that speaks Leela Zero's `lz-analyze` (Pachi, Leela Zero, KataGo, this project's own engine), and valued
by the winrate of the move the oracle searched most, for the side to move. The output is JSON lines, one position
each, appended as they come: a stopped run resumes where it stopped (`--resume`, with the same record paths).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass

import numpy as np

from .engines import EngineError, GtpEngine, GtpError
from .go_review import COLOUR, GameRecord, read_sgf, sgf_paths
from .openings import format_vertex

WINRATE_SCALE = 10000.0  # lz-analyze reports winrates as integers out of 10,000 (Leela Zero's format)
STOP_GRACE = 30.0  # s allowed for the oracle to stop analysing and answer the next command


@dataclass
class Label:
    """One position: the record's first `moves` moves played; `value` is the oracle's winrate for `to_move`."""

    record: str
    moves: int
    size: int
    komi: float
    to_move: str  # 'b' or 'w'
    value: float
    best: str  # the oracle's most searched move
    visits: int  # the visits of the root moves in the oracle's last report
    seconds: float  # analysis time

    @property
    def black(self) -> float:
        """The value for Black."""
        return self.value if self.to_move == "b" else 1.0 - self.value


def parse_analysis(line: str) -> list[dict]:
    """The records of one `info move ...` line: [{'move': 'D4', 'visits': 120, 'winrate': 0.53}, ...]
    (winrates out of 1); ValueError when the line holds none or a record lacks its numbers."""
    records = []
    for chunk in line.split("info ")[1:]:
        tokens = chunk.split()
        fields: dict = {}
        i = 0
        while i + 1 < len(tokens):
            if tokens[i] == "pv":
                break
            fields[tokens[i]] = tokens[i + 1]
            i += 2
        try:
            records.append(
                {
                    "move": fields["move"],
                    "visits": int(fields["visits"]),
                    "winrate": float(fields["winrate"]) / WINRATE_SCALE,
                }
            )
        except (KeyError, ValueError):
            raise ValueError(f"not an lz-analyze record: {chunk.strip()[:80]!r}") from None
    if not records:
        raise ValueError(f"no lz-analyze record in {line[:80]!r}")
    return records


def to_move_after(record: GameRecord, moves: int) -> str:
    """The side to move after the record's first `moves` moves: the colour opposite the last move (Black
    first, White first after setup stones only when the record's first move is White's)."""
    if moves > 0:
        return "w" if record.moves[moves - 1][0] == "b" else "b"
    return record.moves[0][0] if record.moves else "b"


def analyse(oracle: GtpEngine, colour: str, seconds: float, playouts: int = 0, interval_cs: int = 20) -> list[dict]:
    """Let the oracle analyse its current position for `colour` for `seconds`, or until a report's visits add
    up to `playouts` (> 0) when that comes first; the records of its last report."""
    proc = oracle._running
    cid = oracle.next_id
    oracle.next_id += 2
    proc.send(f"{cid} lz-analyze {COLOUR[colour]} {interval_cs}")
    start = time.monotonic()
    _, head = proc.readline(start + STOP_GRACE)
    while head[:1] not in ("=", "?"):  # noise before the answer
        _, head = proc.readline(start + STOP_GRACE)
    if head[0] == "?":
        raise GtpError(f"{oracle.name}: lz-analyze failed: {head[1:].strip()}")
    last = None
    deadline = start + seconds
    while True:  # reports until the time or the playouts are up; the answer line may already carry one
        if "info " in head:
            last = head
            if playouts > 0 and sum(r["visits"] for r in parse_analysis(last)) >= playouts:
                break
        try:
            _, head = proc.readline(deadline)
        except EngineError as e:
            if e.kind != "timeout":
                raise
            break
    stop = cid + 1
    proc.send(f"{stop} name")  # any command ends the analysis (lz-analyze's convention)
    end = time.monotonic() + STOP_GRACE
    while True:
        _, line = proc.readline(end)
        if line.startswith("info "):
            last = line
        elif line.startswith(f"={stop}") or line.startswith(f"?{stop}"):
            proc.readline(end)  # the answer's empty line
            break
    if last is None:
        raise GtpError(f"{oracle.name}: no analysis report in {seconds:g} s")
    return parse_analysis(last)


def set_position(engine: GtpEngine, record: GameRecord, moves: int) -> None:
    """Give the engine the record's position after its first `moves` moves (board size, komi, setup stones as
    plays, then the moves); starts the engine if it is not running."""
    engine.ensure_started()
    engine.command_ok(f"boardsize {record.size}")
    engine.command_ok("clear_board")
    engine.command_ok(f"komi {record.komi}")
    for colour, stone in record.setup:
        engine.command_ok(f"play {COLOUR[colour]} {format_vertex(stone)}")
    for colour, point in record.moves[:moves]:
        engine.command_ok(f"play {COLOUR[colour]} {format_vertex(point)}")


def label_positions(
    oracle: GtpEngine, record: GameRecord, points: list[int], seconds: float, playouts: int, write
) -> int:
    """Value the positions after each move count in `points` (ascending), each analysed as `analyse` does;
    `write(label)` gets each. Returns how many were written."""
    done = 0
    for n in points:
        set_position(oracle, record, n)
        colour = to_move_after(record, n)
        start = time.monotonic()
        records = analyse(oracle, colour, seconds, playouts)
        best = max(records, key=lambda r: r["visits"])
        used = round(time.monotonic() - start, 2)
        total = sum(r["visits"] for r in records)
        write(Label(record.path, n, record.size, record.komi, colour, best["winrate"], best["move"], total, used))
        done += 1
    return done


def sample_points(record: GameRecord, skip: int, every: int) -> list[int]:
    """Move counts to label: skip, skip + every, ... up to the last position before the record ends by two
    passes (a finished position has nothing to search)."""
    last = len(record.moves)
    while last > 0 and record.moves[last - 1][1] is None:
        last -= 1  # trailing passes
    return list(range(skip, last + 1, every))


def read_labels(path: str) -> list[Label]:
    """The labels of a go-label file; ValueError naming the line that is not one."""
    labels = []
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                labels.append(Label(**json.loads(text)))
            except (ValueError, TypeError) as e:
                raise ValueError(f"{path}:{number}: not a go-label line ({e})") from None
    return labels


def sample_labels(path: str, positions: int, seed: int) -> list[Label]:
    """The labels of a go-label file, or a seeded draw of `positions` of them (0: all) in file order; ValueError when
    the file is unreadable or holds none."""
    try:
        labels = read_labels(path)
    except OSError as e:
        raise ValueError(str(e)) from None
    if not labels:
        raise ValueError(f"{path} holds no position")
    if 0 < positions < len(labels):
        keep = np.random.default_rng(seed).choice(len(labels), size=positions, replace=False)
        labels = [labels[i] for i in sorted(keep)]
    return labels


def add_go_label_parser(sub) -> None:
    p = sub.add_parser(
        "go-label", help="Go positions valued by an oracle engine (lz-analyze)", description=__doc__.splitlines()[0]
    )
    p.add_argument("records", nargs="+", help="SGF files or folders of them")
    p.add_argument("--oracle", required=True, help="GTP command of an engine that speaks lz-analyze")
    p.add_argument("--seconds", type=float, default=4.0, help="analysis time per position at most (default 4)")
    p.add_argument(
        "--playouts",
        type=int,
        default=0,
        help="stop a position's analysis once its root visits reach this (0: time only)",
    )
    p.add_argument("--every", type=int, default=3, help="label after every N-th move (default 3)")
    p.add_argument("--skip", type=int, default=4, help="first position: after this many moves (default 4)")
    p.add_argument("--out", required=True, help="JSON lines file, one position each")
    p.add_argument("--resume", action="store_true", help="keep the positions already in --out and add the rest")
    p.set_defaults(handler=run_go_label)


def run_go_label(a: argparse.Namespace) -> int:
    if a.every < 1 or a.skip < 0 or a.seconds <= 0 or a.playouts < 0:
        print(
            "go-label: --every must be at least 1, --skip and --playouts at least 0, --seconds above 0", file=sys.stderr
        )
        return 2
    if os.path.exists(a.out) and not a.resume:
        print(f"go-label: {a.out} exists (use --resume to add to it)", file=sys.stderr)
        return 2
    done: set = set()
    if os.path.exists(a.out):
        try:
            done = {(lab.record, lab.moves) for lab in read_labels(a.out)}
        except ValueError as e:
            print(f"go-label: {e}", file=sys.stderr)
            return 2
    oracle = GtpEngine(a.oracle, "oracle")
    written = 0
    try:
        with open(a.out, "a", encoding="utf-8") as out:

            def write(label: Label) -> None:
                out.write(json.dumps(asdict(label)) + "\n")
                out.flush()

            for path in sgf_paths(a.records):
                try:
                    record = read_sgf(path)
                    points = [n for n in sample_points(record, a.skip, a.every) if (path, n) not in done]
                    written += label_positions(oracle, record, points, a.seconds, a.playouts, write)
                except (ValueError, GtpError) as e:  # not a Go record, an illegal move, an oracle refusal
                    print(f"go-label: skipped {path}: {e}", file=sys.stderr)
                print(f"go-label: {path}: {written} positions so far", file=sys.stderr, flush=True)
    except EngineError as e:
        print(f"go-label: the oracle failed ({e}); --resume continues", file=sys.stderr)
        return 1
    finally:
        oracle.stop_process()
    print(f"go-label: {written} positions written to {a.out}")
    return 0
