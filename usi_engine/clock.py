"""A side's clock: the one vocabulary of time for the engine's time plans (usi_engine/timeman.py), the USI and
GTP front-ends (usi.py, gtp.py) and the match referee (learn/match/clock.py).

`SideClock` is one side's clock in ms: main time left, then byoyomi periods (a period of `byoyomi_ms` for
`byoyomi_moves` moves: one move is shogi's byoyomi, more is GTP's Canadian byoyomi), a Fischer increment
credited after each move, or a fixed time per move. `Clocks` is both sides' clocks as a USI `go` line (or
YaneuraOu's `ponderhit` extension) carries them: `from_usi` reads the clock words, `usi_words` writes them.

What differs between the users is only what they do with a clock: the engine plans its move from it
(`timeman.plan`, `timeman.CanadianClock`), the referee enforces it (`learn.match.clock.RefereeClock`).
Pure Python: imported before `usiok`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

USI_CLOCK_WORDS = ("btime", "wtime", "binc", "winc", "byoyomi", "movetime")  # the clock words of a `go`


@dataclass(frozen=True)
class SideClock:
    """One side's clock (ms; 0 = none). While main time is left, `byoyomi_ms` is the length of a byoyomi
    period; once it is spent, the time left in the current period, in which `byoyomi_moves` moves are still
    to be made (USI's byoyomi: a fresh period of one move each move). `movetime_ms` is a fixed time per move
    that replaces the rest."""

    main_ms: int = 0  # main time left
    byoyomi_ms: int = 0
    inc_ms: int = 0  # Fischer increment, credited after each move
    movetime_ms: int = 0
    byoyomi_moves: int = 1

    def timed(self) -> bool:
        """Any clock at all (a `go` without one is bounded by nodes, depth or nothing)."""
        return bool(self.main_ms or self.byoyomi_ms or self.inc_ms or self.movetime_ms)


@dataclass(frozen=True)
class Clocks:
    """Both sides' clocks, as a USI `go` line carries them: main time and increment per side, one byoyomi
    and one movetime for both."""

    black: SideClock = field(default_factory=SideClock)
    white: SideClock = field(default_factory=SideClock)

    def of(self, turn: int) -> SideClock:
        """The clock of `turn` (0 = black, the usi_engine.shogi colour)."""
        return self.black if turn == 0 else self.white

    @classmethod
    def from_usi(cls, words: Mapping[str, int]) -> Clocks:
        """The clocks of a `go` line's clock words (USI_CLOCK_WORDS -> ms; a word not given is 0)."""
        shared = dict(byoyomi_ms=words.get("byoyomi", 0), movetime_ms=words.get("movetime", 0))
        return cls(
            SideClock(main_ms=words.get("btime", 0), inc_ms=words.get("binc", 0), **shared),
            SideClock(main_ms=words.get("wtime", 0), inc_ms=words.get("winc", 0), **shared),
        )

    def usi_words(self) -> str:
        """The clock words of a `go` line: `movetime M` alone for a fixed time per move (the plan reads
        nothing else then), else `btime B wtime W`, then `binc I winc J` with an increment and `byoyomi Y`
        with a byoyomi or without an increment (`byoyomi 0`: sudden death). ValueError when the sides'
        byoyomi or movetime differ (USI has one of each)."""
        b, w = self.black, self.white
        if (b.byoyomi_ms, b.movetime_ms) != (w.byoyomi_ms, w.movetime_ms):
            raise ValueError("a USI go line has one byoyomi and one movetime for both sides")
        if b.movetime_ms:
            return f"movetime {b.movetime_ms}"
        words = f"btime {b.main_ms} wtime {w.main_ms}"
        increment = b.inc_ms or w.inc_ms
        if increment:
            words += f" binc {b.inc_ms} winc {w.inc_ms}"
        if b.byoyomi_ms or not increment:
            words += f" byoyomi {b.byoyomi_ms}"
        return words
