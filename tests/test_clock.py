"""The clock vocabulary (usi_engine/clock.py): the clock the referee enforces is the clock the engine reads,
over USI `go` lines and over GTP `time_settings` / `time_left`."""

import pytest

from learn.match.clock import RefereeClock, TimeControl
from usi_engine.clock import Clocks, SideClock
from usi_engine.timeman import CanadianClock
from usi_engine.usi import parse_go, parse_ponderhit

BLACK = 1  # usi_engine.go colour of black


@pytest.mark.parametrize(
    "limits",
    [dict(time_ms=60000, byoyomi_ms=1000), dict(time_ms=3000, inc_ms=500), dict(time_ms=5000), dict(movetime_ms=300)],
)
def test_the_engine_reads_the_clocks_the_referee_keeps(limits):
    clock = RefereeClock(TimeControl.from_args(**limits))
    for elapsed in (0, 1200, 2500, 70000):
        line = clock.usi_go()
        assert line.startswith("go ")
        parsed, mate = parse_go(line.split()[1:])
        assert mate is None
        assert (parsed.clocks.of(0), parsed.clocks.of(1)) == (clock.clocks["b"], clock.clocks["w"])
        clock.spend("b", elapsed)


def test_usi_clock_words():
    assert Clocks(SideClock(main_ms=1000), SideClock(main_ms=2000)).usi_words() == "btime 1000 wtime 2000 byoyomi 0"
    both = Clocks.from_usi({"btime": 1000, "wtime": 2000, "binc": 10, "winc": 20, "byoyomi": 3000})
    assert both.usi_words() == "btime 1000 wtime 2000 binc 10 winc 20 byoyomi 3000"
    assert both.of(1) == SideClock(main_ms=2000, byoyomi_ms=3000, inc_ms=20)
    with pytest.raises(ValueError):  # USI has one byoyomi for both sides
        Clocks(SideClock(byoyomi_ms=1000), SideClock(byoyomi_ms=2000)).usi_words()


def test_ponderhit_clocks_replace_the_go_clocks():
    assert parse_ponderhit([]) is None
    clocks = parse_ponderhit("btime 0 wtime 0 byoyomi 1300".split())
    assert clocks == Clocks(SideClock(byoyomi_ms=1300), SideClock(byoyomi_ms=1300))


def test_the_gtp_engine_reads_the_clock_the_referee_keeps():
    """Whole seconds: main time 60 s, then 2 s periods of one stone."""
    referee = RefereeClock(TimeControl.from_args(time_ms=60000, byoyomi_ms=2000))
    engine = CanadianClock()
    settings = referee.gtp_time_settings().split()
    assert settings[0] == "time_settings"
    engine.set(float(settings[1]), float(settings[2]), int(settings[3]))
    for elapsed in (0, 30000, 40000):
        referee.spend("b", elapsed)
        words = referee.gtp_time_left("b").split()
        assert words[:2] == ["time_left", "b"]
        engine.time_left(BLACK, float(words[2]), int(words[3]))
        assert engine.left[BLACK] == referee.clocks["b"]
