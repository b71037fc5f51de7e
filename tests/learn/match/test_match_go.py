"""Go matches over real pipes: GNU Go against GNU Go and a faulty GTP fixture, refereed by a GNU Go."""

import io
import shlex
import sys
from pathlib import Path

import pytest
from sgfmill import sgf

from learn.match.clock import TimeControl
from learn.match.go_game import GoRules, find_gnugo, parse_score
from learn.match.match import EngineSpec, Match, MatchConfig, MatchError, load_openings

pytestmark = [pytest.mark.process, pytest.mark.gnugo]

FIXTURES = Path(__file__).parent / "fixtures"
GNUGO = f"{find_gnugo()} --mode gtp --level 1 --chinese-rules"
MOVETIME = TimeControl.from_args(movetime_ms=1000, fixed_timeout_ms=1500)


def gtp_fixture(*args: str) -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(FIXTURES / 'gtp_fixture.py'))} " + " ".join(args)


def play(tmp_path, cmd1, cmd2, games=2, tc=MOVETIME, rules=GoRules(size=5, komi=3.0), openings=None):
    config = MatchConfig(
        game="go",
        engines=(EngineSpec("one", cmd1), EngineSpec("two", cmd2)),
        tc=tc,
        games=games,
        go_rules=rules,
        records_dir=str(tmp_path / "records"),
        **({"openings": openings} if openings else {}),
    )
    match = Match(config, out=io.StringIO())
    summary = match.run()
    return summary, [match.tally.results[i] for i in sorted(match.tally.results)]


def test_parse_score():
    assert parse_score("B+6.5") == ("b", 6.5)
    assert parse_score("W+2") == ("w", 2.0)
    assert parse_score("0") == (None, 0.0)
    with pytest.raises(ValueError):
        parse_score("cannot score")


def test_gnugo_vs_gnugo_scored_by_the_referee_with_sgf(tmp_path):
    never_resign = GNUGO + " --never-resign"
    summary, results = play(tmp_path, never_resign, never_resign)
    assert len(results) == 2 and summary["faults"] == {"one": {}, "two": {}}
    for r in results:
        assert r.reason == "score"
        game = sgf.Sgf_game.from_bytes(Path(r.records[0]).read_bytes())
        assert game.get_size() == 5 and game.get_komi() == 3.0
        moves = [node.get_move() for node in game.get_main_sequence()[1:]]
        assert len(moves) == r.plies and moves[-1][1] is None and moves[-2][1] is None  # two passes
        assert game.get_root().get("RE") == r.detail and game.get_winner() == r.winner
        assert [c for c, _ in moves] == ["b", "w"] * (len(moves) // 2) + ["b"] * (len(moves) % 2)


@pytest.mark.parametrize(
    "fault,reason",
    [
        ("crash", "crash"),
        ("hang", "time"),
        ("illegal", "illegal"),
        ("garbage", "illegal"),
        ("fail", "protocol"),
    ],
)
def test_gtp_faults_are_losses_and_the_match_finishes(tmp_path, fault, reason):
    summary, results = play(tmp_path, gtp_fixture("--fault", fault, "--seed", "1"), GNUGO)
    assert [r.reason for r in results] == [reason, reason]
    assert all(r.first_score == 0.0 for r in results)
    assert summary["faults"]["one"] == {reason: 2}
    for r in results:  # the record says who won and why
        game = sgf.Sgf_game.from_bytes(Path(r.records[0]).read_bytes())
        assert game.get_winner() == r.winner


def test_go_openings_from_sgf_and_move_lists(tmp_path):
    book = tmp_path / "book.sgf"
    book.write_bytes(b"(;GM[1]FF[4]SZ[5];B[cc];W[bc])(;GM[1]FF[4]SZ[5];B[bb])")
    openings = load_openings("go", str(book), 5, None)
    assert [o.moves for o in openings] == [(("b", (2, 2)), ("w", (2, 1))), (("b", (3, 1)),)]
    lines = tmp_path / "book.txt"
    lines.write_text("C3 B3\n")
    assert load_openings("go", str(lines), 5, None)[0].moves == openings[0].moves
    _, results = play(tmp_path, gtp_fixture("--fault", "resign", "--at", "1"), GNUGO, openings=openings[:1])
    for r in results:
        moves = [n.get_move() for n in sgf.Sgf_game.from_bytes(Path(r.records[0]).read_bytes()).get_main_sequence()[1:]]
        assert moves[:2] == [("b", (2, 2)), ("w", (2, 1))]
        assert r.reason == "resign" and r.first_score == 0.0


def test_go_rejects_clocks_gtp_cannot_express(tmp_path):
    with pytest.raises(MatchError, match="Fischer"):
        MatchConfig(
            game="go",
            engines=(EngineSpec("a", GNUGO), EngineSpec("b", GNUGO)),
            tc=TimeControl.from_args(time_ms=1000, inc_ms=100),
        )
    with pytest.raises(MatchError, match="whole seconds"):
        MatchConfig(
            game="go",
            engines=(EngineSpec("a", GNUGO), EngineSpec("b", GNUGO)),
            tc=TimeControl.from_args(movetime_ms=500),
        )
