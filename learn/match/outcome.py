"""The result of one refereed game, shared by the shogi and Go referees and the match runner."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

# reasons that are the loser's fault as a program (not a lost position)
FAULTS = ("time", "hang", "crash", "illegal", "false-declaration", "protocol")


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
