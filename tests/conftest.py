"""Markers by test module (registered in pyproject.toml): `process` for tests that drive a real engine process
over pipes, `gnugo` for tests that need the GNU Go binary, `slow` for the tests that take more than ~30 s.
Select with `-m`, e.g. `pytest -m "not slow"` for a quick run or `pytest -m "not gnugo"` without GNU Go."""

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

PROCESS = {
    "test_usi_protocol.py",
    "test_usi_options.py",
    "test_usi_mate.py",
    "test_gtp.py",
    "test_bench_cli.py",
    "test_numba_cache.py",
    "test_protocol_fuzz.py",
    "search/test_dispatch.py",
    "go/test_playout.py",
    "go/test_match_gnugo.py",
    "go/test_gnugo_score.py",
    "learn/test_runner.py",
    "learn/match/test_arena.py",
    "learn/match/test_match_go.py",
    "learn/match/test_match_self.py",
    "learn/match/test_match_shogi.py",
    "learn/test_ray.py",
}
GNUGO = {
    "test_gtp.py::test_final_score_and_dead_stones_agree_with_gnugo_on_a_finished_game",
    "go/test_match_gnugo.py",
    "go/test_gnugo_score.py",
    "learn/match/test_match_go.py",
}
# > ~30 s each on a quiet 2-core machine (measured with --durations; a full 9x9 game at 1 s a move; training runs)
SLOW = {
    "go/test_match_gnugo.py",
    "learn/test_runner.py::test_smoke_run_checkpoints_evaluates_and_plots",
    "learn/test_runner.py::test_kill_dash_nine_and_resume",
    "learn/test_ray.py",
    "test_usi_protocol.py::test_cold_start_first_timed_move_is_searched_in_time",
    "test_gtp.py::test_cold_start_answers_first_timed_genmove_in_time",
    "learn/test_selfplay.py::test_exact_eligibility_matches_finite_differences",
    "learn/test_selfplay.py::test_full_width_reference_matches_finite_differences",
}


def _keys(item) -> tuple[str, str]:
    module = Path(str(item.fspath)).resolve().relative_to(TESTS).as_posix()
    return module, f"{module}::{item.name.split('[')[0]}"


def pytest_collection_modifyitems(config, items):
    for item in items:
        module, test = _keys(item)
        for marker, names in (("process", PROCESS), ("gnugo", GNUGO), ("slow", SLOW)):
            if module in names or test in names:
                item.add_marker(getattr(pytest.mark, marker))
