"""The typed vocabulary of the engine API (usi_engine/engine.py): what a search is given and what it reports.

Input: `GoLimits` (everything that bounds one search), with both sides' `Clocks` (usi_engine/clock.py) as a
GUI sends them.
Output, through `EngineCallbacks` (which any search thread may call): `SearchInfo` (the search's state, with
its `PvLine`s and their `Score`s), `MateAnswer` (the answer of a mate search), the best move as text, free
messages; `BenchResult` is what `Engine.bench` returns. The protocol front-end (usi.py) turns these into
protocol lines. Pure Python: imported before `usiok`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from .clock import Clocks

if TYPE_CHECKING:
    from .search.result import SearchResult


# --- typed input --------------------------------------------------------------------------------
@dataclass
class GoLimits:
    """What bounds one search: the clocks (movetime included), fixed limits (0 = none), ponder and infinite
    mode."""

    clocks: Clocks = field(default_factory=Clocks)
    nodes: int = 0
    depth: int = 0
    ponder: bool = False
    infinite: bool = False


# --- typed output -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Score:
    """A search value for the side to move: centipawns, or a proven mate in `plies` (negative: we are mated)."""

    cp: int | None = None
    mate: int | None = None

    @classmethod
    def from_value(cls, value: float) -> Score:
        """The score of a search value (centipawns, or a proven mate's distance)."""
        from .search.values import MATE, is_proven  # numba: not imported before usiok (docs/usi.md)

        if is_proven(value):
            plies = max(0, int(round(MATE - abs(value))))
            return cls(mate=plies if value > 0 else -plies)
        return cls(cp=int(round(value)))


@dataclass(frozen=True)
class PvLine:
    """One principal variation (USI move texts) with its score."""

    score: Score
    moves: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchInfo:
    """A report of the search's state; fields that are None are not known for this report."""

    depth: int | None = None
    seldepth: int | None = None
    time_ms: int | None = None
    nodes: int | None = None
    hashfull: int | None = None
    lines: tuple[PvLine, ...] = ()  # best first
    multipv: bool = False  # the lines are numbered MultiPV lines

    @classmethod
    def from_result(cls, result: SearchResult, move_to_str: Callable[[int], str]) -> SearchInfo:
        """The report of a search result (its MultiPV lines when it has more than one), moves as text."""
        depth = max(1, result.depth)
        if len(result.multipv) <= 1:
            lines: tuple[PvLine, ...] = (PvLine(Score.from_value(result.value), tuple(result.pv_str)),)
        else:
            lines = tuple(
                PvLine(Score.from_value(value), tuple(move_to_str(m) for m in moves))
                for _, value, moves in result.multipv
            )
        return cls(
            depth=depth,
            seldepth=max(depth, result.seldepth),
            time_ms=max(0, int(result.time_ms)),
            nodes=result.nodes,
            hashfull=result.hashfull,
            lines=lines,
            multipv=len(result.multipv) > 1,
        )


@dataclass(frozen=True)
class MateAnswer:
    """The answer of `go_mate`: status "mate" with its line, "nomate" or "timeout"."""

    status: str
    line: tuple[str, ...] = ()


@dataclass(frozen=True)
class BenchResult:
    """The speed of a timed search of the start position (`Engine.bench`)."""

    nodes: int
    samples: int
    time_ms: int
    nps: int
    threads: int


@dataclass
class EngineCallbacks:
    """How the engine reports; every callback may be called from a search thread."""

    info: Callable[[SearchInfo], None]
    bestmove: Callable[[str, str | None], None]  # move ("resign", "win" or a USI move), ponder move
    mate: Callable[[MateAnswer], None]  # the answer of go_mate
    message: Callable[[str], None]  # free text for the user (errors start with "error: ")
