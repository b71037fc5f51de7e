"""Engine-vs-engine matches (USI shogi or GTP Go) with a strict referee, Elo, LOS, SPRT and records.

Games come in pairs: game 2k and 2k+1 start from the same opening with colours swapped, so the
pentanomial statistics (learn/match/elo.py) apply. `concurrency` worker threads each own one process per
engine (and, for Go, one referee GNU Go) and reuse them from game to game (`isready`/`usinewgame`,
`clear_board`); a process that crashed, hung or broke the protocol is restarted before its next game.
The first engine's instance is started before any game so a wrong command fails at once with a clear
message. Results are printed one line per game with the running score, then a summary; the same data
goes to a JSON file for scripts (learning reads it), rewritten after every game, so a match that is killed
keeps its finished games and `resume` plays only the missing ones (same engines, options and clock).
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from . import elo
from .clock import RefereeClock, TimeControl
from .engines import EngineError, GtpEngine, UsiEngine
from .go_game import GoGame, GoRules
from .openings import Opening, load_go_openings, load_shogi_openings
from .outcome import FAULTS, GameResult
from .records import KIF_ENCODING, write_csa, write_kif
from .shogi_game import ShogiGame, ShogiRules, opening_board

GAMES = ("shogi", "go")


class MatchError(Exception):
    """The match cannot run (bad configuration, an engine that does not start, a failing referee)."""


@dataclass
class EngineSpec:
    name: str
    command: str
    options: dict = field(default_factory=dict)  # USI setoption name -> value


@dataclass
class SprtSpec:
    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05
    stop: bool = True  # stop scheduling games once a hypothesis is accepted


@dataclass
class MatchConfig:
    game: str
    engines: tuple  # (EngineSpec, EngineSpec)
    tc: TimeControl
    games: int = 2
    concurrency: int = 1
    openings: list = field(default_factory=lambda: [Opening(label="startpos")])
    shogi_rules: ShogiRules = field(default_factory=ShogiRules)
    go_rules: GoRules = field(default_factory=GoRules)
    sprt: SprtSpec | None = None
    records_dir: str | None = None
    log_dir: str | None = None
    json_path: str | None = None
    confidence: float = elo.DEFAULT_CONFIDENCE
    resume: bool = False  # take the finished games from json_path (same settings) and play the rest

    def __post_init__(self):
        if self.game not in GAMES:
            raise MatchError(f"unknown game {self.game!r}; expected one of {GAMES}")
        if self.games < 1 or self.concurrency < 1:
            raise MatchError("--games and --concurrency must be at least 1")
        if self.game == "go":
            try:  # GTP clocks: byoyomi, sudden death and movetime only
                RefereeClock(self.tc).gtp_time_settings()
            except ValueError as e:
                raise MatchError(str(e)) from None
        if self.game == "shogi":
            for opening in self.openings:
                try:
                    opening_board(opening)
                except ValueError as e:
                    raise MatchError(str(e)) from None


class Tally:
    """Running W-L-D of engine 1 and the pentanomial pair counts."""

    def __init__(self):
        self.results: dict[int, GameResult] = {}

    def add(self, result: GameResult) -> None:
        self.results[result.index] = result

    def wld(self) -> tuple[int, int, int]:
        scores = [r.first_score for r in self.results.values()]
        return scores.count(1.0), scores.count(0.0), scores.count(0.5)

    def pairs(self) -> list[int]:
        """Counts of pair points 0, 1/2, 1, 3/2, 2 (complete pairs only)."""
        counts = [0] * 5
        for i, r in self.results.items():
            if i % 2 == 0 and i + 1 in self.results:
                counts[int(2 * (r.first_score + self.results[i + 1].first_score))] += 1
        return counts


def summarize(tally: Tally, names: tuple, sprt: SprtSpec | None, confidence: float, restarts: dict) -> dict:
    """Everything the final report needs, JSON-ready (engine 1's point of view)."""
    w, l, d = tally.wld()
    n = w + l + d
    pairs = tally.pairs()
    tri = elo.trinomial(w, l, d, confidence)
    summary = {
        "engine1": names[0],
        "engine2": names[1],
        "games": n,
        "wins": w,
        "losses": l,
        "draws": d,
        "score": (w + d / 2) / n if n else None,
        "elo_trinomial": tri.as_dict(),
        "pentanomial": pairs,
        "elo_pentanomial": elo.pentanomial(pairs, confidence).as_dict() if sum(pairs) else None,
        "los": elo.los(w, l),
        "faults": _faults(tally, names),
        "restarts": restarts,
        "reasons": dict(Counter(r.reason for r in tally.results.values())),
        "slowest_move_s": _slowest(tally, names),
    }
    if sprt is not None:
        summary["sprt"] = elo.sprt_pentanomial(
            pairs, elo0=sprt.elo0, elo1=sprt.elo1, alpha=sprt.alpha, beta=sprt.beta
        ).as_dict()
    return summary


def _slowest(tally: Tally, names: tuple) -> dict:
    """Per engine: its longest answer to one go/genmove over the match, in seconds (None before any)."""
    out: dict[str, float | None] = {names[0]: None, names[1]: None}
    for r in tally.results.values():
        for name, seconds in zip(names, r.slowest):
            out[name] = seconds if out[name] is None else max(out[name], seconds)
    return out


def _faults(tally: Tally, names: tuple) -> dict:
    """Per engine: how many games it lost by a program fault, by kind."""
    out: dict[str, dict[str, int]] = {names[0]: {}, names[1]: {}}
    for r in tally.results.values():
        if r.reason in FAULTS and r.winner is not None:
            first_lost = r.first_score == 0.0
            bucket = out[names[0] if first_lost else names[1]]
            bucket[r.reason] = bucket.get(r.reason, 0) + 1
    return out


def _fmt_elo(e: dict | None) -> str:
    if not e or e["n"] == 0:
        return "n/a"
    if e["elo"] is None:  # a clean sweep: only the exact one-sided bound is finite
        return f">= {e['lower']:+.1f}" if e["lower"] is not None else f"<= {e['upper']:+.1f}"
    lo = "-inf" if e["lower"] is None else f"{e['lower'] + 0.0:.1f}"
    hi = "+inf" if e["upper"] is None else f"{e['upper'] + 0.0:.1f}"
    err = "inf" if e["error"] is None else f"{e['error']:.1f}"
    return f"{e['elo'] + 0.0:+.1f} +/- {err} [{lo}, {hi}]"


def format_summary(s: dict) -> str:
    conf = int(round(100 * s["elo_trinomial"]["confidence"]))
    lines = [
        f"Score of {s['engine1']} vs {s['engine2']}: {s['wins']} - {s['losses']} - {s['draws']} "
        f"(W-L-D) [{100 * (s['score'] or 0):.1f}%] {s['games']} games",
        f"Elo difference ({conf}%, trinomial): {_fmt_elo(s['elo_trinomial'])}",
        f"Elo difference ({conf}%, pentanomial, {sum(s['pentanomial'])} pairs {s['pentanomial']}): "
        f"{_fmt_elo(s['elo_pentanomial'])}",
        f"LOS: {100 * s['los']:.1f}%",
        f"Reasons: {s['reasons']}  Faults: {s['faults']}  Restarts: {s['restarts']}",
        "Slowest move: "
        + ", ".join(f"{name} {'n/a' if v is None else f'{v:.3f} s'}" for name, v in s["slowest_move_s"].items()),
    ]
    if "sprt" in s:
        p = s["sprt"]
        lines.append(
            f"SPRT ({p['model']}, elo0={p['elo0']}, elo1={p['elo1']}, alpha={p['alpha']}, "
            f"beta={p['beta']}): LLR {p['llr']:.3f} [{p['lower_bound']:.3f}, {p['upper_bound']:.3f}]"
            f" -> {p['verdict']}"
        )
    return "\n".join(lines)


class Worker:
    """One concurrency slot: its own engine processes (and referee), reused across games."""

    def __init__(self, slot: int, config: MatchConfig):
        self.config = config
        specs = config.engines

        def log(i):
            return (
                os.path.join(config.log_dir, f"slot{slot}-engine{i + 1}-{specs[i].name}.log")
                if config.log_dir
                else None
            )

        self.engines: list[UsiEngine] | list[GtpEngine]
        self.referee: GtpEngine | None = None
        if config.game == "shogi":
            self.engines = [UsiEngine(s.command, s.name, s.options, log_path=log(i)) for i, s in enumerate(specs)]
        else:
            self.engines = [GtpEngine(s.command, s.name, log_path=log(i)) for i, s in enumerate(specs)]
            ref_log = os.path.join(config.log_dir, f"slot{slot}-referee.log") if config.log_dir else None
            self.referee = GtpEngine(config.go_rules.referee, "referee", log_path=ref_log)

    def play(self, index: int, opening: Opening) -> tuple[GameResult, dict]:
        """Play game `index` (engine 1 is Black on even indices); returns the result and record texts."""
        first_black = index % 2 == 0
        sides = {"b": self.engines[0 if first_black else 1], "w": self.engines[1 if first_black else 0]}
        if self.config.game == "shogi":
            result, record = ShogiGame(
                index, sides, opening, self.config.tc, self.config.shogi_rules, first_black
            ).play()
            kif = write_kif(record).encode(KIF_ENCODING, errors="replace")
            return result, {"csa": write_csa(record).encode(), "kif": kif}
        assert self.referee is not None  # a Go worker always has one (__init__)
        try:
            result, sgf = GoGame(
                index, sides, self.referee, opening, self.config.tc, self.config.go_rules, first_black
            ).play()
        except EngineError as e:
            self.referee.kill()
            raise MatchError(f"the Go referee failed: {e}") from e
        return result, {"sgf": sgf}

    def close(self) -> None:
        for engine in self.engines + ([self.referee] if self.referee else []):
            engine.stop_process()


class Match:
    """Runs a configured match; `run()` returns the summary dict (also printed and written as JSON)."""

    def __init__(self, config: MatchConfig, out=sys.stdout):
        self.config = config
        self.out = out
        self.tally = Tally()
        self.lock = threading.Lock()
        self.next_index = 0
        self.stop = threading.Event()
        self.interrupted = threading.Event()  # Ctrl-C: the games in progress are cut short and not counted
        self.error: BaseException | None = None
        self.names = tuple(s.name for s in config.engines)
        self.workers: list[Worker] = []

    def _take(self) -> int | None:
        with self.lock:
            while self.next_index in self.tally.results:  # finished before a resume
                self.next_index += 1
            if self.stop.is_set() or self.next_index >= self.config.games:
                return None
            self.next_index += 1
            return self.next_index - 1

    def _opening(self, index: int) -> Opening:
        openings = self.config.openings
        return openings[(index // 2) % len(openings)]

    def _work(self, worker: Worker) -> None:
        try:
            while (index := self._take()) is not None:
                result, texts = worker.play(index, self._opening(index))
                if self.interrupted.is_set():  # ended by the closing of its engines: replayed on a resume
                    return
                result.records = self._write_records(index, texts)
                self._record(result)
        except BaseException as e:  # surface it in the main thread; stop the others
            with self.lock:
                self.error = self.error or e
            self.stop.set()

    def _write_records(self, index: int, texts: dict) -> list:
        if not self.config.records_dir:
            return []
        paths = []
        for ext, data in texts.items():
            path = os.path.join(self.config.records_dir, f"game-{index + 1:04d}.{ext}")
            with open(path, "wb") as f:
                f.write(data)
            paths.append(path)
        return paths

    def _record(self, result: GameResult) -> None:
        with self.lock:
            self.tally.add(result)
            if self.config.json_path:  # before the line, so a printed game is always in the file
                self.write_json(self.summary())
            w, l, d = self.tally.wld()
            n = w + l + d
            black, white = self.names if result.first_is_black else self.names[::-1]
            score = {None: "1/2-1/2", "b": "1-0", "w": "0-1"}[result.winner]
            detail = f" [{result.detail}]" if result.detail and result.reason in FAULTS else ""
            self.out.write(
                f"game {result.index + 1:4d}/{self.config.games}: {black} vs {white}: {score} "
                f"({result.reason}{detail}, {result.plies} plies, {result.seconds:.1f} s) | "
                f"{self.names[0]} {w}-{l}-{d} {100 * (w + d / 2) / n:.1f}%\n"
            )
            self.out.flush()
            sprt = self.config.sprt
            if sprt is not None and sprt.stop:
                verdict = elo.sprt_pentanomial(
                    self.tally.pairs(), elo0=sprt.elo0, elo1=sprt.elo1, alpha=sprt.alpha, beta=sprt.beta
                ).verdict
                if verdict != "continue":
                    self.stop.set()

    def _start_first_worker(self) -> None:
        """Start slot 0's processes now: a wrong command must fail before any game is counted."""
        worker = self.workers[0]
        for engine in worker.engines + ([worker.referee] if worker.referee else []):
            try:
                engine.ensure_started()
            except EngineError as e:
                raise MatchError(f"engine {engine.name!r} does not start: {e}") from None

    def _settings(self) -> dict:
        """What a resumed match must share with the games it takes over."""
        cfg = self.config
        return {
            "game": cfg.game,
            "engines": [{"name": s.name, "command": s.command, "options": s.options} for s in cfg.engines],
            "time_control": cfg.tc.as_dict(),
            "rules": dict((cfg.shogi_rules if cfg.game == "shogi" else cfg.go_rules).__dict__),
        }

    def _load_finished(self) -> None:
        """Resume: the finished games of json_path, after checking they were played with these settings."""
        cfg = self.config
        if not cfg.json_path or not os.path.exists(cfg.json_path):
            return
        try:
            with open(cfg.json_path, encoding="utf-8") as f:
                data = json.load(f)
            before = {key: data[key] for key in self._settings()}
            games = [GameResult.from_dict(g) for g in data["games"]]
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise MatchError(f"cannot resume from {cfg.json_path}: {e}") from None
        now = json.loads(json.dumps(self._settings()))  # tuples as lists, as in the file
        if before != now:
            changed = ", ".join(key for key in now if before[key] != now[key])
            raise MatchError(f"cannot resume from {cfg.json_path}: it was played with other {changed}")
        for result in games:
            if result.index < cfg.games:
                self.tally.add(result)
        self.out.write(f"resuming: {len(self.tally.results)} of {cfg.games} games already played\n")

    def run(self) -> dict:
        cfg = self.config
        for folder in (cfg.records_dir, cfg.log_dir):
            if folder:
                os.makedirs(folder, exist_ok=True)
        if cfg.resume:
            self._load_finished()
        self.workers = [Worker(slot, cfg) for slot in range(min(cfg.concurrency, cfg.games))]
        started = time.monotonic()
        try:
            self._start_first_worker()
            self.out.write(
                f"{cfg.game} match {self.names[0]} vs {self.names[1]}: {cfg.games} games, "
                f"{cfg.tc.describe()}, {len(cfg.openings)} opening(s), concurrency "
                f"{len(self.workers)}\n"
            )
            threads = [threading.Thread(target=self._work, args=(w,), daemon=True) for w in self.workers]
            for t in threads:
                t.start()
            for t in threads:
                while t.is_alive():
                    t.join(0.2)
        except KeyboardInterrupt:
            self.interrupted.set()
            self.stop.set()
            self.out.write("interrupted: summary of the games finished so far\n")
        finally:
            for w in self.workers:
                w.close()
        if self.error is not None and not self.interrupted.is_set():
            raise self.error if isinstance(self.error, MatchError) else MatchError(repr(self.error))
        summary = self.summary()
        summary["seconds"] = round(time.monotonic() - started, 3)
        self.out.write(format_summary(summary) + "\n")
        if cfg.json_path:
            self.write_json(summary)
        return summary

    def summary(self) -> dict:
        restarts = {
            w.engines[i].name + f"@slot{k}": max(0, w.engines[i].restarts)
            for k, w in enumerate(self.workers)
            for i in range(2)
        }
        return summarize(self.tally, self.names, self.config.sprt, self.config.confidence, restarts)

    def write_json(self, summary: dict) -> None:
        cfg = self.config
        assert cfg.json_path is not None
        data = {
            **self._settings(),
            "summary": summary,
            "games": [self.tally.results[i].as_dict() for i in sorted(self.tally.results)],
        }
        folder = os.path.dirname(os.path.abspath(cfg.json_path))
        os.makedirs(folder, exist_ok=True)
        tmp = cfg.json_path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, ensure_ascii=False)
        os.replace(tmp, cfg.json_path)


def load_openings(game: str, path: str | None, size: int, shuffle_seed: int | None) -> list[Opening]:
    """Openings from a file (or the empty start position), optionally shuffled reproducibly."""
    if path is None:
        return [Opening(label="startpos" if game == "shogi" else "empty")]
    openings = load_shogi_openings(path) if game == "shogi" else load_go_openings(path, size)
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(openings)
    return openings
