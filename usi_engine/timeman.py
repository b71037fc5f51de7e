"""Time allocation for one move, for both games: how long to think (and, in USI, the hard ceiling).

Two clocks, as the protocols announce them:

- `SideClock` + `plan()` (USI): the side to move's main time, Fischer increment, byoyomi or fixed movetime
  from a `go` command, in ms; the plan below.
- `CanadianClock` (GTP `time_settings`, `kgs-time_settings`, `time_left`): main time, then Canadian byoyomi
  periods of `stones` moves in `period` seconds (Japanese byoyomi counted as one-stone periods), in
  seconds; see `CanadianClock.seconds_for_move`.

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
from dataclasses import dataclass

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
PERIOD_USE = 0.8  # ... share of a period's time per stone that is used
SAFETY_S = 0.25  # ... seconds kept back per move (process start-up, pipes, the controller)
SAFETY_FRACTION = 0.25  # ... but at most this fraction of the share (short byoyomi periods)
MIN_SECONDS = 0.05  # ... never think less than this
BARE_GO_SECONDS = 5.0  # USI: a `go` without clock or limit thinks this long


@dataclass
class SideClock:
    """The clock of the side to move, from a `go` (or `ponderhit`) command."""

    time: int = 0  # main time left
    inc: int = 0  # Fischer increment per move
    byoyomi: int = 0
    movetime: int = 0  # `go movetime`: think exactly this long (0 = unset)
    ply: int = 0  # game ply (move number - 1), for the game-length horizon


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
    stop_ms: int  # end the search after this long
    hard_ms: int  # never think past this (the clock ceiling)


def round_up_to_second(ms: float, network_delay: int) -> int:
    """`ms` rounded up to a whole second, then `network_delay` earlier (never below `ms` itself
    unless the rounding gained less than the delay)."""
    return max(int(math.ceil(ms)), int(math.ceil(ms / 1000.0)) * 1000 - network_delay)


def horizon(clock: SideClock, s: TimeSettings) -> int:
    """Moves still to play that the main time must cover."""
    h = MOVE_HORIZON
    if s.max_moves_to_draw > 0:
        h = min(h, (s.max_moves_to_draw - clock.ply + 1) // 2)
    return max(MIN_HORIZON, h)


def plan(clock: SideClock, s: TimeSettings) -> Plan:
    """How long to think on this move (see the module docstring)."""
    hard = max(HARD_FLOOR_MS, clock.time + clock.byoyomi - s.network_delay2)
    if clock.movetime > 0:
        think = max(MOVETIME_FLOOR_MS, clock.movetime - s.network_delay)
        return Plan(think, think)
    if clock.byoyomi > 0 and clock.time < BYOYOMI_ALL_IN * clock.byoyomi:
        return Plan(hard, hard)
    h = horizon(clock, s)
    per_move = clock.inc + clock.byoyomi
    loss = ROUNDING_LOSS_MS if per_move > 0 else 0
    estimate = max(0, clock.time + h * (per_move - loss))
    minimum = max(s.minimum_thinking_time - s.network_delay, MIN_FLOOR_MS)
    optimum = (minimum + estimate / h) * s.slow_mover / 100.0
    if s.ponder:
        optimum *= PONDER_BONUS
    optimum = min(optimum, MAX_SHARE * estimate + clock.byoyomi)
    if per_move == 0:
        optimum = min(optimum, clock.time / SUDDEN_DEATH_DIVISOR)
    stop = round_up_to_second(max(optimum, 1.0), s.network_delay)
    return Plan(max(1, min(stop, hard)), hard)


def stop_seconds(clock: SideClock, s: TimeSettings, limited: bool) -> float | None:
    """Seconds after the start of the move at which the USI search stops: the plan's stop time; without any
    clock (go nodes, go depth, a bare go) none when a node or depth limit ends the search (`limited`), else
    BARE_GO_SECONDS."""
    if not (clock.time or clock.inc or clock.byoyomi or clock.movetime):
        return None if limited else BARE_GO_SECONDS
    return plan(clock, s).stop_ms / 1000.0


class CanadianClock:
    """Both colours' clocks under main time + Canadian byoyomi (GTP `time_settings main period stones`).

    Without `time_left` a colour is assumed to have the full main time. Per move (seconds):
    in main time, ``left / max(MIN_MOVES_LEFT, moves_left) + PERIOD_USE * period / stones`` (at most
    ``left + PERIOD_USE * period / stones``); in a period, ``PERIOD_USE * left / stones_left``; always minus
    ``min(SAFETY_S, SAFETY_FRACTION * share)`` and at least MIN_SECONDS.
    """

    def __init__(self):
        self.main = self.period = 0.0
        self.stones = 0
        self.enabled = False
        self.left: dict = {}  # colour -> (seconds, stones left in the period; 0 = in main time)

    def set(self, main: float, period: float, stones: int) -> None:
        """New settings (GTP time_settings); `0 T 0` means no time limit. ValueError if negative."""
        if main < 0 or period < 0 or stones < 0:
            raise ValueError("negative time settings")
        self.main, self.period, self.stones = float(main), float(period), int(stones)
        self.enabled = not (main == 0 and period > 0 and stones == 0)
        self.left = {}

    def time_left(self, colour: int, seconds: float, stones: int) -> None:
        """The controller's reading of `colour`'s clock (GTP time_left)."""
        self.left[colour] = (seconds, stones)
        self.enabled = self.enabled or self.main > 0 or self.period > 0

    def seconds_for_move(self, colour: int, moves_left: float) -> float | None:
        """Seconds to spend on this move of `colour`, or None when there is no clock."""
        if not self.enabled or (self.main == 0 and self.period == 0):
            return None
        secs, stones = self.left.get(colour, (self.main, 0))
        if stones > 0:  # Canadian period in progress
            share = secs / stones * PERIOD_USE
        else:
            share = secs / max(MIN_MOVES_LEFT, moves_left)
            if self.period > 0 and self.stones > 0:
                per_stone = PERIOD_USE * self.period / self.stones
                share = min(share + per_stone, secs + per_stone)
        return max(MIN_SECONDS, share - min(SAFETY_S, SAFETY_FRACTION * share))
