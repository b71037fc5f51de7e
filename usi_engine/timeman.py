"""Time allocation for one move, for both games: how long to think (and, in USI, the hard ceiling).

Both plans read the side to move's `SideClock` (usi_engine/clock.py, the clock vocabulary the USI front-end
and the match referee share):

- `plan()` (USI): main time, Fischer increment, byoyomi or fixed movetime from a `go` command, in ms; the
  plan below.
- `CanadianClock` (GTP `time_settings`, `kgs-time_settings`, `time_left`): main time, then Canadian byoyomi
  periods of `byoyomi_moves` moves (Japanese byoyomi counted as one-move periods), the controller's
  seconds kept as each colour's SideClock; see `canadian_seconds`.

The USI plan (after YaneuraOu's source/timeman.cpp, docs/references.md), all times in ms:

1. Hard ceiling ``remain = time + byoyomi - NetworkDelay2`` (at least HARD_FLOOR_MS). The increment is not
   counted: it is credited only after the move.
2. ``go movetime M``: think ``M - NetworkDelay`` (at least MOVETIME_FLOOR_MS); no rounding.
3. Byoyomi and little main time left (``time < 1.2 * byoyomi``): spend everything up to the ceiling.
4. Otherwise estimate the time available per move over a horizon of MOVE_HORIZON moves (capped by the
   moves left before MaxMovesToDraw): ``estimate = time + horizon * (inc + byoyomi - ROUNDING_LOSS_MS)``
   (every move is billed in whole seconds, so about a second per move is lost to rounding; the loss is
   only charged when an increment or byoyomi exists, otherwise whole-second billing is the GUI's problem),
   ``minimum = max(MinimumThinkingTime - NetworkDelay, 1000)``,
   ``optimum = (minimum + estimate / horizon) * SlowMover / 100``, +25 % with USI_Ponder (the opponent's
   time we think on makes up for it), and at most ``MAX_SHARE * estimate`` (plus the byoyomi, which is
   ours anyway).
   Sudden death (no byoyomi, no increment) cannot afford the minimum: the optimum is also capped at
   ``time / SUDDEN_DEATH_DIVISOR``.
5. Stop times are rounded UP to the next whole second and then ``NetworkDelay`` earlier (time is billed
   in whole seconds, so the rest of a started second is free), but never past the ceiling.

`stop_seconds()` turns the plan into the search's deadline (a `go` without any clock: BARE_GO_SECONDS, or no
deadline when nodes or depth limit the search).

Ponder: the plan is made at `ponderhit` (or at `go` for a normal search) and counted from that moment,
with the times of the `go ponder` command or of YaneuraOu's `ponderhit btime ... wtime ...` extension.
The GTP plan is simpler (controllers send whole seconds and no delay settings): see CanadianClock.
Pure Python: imported before `usiok`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .clock import SideClock

HARD_FLOOR_MS = 100
MOVETIME_FLOOR_MS = 10
MOVE_HORIZON = 160
MIN_HORIZON = 10
ROUNDING_LOSS_MS = 1000
MIN_FLOOR_MS = 1000
MAX_SHARE = 0.3
PONDER_BONUS = 1.25
SUDDEN_DEATH_DIVISOR = 20
BYOYOMI_ALL_IN = 1.2

MIN_MOVES_LEFT = 12  # Canadian clock: main time is spread over at least this many moves
PERIOD_USE = 0.9  # ... share of a period's time per stone that is used
SAFETY_S = 0.2  # ... seconds kept back per move (process start-up, pipes, the controller)
SAFETY_FRACTION = 0.25  # ... but at most this fraction of the share (short byoyomi periods)
MIN_SECONDS = 0.05  # ... never think less than this
BARE_GO_SECONDS = 5.0  # USI: a `go` without clock or limit thinks this long


@dataclass
class TimeSettings:
    """The options that shape the plan (YaneuraOu names)."""

    network_delay: int = 120
    network_delay2: int = 1120
    minimum_thinking_time: int = 2000
    slow_mover: int = 100
    ponder: bool = False
    max_moves_to_draw: int = 0


@dataclass
class Plan:
    """How long to think on one move (ms)."""

    stop_ms: int  # end the search after this long
    hard_ms: int  # never think past this (the clock ceiling)


def round_up_to_second(ms: float, network_delay: int) -> int:
    """`ms` rounded up to a whole second, then `network_delay` earlier (never below `ms` itself
    unless the rounding gained less than the delay)."""
    return max(int(math.ceil(ms)), int(math.ceil(ms / 1000.0)) * 1000 - network_delay)


def horizon(ply: int, s: TimeSettings) -> int:
    """Moves still to play that the main time must cover, at game ply `ply` (move number - 1)."""
    h = MOVE_HORIZON
    if s.max_moves_to_draw > 0:
        h = min(h, (s.max_moves_to_draw - ply + 1) // 2)
    return max(MIN_HORIZON, h)


def plan(clock: SideClock, s: TimeSettings, ply: int = 0) -> Plan:
    """How long to think on this move at game ply `ply` (see the module docstring)."""
    hard = max(HARD_FLOOR_MS, clock.main_ms + clock.byoyomi_ms - s.network_delay2)
    if clock.movetime_ms > 0:
        think = max(MOVETIME_FLOOR_MS, clock.movetime_ms - s.network_delay)
        return Plan(think, think)
    if clock.byoyomi_ms > 0 and clock.main_ms < BYOYOMI_ALL_IN * clock.byoyomi_ms:
        return Plan(hard, hard)
    h = horizon(ply, s)
    per_move = clock.inc_ms + clock.byoyomi_ms
    loss = ROUNDING_LOSS_MS if per_move > 0 else 0
    estimate = max(0, clock.main_ms + h * (per_move - loss))
    minimum = max(s.minimum_thinking_time - s.network_delay, MIN_FLOOR_MS)
    optimum = (minimum + estimate / h) * s.slow_mover / 100.0
    if s.ponder:
        optimum *= PONDER_BONUS
    optimum = min(optimum, MAX_SHARE * estimate + clock.byoyomi_ms)
    if per_move == 0:
        optimum = min(optimum, clock.main_ms / SUDDEN_DEATH_DIVISOR)
    stop = round_up_to_second(max(optimum, 1.0), s.network_delay)
    return Plan(max(1, min(stop, hard)), hard)


def stop_seconds(clock: SideClock, s: TimeSettings, limited: bool, ply: int = 0) -> float | None:
    """Seconds after the start of the move at which the USI search stops: the plan's stop time; without any
    clock (go nodes, go depth, a bare go) none when a node or depth limit ends the search (`limited`), else
    BARE_GO_SECONDS."""
    if not clock.timed():
        return None if limited else BARE_GO_SECONDS
    return plan(clock, s, ply).stop_ms / 1000.0


def canadian_seconds(clock: SideClock, moves_left: float) -> float:
    """Seconds to spend on this move under main time + Canadian byoyomi (`clock` as CanadianClock keeps it)."""
    per_move = PERIOD_USE * clock.byoyomi_ms / clock.byoyomi_moves if clock.byoyomi_moves > 0 else 0.0
    # main time: spread over the moves left (never more than is left), plus a period's share per move
    share = (min(clock.main_ms / max(MIN_MOVES_LEFT, moves_left), clock.main_ms) + per_move) / 1000.0
    return max(MIN_SECONDS, share - min(SAFETY_S, SAFETY_FRACTION * share))


class CanadianClock:
    """Both colours' clocks under main time + Canadian byoyomi (GTP `time_settings main period stones`).

    Each colour's clock is a SideClock: the settings (main time, a period of `byoyomi_ms` for
    `byoyomi_moves` stones) until the controller reads it with `time_left`: in main time the main time left,
    in a period the time and stones left in it. Per move (seconds, `canadian_seconds`): in main time,
    ``left / max(MIN_MOVES_LEFT, moves_left) + PERIOD_USE * period / stones`` (at most
    ``left + PERIOD_USE * period / stones``); in a period, ``PERIOD_USE * left / stones_left``; always minus
    ``min(SAFETY_S, SAFETY_FRACTION * share)`` and at least MIN_SECONDS.
    """

    def __init__(self) -> None:
        self.settings = SideClock()
        self.enabled = False
        self.left: dict[int, SideClock] = {}  # colour -> its clock as the controller last read it

    def set(self, main: float, period: float, stones: int) -> None:
        """New settings in seconds (GTP time_settings); `0 T 0` means no time limit. ValueError if negative or
        not finite."""
        if main < 0 or period < 0 or stones < 0:
            raise ValueError("negative time settings")
        self.settings = SideClock(main_ms=_ms(main), byoyomi_ms=_ms(period), byoyomi_moves=int(stones))
        self.enabled = not (main == 0 and period > 0 and stones == 0)
        self.left = {}

    def time_left(self, colour: int, seconds: float, stones: int) -> None:
        """The controller's reading of `colour`'s clock (GTP time_left: stones 0 = in main time); ValueError if
        the time is not finite."""
        if stones > 0:
            self.left[colour] = SideClock(byoyomi_ms=_ms(seconds), byoyomi_moves=stones)
        else:
            self.left[colour] = replace(self.settings, main_ms=_ms(seconds))
        self.enabled = self.enabled or self.settings.main_ms > 0 or self.settings.byoyomi_ms > 0

    def seconds_for_move(self, colour: int, moves_left: float) -> float | None:
        """Seconds to spend on this move of `colour`, or None when there is no clock."""
        s = self.settings
        if not self.enabled or (s.main_ms == 0 and s.byoyomi_ms == 0):
            return None
        return canadian_seconds(self.left.get(colour, s), moves_left)


def _ms(seconds: float) -> int:
    """GTP's seconds as the clock's milliseconds; ValueError if not finite."""
    if not math.isfinite(seconds):
        raise ValueError(f"{seconds} seconds")
    return round(seconds * 1000)
