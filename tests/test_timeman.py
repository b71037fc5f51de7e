"""Time plans (usi_engine/timeman.py): USI byoyomi, Fischer, sudden death, movetime, margins, rounding;
GTP main time and Canadian byoyomi."""

import pytest

from usi_engine.clock import SideClock
from usi_engine.timeman import (
    BARE_GO_SECONDS,
    MIN_MOVES_LEFT,
    MIN_SECONDS,
    PERIOD_USE,
    SAFETY_FRACTION,
    SAFETY_S,
    CanadianClock,
    TimeSettings,
    plan,
    round_up_to_second,
    stop_seconds,
)

S = TimeSettings()  # YaneuraOu defaults: NetworkDelay 120, NetworkDelay2 1120, minimum 2000


def test_byoyomi_only_spends_all_but_the_worst_delay():
    p = plan(SideClock(main_ms=0, byoyomi_ms=10000), S)
    assert p.hard_ms == 10000 - 1120
    assert p.stop_ms == p.hard_ms


def test_byoyomi_shorter_than_delay_keeps_a_floor():
    p = plan(SideClock(main_ms=0, byoyomi_ms=1000), S)
    assert p.stop_ms == p.hard_ms == 100


def test_main_time_with_byoyomi_rounds_up_to_second_minus_delay():
    p = plan(SideClock(main_ms=600000, byoyomi_ms=10000), S)
    # estimate = 600000 + 160 * 9000 = 2,040,000 -> 12750 per move; + minimum 1880 = 14630 -> 15000 - 120
    assert p.stop_ms == 14880
    assert p.stop_ms % 1000 == 1000 - S.network_delay
    assert p.stop_ms <= p.hard_ms == 600000 + 10000 - 1120


def test_little_main_time_left_spends_everything():
    p = plan(SideClock(main_ms=11000, byoyomi_ms=10000), S)  # 11000 < 1.2 * 10000
    assert p.stop_ms == p.hard_ms == 11000 + 10000 - 1120


def test_fischer_uses_increment():
    without = plan(SideClock(main_ms=60000, inc_ms=0), S)
    with_inc = plan(SideClock(main_ms=60000, inc_ms=10000), S)
    assert with_inc.stop_ms > without.stop_ms
    assert with_inc.stop_ms <= with_inc.hard_ms == 60000 - 1120  # increment is credited after the move


@pytest.mark.parametrize("time_ms", [300000, 60000, 10000, 3000, 1500])
def test_sudden_death_never_past_a_twentieth(time_ms):
    p = plan(SideClock(main_ms=time_ms), S)
    assert p.stop_ms <= p.hard_ms
    if time_ms >= 20000:
        assert p.stop_ms <= time_ms / 20 + 1000  # rounding up to the second at most adds < 1 s
    assert p.stop_ms >= 1


def test_sudden_death_survives_a_long_game():
    """Simulate 300 moves of sudden death (10 min, whole-second billing, 200 ms real delay)."""
    left = 600000
    for _ in range(300):
        p = plan(SideClock(main_ms=left), S)
        used = p.stop_ms + 200
        left -= (used // 1000) * 1000
        assert left > 0


def test_byoyomi_game_never_loses_on_time():
    left = 120000
    for _ in range(200):
        p = plan(SideClock(main_ms=left, byoyomi_ms=5000), S)
        used = p.stop_ms + 500  # a delay below NetworkDelay2
        assert used <= left + 5000
        left = max(0, left - max(0, used - 5000) // 1000 * 1000)


def test_movetime_minus_network_delay():
    assert plan(SideClock(movetime_ms=1000), S).stop_ms == 880
    assert plan(SideClock(movetime_ms=50), S).stop_ms == 10


def test_slow_mover_and_ponder_scale_the_optimum():
    base = plan(SideClock(main_ms=900000, byoyomi_ms=0, inc_ms=5000), S).stop_ms
    slow = plan(SideClock(main_ms=900000, inc_ms=5000), TimeSettings(slow_mover=200)).stop_ms
    ponder = plan(SideClock(main_ms=900000, inc_ms=5000), TimeSettings(ponder=True)).stop_ms
    assert slow > base and ponder > base


def test_minimum_thinking_time_floor():
    low = plan(SideClock(main_ms=3600000, byoyomi_ms=1000), TimeSettings(minimum_thinking_time=1000)).stop_ms
    high = plan(SideClock(main_ms=3600000, byoyomi_ms=1000), TimeSettings(minimum_thinking_time=20000)).stop_ms
    assert high >= 20000 - 120 and high > low


def test_game_length_rule_shortens_horizon():
    far = plan(SideClock(main_ms=600000, byoyomi_ms=1000), S, ply=100).stop_ms
    near = plan(SideClock(main_ms=600000, byoyomi_ms=1000), TimeSettings(max_moves_to_draw=256), ply=240).stop_ms
    assert near > far


def test_round_up_to_second():
    assert round_up_to_second(14630, 120) == 14880
    assert round_up_to_second(14950, 120) == 14950  # never earlier than asked
    assert round_up_to_second(3000, 120) == 3000


# --- GTP: main time + Canadian byoyomi (CanadianClock) ----------------------------------------------
BLACK, WHITE = 1, 2


def canadian(main, period, stones):
    clock = CanadianClock()
    clock.set(main, period, stones)
    return clock


def test_no_clock_and_no_limit_give_none():
    assert CanadianClock().seconds_for_move(BLACK, 40) is None
    assert canadian(0, 5, 0).seconds_for_move(BLACK, 40) is None  # GTP's "0 T 0": no time limit
    assert canadian(0, 0, 0).seconds_for_move(BLACK, 40) is None


def test_byoyomi_only_uses_most_of_the_period_minus_the_safety_margin():
    secs = canadian(0, 2, 1).seconds_for_move(BLACK, 40)  # kgs byoyomi 2 s = 1-stone periods
    assert secs == pytest.approx(PERIOD_USE * 2 - SAFETY_S)
    assert secs < 2 - SAFETY_S / 2


def test_main_time_is_spread_over_the_moves_left():
    clock = canadian(600, 0, 0)
    assert clock.seconds_for_move(BLACK, 100) == pytest.approx(6 - SAFETY_S)
    assert clock.seconds_for_move(BLACK, 5) == pytest.approx(600 / MIN_MOVES_LEFT - SAFETY_S)


def test_time_left_in_a_canadian_period_splits_it_over_the_stones():
    clock = canadian(600, 300, 25)
    clock.time_left(WHITE, 100, 10)
    assert clock.seconds_for_move(WHITE, 50) == pytest.approx(PERIOD_USE * 10 - SAFETY_S)
    # Black still has the full main time: main share + a period's share per stone
    assert clock.seconds_for_move(BLACK, 50) == pytest.approx(600 / 50 + PERIOD_USE * 300 / 25 - SAFETY_S)


def test_short_shares_keep_a_proportional_margin_and_a_floor():
    clock = canadian(0, 1, 10)
    share = PERIOD_USE * 1 / 10
    assert clock.seconds_for_move(BLACK, 40) == pytest.approx(share * (1 - SAFETY_FRACTION))
    clock.time_left(BLACK, 0.01, 10)
    assert clock.seconds_for_move(BLACK, 40) == MIN_SECONDS


def test_a_canadian_game_never_overruns_its_periods():
    """20 stones per 30 s period, billed as used: every period ends with time to spare."""
    clock = canadian(0, 30, 20)
    for _ in range(10):
        left, stones = 30.0, 20
        while stones:
            clock.time_left(BLACK, left, stones)
            left -= clock.seconds_for_move(BLACK, 40) + 0.2  # 0.2 s of pipe and process delay
            stones -= 1
            assert left > 0


def test_negative_settings_are_refused():
    with pytest.raises(ValueError):
        canadian(-1, 0, 0)


def test_stop_seconds_is_the_plan_or_a_bare_go_or_no_deadline():
    clock = SideClock(main_ms=60000, byoyomi_ms=10000)
    assert stop_seconds(clock, S, limited=True) == plan(clock, S).stop_ms / 1000.0  # a clock: the plan
    assert stop_seconds(SideClock(), S, limited=False) == BARE_GO_SECONDS  # a bare go
    assert stop_seconds(SideClock(), S, limited=True) is None  # go nodes / depth: the limit alone
