"""The result of one refereed game, shared by the shogi and Go referees and the match runner."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Protocol

# reasons that are the loser's fault as a program (not a lost position)
FAULTS = ("time", "hang", "crash", "illegal", "false-declaration", "protocol")


def other_side(side: str) -> str:
    """The opponent of side "b" or "w"."""
    return "w" if side == "b" else "b"


class RefereedGame(Protocol):
    """What a referee's game (shogi_game.ShogiGame, go_game.GoGame) holds for its result."""

    index: int
    first_is_black: bool
    moves: list
    slowest: dict  # each side's longest answer, s: {"b": s, "w": s}

    @property
    def opening(self): ...


@dataclass
class GameResult:
    index: int  # game number in the match, from 0
    first_is_black: bool  # engine 1 played Black (shogi sente / Go black)
    winner: str | None  # "b", "w" or None for a draw
    reason: str  # mate, resign, time, hang, crash, illegal, false-declaration, declaration, ...
    detail: str = ""
    plies: int = 0
    opening: str = ""
    seconds: float = 0.0
    records: list = field(default_factory=list)
    slowest: list = field(default_factory=list)  # [engine 1's, engine 2's] longest answer to one go/genmove, s

    @classmethod
    def of_game(cls, game: RefereedGame, winner: str | None, reason: str, detail: str, started: float) -> GameResult:
        """The result of a referee's game that ended now; started: its time.monotonic() at the start."""
        return cls(
            game.index,
            game.first_is_black,
            winner,
            reason,
            detail,
            len(game.moves),
            game.opening.label,
            time.monotonic() - started,
            slowest=cls.slowest_by_engine(game.first_is_black, game.slowest),
        )

    @staticmethod
    def slowest_by_engine(first_is_black: bool, slowest_by_side: dict) -> list:
        """[engine 1's, engine 2's] longest answer from the referee's {"b": s, "w": s}."""
        first, second = ("b", "w") if first_is_black else ("w", "b")
        return [slowest_by_side[first], slowest_by_side[second]]

    @property
    def first_score(self) -> float:
        """Points of engine 1 in this game: 1, 1/2 or 0."""
        if self.winner is None:
            return 0.5
        return 1.0 if (self.winner == "b") == self.first_is_black else 0.0

    def as_dict(self) -> dict:
        d = asdict(self)
        d["first_score"] = self.first_score
        return d

    @classmethod
    def from_dict(cls, d: dict) -> GameResult:
        """The result `as_dict` wrote (its derived first_score is dropped)."""
        return cls(**{k: v for k, v in d.items() if k != "first_score"})
