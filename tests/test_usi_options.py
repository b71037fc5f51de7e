"""Options over the real engine process: config files, LogFile, EvalFile errors, TryRule, ResignValue,
ConsiderationMode; plus the option table itself."""

import pytest

from tests.usi_driver import UsiProcess, option, running_engine
from usi_engine.options import OPTIONS, OptionValues, find
from usi_engine.shogi_eval.evalfile import MATERIAL_PATH

pytestmark = pytest.mark.process

TRY_POSITION = "9/4K4/9/9/9/9/9/9/k8 b 2r2b4g4s4n4l18p 1"  # Black king one step from 5a


def test_option_table_parses_and_rejects():
    assert find("threads").name == "Threads"
    values = OptionValues(config_files=[])
    values.set("EnteringKingRule", "tryrule")
    assert values["EnteringKingRule"] == "TryRule"
    values.set("EvalFile", "<empty>")
    assert values["EvalFile"] == ""
    for name, bad in (("Threads", "0"), ("Threads", "x"), ("USI_Ponder", "yes"), ("SelectionPolicy", "bfs")):
        with pytest.raises(ValueError):
            values.set(name, bad)
    with pytest.raises(ValueError):
        values.set("NoSuchOption", "1")
    assert all(" " not in o.name for o in OPTIONS)
    assert all(o.usi_line(o.default).split()[2] == o.name for o in OPTIONS)


def test_options_map_onto_search_options_and_game_params():
    """Every mapped option exists and feeds a real SearchOptions field / make_params keyword, with its value."""
    import dataclasses
    import inspect

    from usi_engine.options import GAME_PARAM_FIELDS, SEARCH_OPTION_FIELDS, game_params, search_options
    from usi_engine.search.settings import SearchOptions
    from usi_engine.shogi.board import declaration_rule_code
    from usi_engine.shogi_search.game import make_params

    for name, _ in list(SEARCH_OPTION_FIELDS.values()) + list(GAME_PARAM_FIELDS.values()):
        find(name)
    assert set(SEARCH_OPTION_FIELDS) <= {f.name for f in dataclasses.fields(SearchOptions)}
    assert set(GAME_PARAM_FIELDS) <= set(inspect.signature(make_params).parameters)
    values = OptionValues(config_files=[])
    for name, value in (
        ("Threads", "3"),
        ("TemperatureSpread", "150"),
        ("GraphSearch", "false"),
        ("SelectionPolicy", "uct"),
        ("EnteringKingRule", "TryRule"),
        ("QSearchDepth", "5"),
    ):
        values.set(name, value)
    options = SearchOptions(**search_options(values))
    assert (options.threads, options.t_sel_spread, options.graph, options.policy) == (3, 1.5, False, "uct")
    assert game_params(values)["entering_rule"] == declaration_rule_code("TryRule")
    assert game_params(values)["qsearch_depth"] == 5


def test_config_file_sets_announced_defaults(tmp_path):
    cfg = tmp_path / "user.toml"
    cfg.write_text('[options]\nMultiPV = 3\nSelectionPolicy = "uct"\nSeed = 7\n')
    e = UsiProcess(env={"MCSS_ENGINE_CONFIG": str(cfg)})
    try:
        lines, _ = e.usi()
        assert "option name MultiPV type spin default 3 min 1 max 800" in lines
        assert any(s.startswith("option name SelectionPolicy type combo default uct") for s in lines)
    finally:
        e.close()


def test_bad_config_reported_engine_still_works(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[options]\nThreads = "many"\n')
    e = UsiProcess(env={"MCSS_ENGINE_CONFIG": str(cfg)})
    try:
        e.usi()
        lines, _ = e.isready(600.0)
        assert any(s.startswith("info string error: config") and "bad.toml" in s for s in lines)
    finally:
        e.close()


@pytest.fixture(scope="module")
def eng():
    with running_engine() as e:
        yield e


def test_logfile_records_both_directions(eng, tmp_path):
    log = tmp_path / "usi.log"
    eng.send(f"setoption name LogFile value {log}")
    eng.isready()
    eng.send("setoption name LogFile value <empty>")
    eng.isready()
    text = log.read_text()
    assert "> isready" in text and "< readyok" in text


def test_bad_evalfile_falls_back_to_default(eng, tmp_path):
    bad = tmp_path / "broken.npz"
    bad.write_bytes(b"not a zip")
    eng.send(f"setoption name EvalFile value {bad}")
    lines, _ = eng.isready(60.0)
    assert any(s.startswith("info string error") and str(bad) in s for s in lines)
    eng.send("position startpos")
    eng.send("go movetime 300")
    lines, _ = eng.expect_prefix("bestmove", 10.0)
    assert lines[-1].split()[1] not in ("resign", "win")
    eng.send("setoption name EvalFile value <empty>")
    eng.isready(60.0)  # as a GUI does: the weights reload here, not inside the next test's timed go


def test_bad_move_prior_falls_back_to_no_prior(eng, tmp_path):
    """A corrupt or mismatched MovePriorFile: an error naming the file, and the widened search still plays (every
    child enters at once); the shipped prior loads again afterwards."""
    corrupt = tmp_path / "broken-prior.npz"
    corrupt.write_bytes(b"not a zip")
    mismatched = tmp_path / "eval-as-prior.npz"  # a real archive of another kind: the evaluation weights
    mismatched.write_bytes(MATERIAL_PATH.read_bytes())
    with option(eng, "WidenChildren", 4, find("WidenChildren").default):  # widened, then the default again
        for bad in (corrupt, mismatched):
            eng.send(f"setoption name MovePriorFile value {bad}")
            lines, _ = eng.isready(60.0)
            assert any(s.startswith("info string error: MovePriorFile") and str(bad) in s for s in lines), lines
            eng.send("position startpos moves 7g7f 3c3d")
            eng.send("go movetime 300")
            lines, _ = eng.expect_prefix("bestmove", 10.0)
            assert lines[-1].split()[1] not in ("resign", "win")
        eng.send("setoption name MovePriorFile value <empty>")
        lines, _ = eng.isready(60.0)
        assert not any("error" in s for s in lines)


def test_try_rule_plays_the_try_move(eng):
    with option(eng, "EnteringKingRule", "TryRule", "CSARule27"):
        eng.send(f"position sfen {TRY_POSITION}")
        eng.send("go movetime 300")
        lines, _ = eng.expect_prefix("bestmove", 10.0)
        assert lines[-1] == "bestmove 5b5a"


def test_resign_value(eng):
    with option(eng, "ResignValue", 0, 99999):  # resign at any score <= 0
        eng.send("position sfen 4k4/9/9/9/9/9/9/9/4K4 b 2r2b4g4s4n4l18p 1")  # bare kings vs all in hand
        eng.send("go movetime 500")
        lines, _ = eng.expect_prefix("bestmove", 10.0)
        assert lines[-1] == "bestmove resign"


def test_consideration_mode_streams_pv(eng):
    with option(eng, "ConsiderationMode", "true", "false"):
        eng.send("position startpos")
        eng.send("go infinite")
        lines = eng.drain(1.0)
        eng.send("stop")
        lines += eng.expect_prefix("bestmove", 5.0)[0]
        assert sum(s.startswith("info depth") for s in lines) >= 2


def test_shipped_margins_leave_time_at_byoyomi_one_second():
    """NetworkDelay2's shipped default is a local-GUI margin (YaneuraOu's 1120 would leave ~0 ms)."""
    from usi_engine import timeman
    from usi_engine.clock import SideClock

    values = OptionValues()
    settings = timeman.TimeSettings(network_delay=values["NetworkDelay"], network_delay2=values["NetworkDelay2"])
    stop = timeman.plan(SideClock(byoyomi_ms=1000), settings).stop_ms
    assert 700 <= stop <= 900
