"""The Go referee: plays one game between two GTP engines and scores it with a real GNU Go.

Every move an engine generates is replayed into a separate referee GNU Go (`play` must succeed, else the
mover loses by an illegal move) and forwarded to the opponent. Two consecutive passes end the game (or
the optional move limit); the referee's `final_score` (area scoring with `--chinese-rules`, dead stones
settled by GNU Go's own status analysis) decides it. `resign` loses; a `genmove` past the clock, a crash or
a `?` answer to `genmove` loses, and the faulty process is killed (GTP has no `stop`) and restarted for
the next game.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass

from .clock import RefereeClock, TimeControl
from .engines import EngineError, GtpEngine, GtpError
from .openings import Opening, format_vertex, parse_vertex
from .outcome import GameResult, other_side
from .records import write_sgf

GNUGO_ARGS = "--mode gtp --chinese-rules"
COLOUR_NAMES = {"b": "black", "w": "white"}


def find_gnugo() -> str:
    """GNU Go's path: on PATH, or Debian's /usr/games (not on root's PATH); plain "gnugo" otherwise."""
    return shutil.which("gnugo") or ("/usr/games/gnugo" if os.path.exists("/usr/games/gnugo") else "gnugo")


DEFAULT_REFEREE = f"{find_gnugo()} {GNUGO_ARGS}"


@dataclass(frozen=True)
class GoRules:
    size: int = 9
    komi: float = 7.0
    max_moves: int = 0  # 0 = no limit (the game ends by two passes or a resignation)
    referee: str = DEFAULT_REFEREE

    def __post_init__(self):
        if not 2 <= self.size <= 25:
            raise ValueError(f"board size {self.size} outside 2..25")


def parse_score(text: str) -> tuple[str | None, float]:
    """GTP `final_score` ('B+6.5', 'W+2', '0') -> (winner or None, margin)."""
    t = text.strip().upper()
    if t in ("0", "DRAW", "JIGO"):
        return None, 0.0
    if len(t) > 2 and t[0] in "BW" and t[1] == "+":
        return ("b" if t[0] == "B" else "w"), float(t[2:])
    raise ValueError(f"cannot read final score {text!r}")


class GoGame:
    """One game; `play()` returns the GameResult and the SGF bytes."""

    def __init__(
        self,
        index: int,
        engines: dict,
        referee: GtpEngine,
        opening: Opening,
        tc: TimeControl,
        rules: GoRules,
        first_is_black: bool,
    ):
        self.index, self.engines, self.referee, self.opening = index, engines, referee, opening
        self.tc, self.rules, self.first_is_black = tc, rules, first_is_black
        self.moves = list(opening.moves)  # (colour, point | None)
        self.slowest = {"b": 0.0, "w": 0.0}  # each side's longest answer to genmove, s

    def play(self) -> tuple[GameResult, bytes]:
        started = time.monotonic()
        self._setup_referee()
        winner, reason, detail = self._run()
        result = GameResult.of_game(self, winner, reason, detail, started)
        re = (
            "0"
            if winner is None
            else f"{winner.upper()}+"
            + {"score": detail.split("+")[-1], "resign": "R", "time": "T", "hang": "T"}.get(reason, "F")
        )
        sgf = write_sgf(
            self.rules.size,
            self.rules.komi,
            self.engines["b"].name,
            self.engines["w"].name,
            self.moves,
            re,
            comment=f"{reason} {detail}".strip(),
            date=time.strftime("%Y-%m-%d"),
        )
        return result, sgf

    def _setup(self, engine: GtpEngine) -> None:
        """New game on one engine: size, empty board, komi, clock (optional command), opening moves."""
        engine.ensure_started()
        engine.command_ok(f"boardsize {self.rules.size}")
        engine.command_ok("clear_board")
        engine.command_ok(f"komi {self.rules.komi}")
        for colour, point in self.opening.moves:
            engine.command_ok(f"play {COLOUR_NAMES[colour]} {format_vertex(point)}")

    def _setup_referee(self) -> None:
        try:
            self._setup(self.referee)
        except GtpError as e:
            raise ValueError(f"opening {self.opening.label!r} rejected by the referee: {e}") from None

    def _run(self) -> tuple[str | None, str, str]:
        clock = RefereeClock(self.tc)
        for side in ("b", "w"):
            engine = self.engines[side]
            try:
                self._setup(engine)
                engine.command(clock.gtp_time_settings())  # optional command: failure is fine
            except (EngineError, GtpError) as e:
                engine.kill()
                return other_side(side), getattr(e, "kind", "protocol"), str(e)
        side = other_side(self.moves[-1][0]) if self.moves else "b"
        passes = 0
        while passes < 2:
            if self.rules.max_moves and len(self.moves) >= self.rules.max_moves:
                break
            verdict, point = self._turn(side, clock)
            if verdict is not None:
                return verdict
            passes = passes + 1 if point is None else 0
            side = other_side(side)
        return self._score()

    def _turn(self, side: str, clock: RefereeClock):
        """Ask `side` for a move, check and forward it; ((winner, reason, detail) | None, point)."""
        engine, colour = self.engines[side], COLOUR_NAMES[side]
        allowance_s = clock.allowance_ms(side) / 1000.0
        try:
            engine.command(clock.gtp_time_left(side))
            start = time.monotonic()
            ok, answer, _ = engine.command(f"genmove {colour}", allowance_s)
            elapsed = time.monotonic() - start
            self.slowest[side] = max(self.slowest[side], elapsed)
        except EngineError as e:
            engine.kill()
            reason = "time" if e.kind == "timeout" else e.kind
            return (other_side(side), reason, str(e)), None
        if not ok:
            engine.kill()
            return (other_side(side), "protocol", f"genmove failed: {answer}"), None
        if not clock.on_time(side, elapsed * 1000.0):
            return (other_side(side), "time", f"{elapsed:.3f} s > {allowance_s:.3f} s"), None
        if answer.strip().lower() == "resign":
            return (other_side(side), "resign", ""), None
        try:
            point = parse_vertex(answer, self.rules.size)
            self.referee.command_ok(f"play {colour} {format_vertex(point)}")
        except (ValueError, GtpError) as e:
            return (other_side(side), "illegal", f"{answer!r}: {e}"), None
        clock.spend(side, elapsed * 1000.0)
        self.moves.append((side, point))
        opponent = self.engines[other_side(side)]
        try:
            opponent.command_ok(f"play {colour} {format_vertex(point)}")
        except (EngineError, GtpError) as e:
            opponent.kill()
            return (side, "protocol", f"opponent refused {format_vertex(point)}: {e}"), point
        return None, point

    def _score(self) -> tuple[str | None, str, str]:
        answer = self.referee.command_ok("final_score", timeout=120.0)
        winner, _ = parse_score(answer)
        return winner, "score", answer
