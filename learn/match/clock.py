"""Time controls and the referee's clock: a match's `TimeControl` and the `RefereeClock` that enforces it
during a game. A clock is usi_engine.clock.SideClock, the vocabulary the engines' time plans read
(usi_engine/timeman.py): the referee enforces the clock the engine plans with.

Kinds: byoyomi (main time, then a fixed period per move), fischer (main time + increment after each
move), sudden (main time only), movetime (fixed time per move) and nodes (fixed node count). A move is
on time when its thinking time (from writing `go`/`genmove` to the arrival of the answer) is at most the
time left on the clock plus `margin_ms` (pipe and scheduling delay; YaneuraOu-style NetworkDelay).
Fixed movetime/nodes have no clock; the referee only waits `fixed_timeout_ms` beyond the limit before
it calls the engine hung.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from usi_engine.clock import Clocks, SideClock

DEFAULT_MARGIN_MS = 200
DEFAULT_FIXED_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class TimeControl:
    """A match's time control: the clock each side starts every game with, or a fixed node count per move;
    the referee's margin and its wait for a fixed limit."""

    clock: SideClock = field(default_factory=SideClock)
    nodes: int = 0
    margin_ms: int = DEFAULT_MARGIN_MS
    fixed_timeout_ms: int = DEFAULT_FIXED_TIMEOUT_MS

    @classmethod
    def from_args(
        cls,
        time_ms: int = 0,
        byoyomi_ms: int = 0,
        inc_ms: int = 0,
        movetime_ms: int = 0,
        nodes: int = 0,
        margin_ms: int = DEFAULT_MARGIN_MS,
        fixed_timeout_ms: int = DEFAULT_FIXED_TIMEOUT_MS,
    ) -> "TimeControl":
        """The time control of the command-line limits; contradictory or empty settings are an error."""
        if min(time_ms, byoyomi_ms, inc_ms, movetime_ms, nodes, margin_ms, fixed_timeout_ms) < 0:
            raise ValueError("time control values must not be negative")
        if (nodes or movetime_ms) and (nodes and movetime_ms or time_ms or byoyomi_ms or inc_ms):
            raise ValueError("--nodes / --movetime exclude each other and any clock setting")
        if byoyomi_ms and inc_ms:
            raise ValueError("byoyomi and increment exclude each other")
        if not (time_ms or byoyomi_ms or inc_ms or movetime_ms or nodes):
            raise ValueError("no time control: give --time/--byoyomi/--inc, --movetime or --nodes")
        clock = SideClock(main_ms=time_ms, byoyomi_ms=byoyomi_ms, inc_ms=inc_ms, movetime_ms=movetime_ms)
        return cls(clock, nodes, margin_ms, fixed_timeout_ms)

    @property
    def kind(self) -> str:
        """The kind of clock (module docstring): "nodes", "movetime", "fischer", "byoyomi" or "sudden"."""
        if self.nodes:
            return "nodes"
        if self.clock.movetime_ms:
            return "movetime"
        if self.clock.inc_ms:
            return "fischer"
        return "byoyomi" if self.clock.byoyomi_ms else "sudden"

    def as_dict(self) -> dict:
        """The time control as the match JSON stores it (a resumed match must have the same)."""
        c = self.clock
        return {
            "kind": self.kind,
            "main_ms": c.main_ms,
            "byoyomi_ms": c.byoyomi_ms,
            "inc_ms": c.inc_ms,
            "movetime_ms": c.movetime_ms,
            "nodes": self.nodes,
            "margin_ms": self.margin_ms,
            "fixed_timeout_ms": self.fixed_timeout_ms,
        }

    def describe(self) -> str:
        """One line for the match header."""
        c = self.clock
        if self.kind == "nodes":
            return f"{self.nodes} nodes/move"
        if self.kind == "movetime":
            return f"{c.movetime_ms} ms/move"
        extra = {
            "byoyomi": f" + byoyomi {c.byoyomi_ms} ms",
            "fischer": f" + {c.inc_ms} ms/move",
            "sudden": " sudden death",
        }[self.kind]
        return f"{c.main_ms} ms{extra}"


class RefereeClock:
    """Both sides' clocks during one game; answers how long a move may take, books what it took and tells
    the engines their clocks."""

    def __init__(self, tc: TimeControl):
        self.tc = tc
        self.clocks = {"b": tc.clock, "w": tc.clock}

    def allowance_ms(self, side: str) -> int:
        """Longest thinking time that is still on time (margin included)."""
        tc, clock = self.tc, self.clocks[side]
        if tc.nodes:
            return tc.fixed_timeout_ms
        if clock.movetime_ms:
            return clock.movetime_ms + tc.fixed_timeout_ms
        return clock.main_ms + clock.byoyomi_ms + tc.margin_ms

    def on_time(self, side: str, elapsed_ms: float) -> bool:
        """Whether a move that took `elapsed_ms` was within `side`'s allowance."""
        return elapsed_ms <= self.allowance_ms(side)

    def spend(self, side: str, elapsed_ms: float) -> None:
        """Book a move made on time: main time first (byoyomi is per move), then the increment."""
        clock = self.clocks[side]
        if self.tc.nodes or clock.movetime_ms:
            return
        self.clocks[side] = replace(clock, main_ms=max(0, clock.main_ms - int(elapsed_ms)) + clock.inc_ms)

    def usi_go(self) -> str:
        """The `go` line of the side to move (both clocks; a node limit instead when the match has one)."""
        if self.tc.nodes:
            return f"go nodes {self.tc.nodes}"
        return "go " + Clocks(self.clocks["b"], self.clocks["w"]).usi_words()

    def gtp_time_settings(self) -> str:
        """GTP `time_settings main byo_time byo_stones` (Canadian with one stone = byoyomi; a fixed time per
        move as one-stone periods without main time); ValueError for what GTP cannot express."""
        tc, c = self.tc, self.tc.clock
        if tc.kind == "fischer":
            raise ValueError("GTP has no Fischer clock; use --time with --byoyomi, or --movetime")
        if tc.kind == "nodes":
            raise ValueError("GTP has no node limit; use a time control")
        per_move = c.movetime_ms or c.byoyomi_ms
        if per_move % 1000:
            # the engine would be told a rounded time it cannot keep to
            raise ValueError(f"GTP clocks count whole seconds; {per_move} ms per move cannot be sent")
        if c.movetime_ms:
            return f"time_settings 0 {_secs(c.movetime_ms)} 1"
        return f"time_settings {_secs(c.main_ms)} {_secs(c.byoyomi_ms)} {c.byoyomi_moves if c.byoyomi_ms else 0}"

    def gtp_time_left(self, side: str) -> str:
        """GTP `time_left colour time stones` of `side`'s clock (stones 0: in main time)."""
        clock = self.clocks[side]
        if clock.movetime_ms:
            return f"time_left {side} {_secs(clock.movetime_ms)} 1"
        if clock.main_ms > 0 or not clock.byoyomi_ms:
            return f"time_left {side} {_secs(clock.main_ms)} 0"
        return f"time_left {side} {_secs(clock.byoyomi_ms)} {clock.byoyomi_moves}"


def _secs(ms: int) -> int:
    """Whole seconds for GTP (rounded down, at least 1 when there is any time)."""
    return max(1, ms // 1000) if ms > 0 else 0
