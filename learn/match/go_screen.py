"""`python -m learn go-screen`: a Go engine's moves on labelled positions, each valued by a referee engine.

A match of 100 games costs an hour at 2 s a move and resolves about ±70 Elo. The screen asks a cheaper question
first: on positions from real games (a `go-label` file, which holds an oracle's value of each position for the side
to move), which move does a candidate engine choose at a fixed budget, and what is that move worth? A referee (any
GTP engine that speaks `lz-analyze`) analyses the position after the move for the opponent; the move's value is
1 − the opponent's winrate. Over the positions the mean value, and the mean shortfall against the label (the
regret: how much each move gives away), rank settings and engines. The referee's values are cached per position
and move, so two candidates that choose the same move get the same value: compared position by position, only the
positions where their moves differ carry noise (`--against`).

Output, in the folder `--out`: NAME.jsonl (one line per position: the move, its value, the label) and
referee.jsonl (the cache, with the referee's command and budget, so that another referee does not reuse it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import threading
import time
from dataclasses import asdict, dataclass

from .engines import EngineError, GtpEngine, GtpError
from .go_label import Label, analyse, read_labels, set_position, to_move_after
from .go_review import COLOUR, GameRecord, read_sgf

REFEREE_FILE = "referee.jsonl"
MOVE_TIMEOUT = 600.0  # s allowed for one genmove of the candidate


@dataclass
class Screened:
    """One position of a screen: the candidate's `move` (GTP vertex, upper case; RESIGN counts 0) and its `value`
    for the side to move by the referee, against the label's value of the position."""

    record: str
    moves: int
    to_move: str
    move: str
    value: float
    label: float
    seconds: float  # the candidate's thinking time

    @property
    def regret(self) -> float:
        return self.label - self.value


def pick_positions(labels: list[Label], count: int, low: float, high: float, min_moves: int, seed: int) -> list[Label]:
    """`count` labels drawn at random (seeded) among those whose value lies in [low, high] after at least
    `min_moves` moves (open positions: a lost or won position says little about a move), in record order."""
    open_ = [lab for lab in labels if low <= lab.value <= high and lab.moves >= min_moves]
    chosen = random.Random(seed).sample(open_, min(count, len(open_)))
    return sorted(chosen, key=lambda lab: (lab.record, lab.moves))


def referee_value(
    referee: GtpEngine, record: GameRecord, moves: int, move: str, seconds: float, playouts: int
) -> float:
    """The value of `move` for the side to move after the record's first `moves` moves: 1 − the winrate of the
    referee's most searched answer for the opponent after the move."""
    set_position(referee, record, moves)
    colour = to_move_after(record, moves)
    referee.command_ok(f"play {COLOUR[colour]} {move}")
    records = analyse(referee, "w" if colour == "b" else "b", seconds, playouts)
    return 1.0 - max(records, key=lambda r: r["visits"])["winrate"]


class RefereeCache:
    """Referee values by (record, moves, move), read from and appended to a JSON lines file; lines made by
    another referee command or budget are ignored. Thread-safe."""

    def __init__(self, path: str, referee: str, playouts: int, seconds: float):
        self.path, self.key = path, {"referee": referee, "playouts": playouts, "seconds": seconds}
        self.values: dict = {}
        self.lock = threading.Lock()
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                for number, text in enumerate(f, 1):
                    if not text.strip():
                        continue
                    try:
                        row = json.loads(text)
                        if all(row.get(k) == v for k, v in self.key.items()):
                            self.values[(row["record"], row["moves"], row["move"])] = float(row["value"])
                    except (ValueError, KeyError, TypeError) as e:
                        raise ValueError(f"{path}:{number}: not a referee line ({e})") from None

    def get(self, record: str, moves: int, move: str) -> float | None:
        with self.lock:
            return self.values.get((record, moves, move))

    def put(self, record: str, moves: int, move: str, value: float) -> None:
        with self.lock:
            self.values[(record, moves, move)] = value
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps({"record": record, "moves": moves, "move": move, "value": value, **self.key}) + "\n")


def screen_positions(
    positions: list[Label],
    candidate: GtpEngine,
    referee: GtpEngine,
    cache: RefereeCache,
    seconds: float,
    playouts: int,
    write,
) -> int:
    """Ask the candidate for its move in each position and value the move (the cache, else the referee);
    `write(Screened)` gets each. Returns how many were written."""
    records: dict[str, GameRecord] = {}
    done = 0
    for lab in positions:
        if lab.record not in records:
            records[lab.record] = read_sgf(lab.record)
        record = records[lab.record]
        set_position(candidate, record, lab.moves)
        start = time.monotonic()
        move = candidate.command_ok(f"genmove {COLOUR[lab.to_move]}", MOVE_TIMEOUT).strip().upper()
        used = round(time.monotonic() - start, 2)
        value = 0.0 if move == "RESIGN" else cache.get(lab.record, lab.moves, move)
        if value is None:
            value = referee_value(referee, record, lab.moves, move, seconds, playouts)
            cache.put(lab.record, lab.moves, move, value)
        write(Screened(lab.record, lab.moves, lab.to_move, move, value, lab.value, used))
        done += 1
    return done


def read_screen(path: str) -> list[Screened]:
    """The lines of a NAME.jsonl file; ValueError naming the line that is not one."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if text.strip():
                try:
                    rows.append(Screened(**json.loads(text)))
                except (ValueError, TypeError) as e:
                    raise ValueError(f"{path}:{number}: not a go-screen line ({e})") from None
    return rows


def summary(folder: str, against: str | None) -> list[str]:
    """One line per screen in the folder: positions, mean value, mean regret, and against the screen `against`
    the mean paired difference of the values over their common positions with its standard error and the share
    of positions where both chose the same move."""
    names = sorted(f[: -len(".jsonl")] for f in os.listdir(folder) if f.endswith(".jsonl") and f != REFEREE_FILE)
    rows = {n: {(r.record, r.moves): r for r in read_screen(os.path.join(folder, f"{n}.jsonl"))} for n in names}
    base = rows.get(against, {}) if against else {}
    lines = [f"{'screen':24} {'n':>5} {'value':>6} {'regret':>7} {'diff':>8} {'se':>7} {'same':>5}"]
    for n in names:
        r = list(rows[n].values())
        if not r:
            continue
        value = sum(x.value for x in r) / len(r)
        regret = sum(x.regret for x in r) / len(r)
        line = f"{n:24} {len(r):5d} {value:6.3f} {regret:7.3f}"
        common = [k for k in rows[n] if k in base]
        if against and n != against and len(common) > 1:
            d = [rows[n][k].value - base[k].value for k in common]
            mean = sum(d) / len(d)
            se = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1) / len(d))
            same = sum(rows[n][k].move == base[k].move for k in common) / len(common)
            line += f" {mean:+8.4f} {se:7.4f} {same:5.2f}"
        lines.append(line)
    return lines


def add_go_screen_parser(sub) -> None:
    p = sub.add_parser(
        "go-screen",
        help="a Go engine's moves on labelled positions, valued by a referee (lz-analyze)",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("labels", help="a go-label file: the positions and their values")
    p.add_argument("--out", required=True, help="folder of the screens and the referee's cache")
    p.add_argument("--engine", help="GTP command of the candidate (give it a fixed budget, e.g. --playouts)")
    p.add_argument("--name", help="name of this screen (its file NAME.jsonl in --out)")
    p.add_argument("--referee", help="GTP command of an engine that speaks lz-analyze")
    p.add_argument("--playouts", type=int, default=16000, help="referee's root visits per move (default 16000)")
    p.add_argument("--seconds", type=float, default=60.0, help="referee's analysis time at most (default 60)")
    p.add_argument("--positions", type=int, default=240, help="positions drawn from the labels (default 240)")
    p.add_argument("--low", type=float, default=0.2, help="open positions: label at least this (default 0.2)")
    p.add_argument("--high", type=float, default=0.8, help="... and at most this (default 0.8)")
    p.add_argument("--min-moves", type=int, default=6, help="... after at least this many moves (default 6)")
    p.add_argument("--seed", type=int, default=1, help="seed of the draw (the same positions for every screen)")
    p.add_argument("--concurrency", type=int, default=1, help="candidate-referee pairs at once (default 1)")
    p.add_argument("--resume", action="store_true", help="keep the positions already in NAME.jsonl, add the rest")
    p.add_argument("--against", help="compare with this screen of the folder, position by position")
    p.add_argument("--summary", action="store_true", help="only print the folder's table")
    p.set_defaults(handler=run_go_screen)


def run_go_screen(a: argparse.Namespace) -> int:
    if a.summary:
        try:
            print("\n".join(summary(a.out, a.against)))
        except (OSError, ValueError) as e:
            print(f"go-screen: {e}", file=sys.stderr)
            return 2
        return 0
    if not (a.engine and a.name and a.referee):
        print("go-screen: --engine, --name and --referee are needed (or --summary)", file=sys.stderr)
        return 2
    if a.positions < 1 or a.concurrency < 1 or a.playouts < 0 or a.seconds <= 0 or a.name == "referee":
        print("go-screen: bad --positions, --concurrency, --playouts, --seconds or --name", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"{a.name}.jsonl")
    if os.path.exists(path) and not a.resume:
        print(f"go-screen: {path} exists (use --resume to add to it)", file=sys.stderr)
        return 2
    try:
        positions = pick_positions(read_labels(a.labels), a.positions, a.low, a.high, a.min_moves, a.seed)
        done = {(r.record, r.moves) for r in read_screen(path)} if os.path.exists(path) else set()
        cache = RefereeCache(os.path.join(a.out, REFEREE_FILE), a.referee, a.playouts, a.seconds)
    except (OSError, ValueError) as e:
        print(f"go-screen: {e}", file=sys.stderr)
        return 2
    todo = [lab for lab in positions if (lab.record, lab.moves) not in done]
    lock = threading.Lock()
    failures: list[str] = []
    out = open(path, "a", encoding="utf-8")

    def write(row: Screened) -> None:
        with lock:
            out.write(json.dumps(asdict(row)) + "\n")
            out.flush()

    def worker(share: list[Label], index: int) -> None:
        candidate = GtpEngine(a.engine, f"{a.name}-{index}")
        referee = GtpEngine(a.referee, f"referee-{index}")
        try:
            screen_positions(share, candidate, referee, cache, a.seconds, a.playouts, write)
        except (EngineError, GtpError, ValueError) as e:  # a dead engine, a refused move, a bad record
            failures.append(str(e))
        finally:
            candidate.stop_process()
            referee.stop_process()

    threads = [threading.Thread(target=worker, args=(todo[i :: a.concurrency], i)) for i in range(a.concurrency)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        out.close()
    for f in failures:
        print(f"go-screen: stopped: {f}; --resume continues", file=sys.stderr)
    print("\n".join(summary(a.out, a.against)))
    return 1 if failures else 0
