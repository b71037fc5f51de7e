"""Time controls and the referee's clock (RefereeClock: measures the engines; the engines' own time plans are
usi_engine/timeman.py).

Kinds: byoyomi (main time, then a fixed period per move), fischer (main time + increment after each
move), sudden (main time only), movetime (fixed time per move) and nodes (fixed node count). A move is
on time when its thinking time (from writing `go`/`genmove` to the arrival of the answer) is at most the
time left on the clock plus `margin_ms` (pipe and scheduling delay; YaneuraOu-style NetworkDelay).
Fixed movetime/nodes have no clock; the referee only waits `fixed_timeout_ms` beyond the limit before
it calls the engine hung.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

DEFAULT_MARGIN_MS = 200
DEFAULT_FIXED_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class TimeControl:
    kind: str  # "byoyomi" | "fischer" | "sudden" | "movetime" | "nodes"
    main_ms: int = 0
    byoyomi_ms: int = 0
    inc_ms: int = 0
    movetime_ms: int = 0
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
        """Pick the kind from which limits are set; contradictory or empty settings are an error."""
        if min(time_ms, byoyomi_ms, inc_ms, movetime_ms, nodes, margin_ms, fixed_timeout_ms) < 0:
            raise ValueError("time control values must not be negative")
        common = dict(margin_ms=margin_ms, fixed_timeout_ms=fixed_timeout_ms)
        if nodes or movetime_ms:
            if nodes and movetime_ms or time_ms or byoyomi_ms or inc_ms:
                raise ValueError("--nodes / --movetime exclude each other and any clock setting")
            return cls("nodes" if nodes else "movetime", nodes=nodes, movetime_ms=movetime_ms, **common)
        if byoyomi_ms and inc_ms:
            raise ValueError("byoyomi and increment exclude each other")
        if inc_ms:
            return cls("fischer", main_ms=time_ms, inc_ms=inc_ms, **common)
        if byoyomi_ms:
            return cls("byoyomi", main_ms=time_ms, byoyomi_ms=byoyomi_ms, **common)
        if time_ms:
            return cls("sudden", main_ms=time_ms, **common)
        raise ValueError("no time control: give --time/--byoyomi/--inc, --movetime or --nodes")

    def as_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        if self.kind == "nodes":
            return f"{self.nodes} nodes/move"
        if self.kind == "movetime":
            return f"{self.movetime_ms} ms/move"
        extra = {
            "byoyomi": f" + byoyomi {self.byoyomi_ms} ms",
            "fischer": f" + {self.inc_ms} ms/move",
            "sudden": " sudden death",
        }[self.kind]
        return f"{self.main_ms} ms{extra}"


class RefereeClock:
    """Both sides' remaining main time; answers how long a move may take and books what it took."""

    def __init__(self, tc: TimeControl):
        self.tc = tc
        self.remaining = {"b": tc.main_ms, "w": tc.main_ms}

    def allowance_ms(self, side: str) -> int:
        """Longest thinking time that is still on time (margin included)."""
        tc = self.tc
        if tc.kind == "nodes":
            return tc.fixed_timeout_ms
        if tc.kind == "movetime":
            return tc.movetime_ms + tc.fixed_timeout_ms
        extra = tc.byoyomi_ms if tc.kind == "byoyomi" else 0
        return self.remaining[side] + extra + tc.margin_ms

    def on_time(self, side: str, elapsed_ms: float) -> bool:
        return elapsed_ms <= self.allowance_ms(side)

    def spend(self, side: str, elapsed_ms: float) -> None:
        """Book a move made on time: main time first (byoyomi is per move), then the increment."""
        if self.tc.kind in ("nodes", "movetime"):
            return
        left = max(0, self.remaining[side] - int(elapsed_ms))
        self.remaining[side] = left + (self.tc.inc_ms if self.tc.kind == "fischer" else 0)

    def usi_go(self) -> str:
        tc, r = self.tc, self.remaining
        if tc.kind == "nodes":
            return f"go nodes {tc.nodes}"
        if tc.kind == "movetime":
            return f"go movetime {tc.movetime_ms}"
        if tc.kind == "fischer":
            return f"go btime {r['b']} wtime {r['w']} binc {tc.inc_ms} winc {tc.inc_ms}"
        return f"go btime {r['b']} wtime {r['w']} byoyomi {tc.byoyomi_ms}"

    def gtp_time_settings(self) -> str:
        """GTP `time_settings main byo_time byo_stones` (Canadian with one stone = byoyomi)."""
        tc = self.tc
        if tc.kind == "fischer":
            raise ValueError("GTP has no Fischer clock; use --time with --byoyomi, or --movetime")
        if tc.kind == "nodes":
            raise ValueError("GTP has no node limit; use a time control")
        per_move = tc.movetime_ms if tc.kind == "movetime" else tc.byoyomi_ms
        if tc.kind in ("movetime", "byoyomi") and per_move % 1000:
            # the engine would be told a rounded time it cannot keep to
            raise ValueError(f"GTP clocks count whole seconds; {per_move} ms per move cannot be sent")
        if tc.kind == "movetime":
            return f"time_settings 0 {_secs(tc.movetime_ms)} 1"
        if tc.kind == "sudden":
            return f"time_settings {_secs(tc.main_ms)} 0 0"
        return f"time_settings {_secs(tc.main_ms)} {_secs(tc.byoyomi_ms)} 1"

    def gtp_time_left(self, side: str) -> str:
        colour = "b" if side == "b" else "w"
        tc, left = self.tc, self.remaining[side]
        if tc.kind == "movetime":
            return f"time_left {colour} {_secs(tc.movetime_ms)} 1"
        if left > 0 or tc.kind == "sudden":
            return f"time_left {colour} {_secs(left)} 0"
        return f"time_left {colour} {_secs(tc.byoyomi_ms)} 1"


def _secs(ms: int) -> int:
    """Whole seconds for GTP (rounded down, at least 1 when there is any time)."""
    return max(1, ms // 1000) if ms > 0 else 0
