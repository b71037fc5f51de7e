"""Shogi matches over real pipes: fixture USI engines (random, faulty, scripted) refereed by learn.match."""

import io
import json
import shlex
import subprocess
import sys
from pathlib import Path

import cshogi
import cshogi.CSA
import cshogi.KIF
import pytest
import shogi.CSA
import shogi.KIF

from learn.match.clock import RefereeClock, TimeControl
from learn.match.match import EngineSpec, Match, MatchConfig, MatchError, SprtSpec, load_openings
from learn.match.openings import Opening
from learn.match.shogi_game import ShogiRules

pytestmark = pytest.mark.process

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[3]
BYOYOMI = TimeControl.from_args(byoyomi_ms=200, margin_ms=150)

MATE_SFEN = "4k4/9/4P4/9/9/9/9/9/4K4 b G2r2b3g4s4n4l17p 1"  # G*5b mates
PERPETUAL_SFEN = "4k4/R8/9/9/9/9/9/9/4K4 b - 1"  # R 9b9a/9a9b checks, K 5a5b/5b5a
DECLARE_SFEN = "RRBBGGGG1/SSSSK4/9/9/9/9/9/9/8k b - 1"  # Black: 28 points, 12 pieces in camp


def usi(*args: str) -> str:
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(FIXTURES / 'usi_fixture.py'))} " + " ".join(
        shlex.quote(a) for a in args
    )


def play(
    tmp_path,
    cmd1,
    cmd2,
    games=2,
    tc=BYOYOMI,
    rules=ShogiRules(max_moves=40, stop_grace_s=0.5),
    openings=None,
    concurrency=1,
    **kw,
):
    out = io.StringIO()
    config = MatchConfig(
        game="shogi",
        engines=(EngineSpec("one", cmd1), EngineSpec("two", cmd2)),
        tc=tc,
        games=games,
        concurrency=concurrency,
        openings=openings or [Opening(label="startpos")],
        shogi_rules=rules,
        records_dir=str(tmp_path / "records"),
        json_path=str(tmp_path / "match.json"),
        **kw,
    )
    match = Match(config, out=out)
    summary = match.run()
    results = [match.tally.results[i] for i in sorted(match.tally.results)]
    return summary, results, out.getvalue()


def referee_moves(path: Path) -> list:
    """Moves of a written CSA record, read back by python-shogi."""
    return shogi.CSA.Parser.parse_file(str(path))[0]["moves"]


def test_random_engines_play_full_games_with_readable_records(tmp_path):
    summary, results, text = play(tmp_path, usi("--seed", "1"), usi("--seed", "2"), games=4, concurrency=2)
    assert [r.index for r in results] == [0, 1, 2, 3]
    assert [r.first_is_black for r in results] == [True, False, True, False]
    assert all(r.reason in ("max-moves", "mate", "repetition", "perpetual-check") for r in results)
    assert summary["games"] == 4 and sum(summary["pentanomial"]) == 2
    assert summary["faults"] == {"one": {}, "two": {}}
    assert text.count("\ngame ") == 4 and "Score of one vs two" in text
    for r in results:
        csa = next(Path(p) for p in r.records if p.endswith(".csa"))
        kif = next(Path(p) for p in r.records if p.endswith(".kif"))
        moves = referee_moves(csa)
        assert len(moves) == r.plies
        assert shogi.KIF.Parser.parse_file(str(kif))[0]["moves"] == moves
        assert [cshogi.move_to_usi(m) for m in cshogi.CSA.Parser.parse_file(str(csa))[0].moves] == moves
        assert [cshogi.move_to_usi(m) for m in cshogi.KIF.Parser.parse_file(str(kif)).moves] == moves
        board = cshogi.Board()
        for m in moves:  # every recorded move is legal for an independent rules implementation
            assert board.is_legal(board.move_from_usi(m))
            board.push_usi(m)
    data = json.loads((tmp_path / "match.json").read_text())
    assert data["summary"]["games"] == 4 and len(data["games"]) == 4
    assert data["games"][0]["first_is_black"] is True


@pytest.mark.parametrize(
    "fault,reason",
    [
        ("crash", "crash"),
        ("hang", "hang"),
        ("oversleep", "time"),
        ("illegal", "illegal"),
        ("false-win", "false-declaration"),
    ],
)
def test_each_fault_is_detected_scored_as_a_loss_and_the_match_finishes(tmp_path, fault, reason):
    summary, results, text = play(tmp_path, usi("--fault", fault, "--at", "2", "--seed", "3"), usi("--seed", "4"))
    assert len(results) == 2
    for r in results:
        assert r.reason == reason and r.first_score == 0.0, text
        assert r.plies == (2 if r.first_is_black else 3)  # the fault came at engine 1's second move
    assert summary["faults"]["one"] == {reason: 2} and summary["losses"] == 2
    allowance_s = (BYOYOMI.clock.byoyomi_ms + BYOYOMI.margin_ms) / 1000
    slowest = summary["slowest_move_s"]  # each engine's longest answer, the late one's included
    assert 0.0 < slowest["two"] < allowance_s
    if fault == "oversleep":
        assert slowest["one"] > allowance_s
    restarted = summary["restarts"]["one@slot0"]
    assert restarted == (1 if fault in ("crash", "hang") else 0)  # killed after game 1, restarted once
    ending = {
        "crash": "ILLEGAL_ACTION",
        "hang": "%TIME_UP",
        "oversleep": "%TIME_UP",
        "illegal": "ILLEGAL_ACTION",
        "false-win": "ILLEGAL_ACTION",
    }[fault]
    csa_text = Path(next(p for p in results[0].records if p.endswith(".csa"))).read_text()
    assert ending in csa_text
    for ext in ("csa", "kif"):  # game 1: engine 1 (Black) lost
        parser = shogi.CSA.Parser if ext == "csa" else shogi.KIF.Parser
        assert parser.parse_file(next(p for p in results[0].records if p.endswith(ext)))[0]["win"] == "w"


def test_engines_receive_the_result_and_are_reused(tmp_path):
    logs = tmp_path / "logs"
    play(tmp_path, usi("--fault", "resign", "--at", "1"), usi("--seed", "5"), games=2, log_dir=str(logs))
    one = (logs / "slot0-engine1-one.log").read_text().splitlines()
    two = (logs / "slot0-engine2-two.log").read_text().splitlines()
    assert one.count("> usi") == 1 and one.count("> usinewgame") == 2  # one process, two games
    assert "> gameover lose" in one and "> gameover win" in two
    assert one.index("> isready") < one.index("< readyok") < one.index("> usinewgame")


def test_repetition_draw(tmp_path):
    script = "5i5h 5h5i 5a5b 5b5a"  # both kings step out and back: the start position recurs
    summary, results, _ = play(
        tmp_path, usi("--script", script), usi("--script", script), games=2, rules=ShogiRules(max_moves=100)
    )
    for r in results:
        assert (r.winner, r.reason, r.plies) == (None, "repetition", 12)  # 4th occurrence at ply 12
    assert summary["draws"] == 2
    assert "%SENNICHITE" in Path(results[0].records[0]).read_text()


def test_perpetual_check_loses_for_the_checker(tmp_path):
    script = "9b9a 9a9b 5a5b 5b5a"
    _, results, _ = play(
        tmp_path,
        usi("--script", script),
        usi("--script", script),
        games=1,
        openings=[Opening(PERPETUAL_SFEN, (), "perpetual")],
        rules=ShogiRules(max_moves=100),
    )
    (r,) = results
    # the start position recurs at plies 4, 8, 12; every Black move of the cycle gave check -> Black loses
    assert (r.winner, r.reason, r.plies) == ("w", "perpetual-check", 12)
    kif = next(p for p in r.records if p.endswith(".kif"))
    assert shogi.KIF.Parser.parse_file(kif)[0]["win"] == "w"
    assert cshogi.KIF.Parser.parse_file(kif).win == cshogi.WHITE_WIN


def test_checkmate_ends_the_game(tmp_path):
    _, results, _ = play(tmp_path, usi("--script", "G*5b"), usi(), games=1, openings=[Opening(MATE_SFEN, (), "mate")])
    (r,) = results
    assert (r.winner, r.reason, r.plies) == ("b", "mate", 1)
    csa = next(p for p in r.records if p.endswith(".csa"))
    assert shogi.CSA.Parser.parse_file(csa)[0]["sfen"].startswith("4k4/9/4P4")
    kif = next(p for p in r.records if p.endswith(".kif"))
    parsed = shogi.KIF.Parser.parse_file(kif)[0]
    assert parsed["moves"] == ["G*5b"] and parsed["win"] == "b"


@pytest.mark.parametrize(
    "rule,winner,reason",
    [
        ("CSARule27", "b", "declaration"),  # 28 points: enough for Black under the 27-point rule
        ("CSARule24", None, "declaration-draw"),  # 24-30 points draw under the 24-point rule
        ("NoEnteringKing", "w", "false-declaration"),
    ],
)
def test_declaration_is_judged_by_the_rule(tmp_path, rule, winner, reason):
    _, results, _ = play(
        tmp_path,
        usi("--fault", "false-win", "--at", "1"),
        usi(),
        games=1,
        openings=[Opening(DECLARE_SFEN, (), "declare")],
        rules=ShogiRules(declaration_rule=rule, max_moves=40),
    )
    (r,) = results
    assert (r.winner, r.reason, r.plies) == (winner, reason, 0)


def test_fischer_clock_time_loss(tmp_path):
    tc = TimeControl.from_args(time_ms=400, inc_ms=100, margin_ms=100)
    _, results, _ = play(tmp_path, usi("--fault", "oversleep", "--at", "3"), usi(), games=2, tc=tc)
    assert [r.reason for r in results] == ["time", "time"] and all(r.first_score == 0 for r in results)


def test_clock_enforces_byoyomi_after_main_time():
    clock = RefereeClock(TimeControl.from_args(time_ms=1000, byoyomi_ms=500, margin_ms=100))
    assert clock.usi_go() == "go btime 1000 wtime 1000 byoyomi 500"
    assert clock.allowance_ms("b") == 1600
    clock.spend("b", 1300)  # main time used up, 300 ms of byoyomi
    assert (clock.clocks["b"].main_ms, clock.clocks["w"].main_ms) == (0, 1000)
    assert clock.on_time("b", 600) and not clock.on_time("b", 601)  # byoyomi + margin only
    fischer = RefereeClock(TimeControl.from_args(time_ms=1000, inc_ms=200, margin_ms=0))
    assert fischer.usi_go() == "go btime 1000 wtime 1000 binc 200 winc 200"
    fischer.spend("w", 300)
    assert fischer.clocks["w"].main_ms == 900 and fischer.allowance_ms("w") == 900
    assert RefereeClock(TimeControl.from_args(nodes=5000)).usi_go() == "go nodes 5000"
    assert RefereeClock(TimeControl.from_args(movetime_ms=300)).usi_go() == "go movetime 300"
    with pytest.raises(ValueError):
        TimeControl.from_args(byoyomi_ms=100, inc_ms=100)
    with pytest.raises(ValueError):
        TimeControl.from_args()


def test_fixed_nodes_are_sent_and_not_timed(tmp_path):
    tc = TimeControl.from_args(nodes=1000, fixed_timeout_ms=5000)
    logs = tmp_path / "logs"
    summary, results, _ = play(
        tmp_path,
        usi("--seed", "6"),
        usi("--seed", "7"),
        games=1,
        tc=tc,
        rules=ShogiRules(max_moves=6),
        log_dir=str(logs),
    )
    assert results[0].reason == "max-moves"
    assert "> go nodes 1000" in (logs / "slot0-engine1-one.log").read_text()


def test_openings_are_played_with_both_colours(tmp_path):
    book = tmp_path / "openings.txt"
    book.write_text(
        "# two openings\n7g7f 3c3d\nsfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2 moves 8c8d\n"
    )
    openings = load_openings("shogi", str(book), 9, None)
    assert [o.moves for o in openings] == [("7g7f", "3c3d"), ("8c8d",)]
    _, results, _ = play(
        tmp_path, usi("--seed", "8"), usi("--seed", "9"), games=4, openings=openings, rules=ShogiRules(max_moves=12)
    )
    assert [r.opening for r in results] == [openings[0].label] * 2 + [openings[1].label] * 2
    assert referee_moves(Path(results[0].records[0]))[:2] == ["7g7f", "3c3d"]
    third = shogi.CSA.Parser.parse_file(results[2].records[0])[0]
    assert third["sfen"].split()[1] == "w" and third["moves"][0] == "8c8d"
    assert results[2].plies == 12 - 1  # the game-length limit counts from the SFEN's move number 2


def test_bad_configuration_fails_clearly(tmp_path):
    with pytest.raises(MatchError, match="illegal move"):
        MatchConfig(
            game="shogi",
            engines=(EngineSpec("a", usi()), EngineSpec("b", usi())),
            tc=BYOYOMI,
            openings=[Opening(None, ("7g7e",), "bad")],
        )
    config = MatchConfig(
        game="shogi", engines=(EngineSpec("a", "/nonexistent/engine"), EngineSpec("b", usi())), tc=BYOYOMI
    )
    with pytest.raises(MatchError, match="does not start"):
        Match(config, out=io.StringIO()).run()


def test_sprt_verdict_stops_the_match(tmp_path):
    summary, results, text = play(
        tmp_path, usi("--fault", "resign", "--at", "1"), usi(), games=20, sprt=SprtSpec(0.0, 10.0)
    )
    assert summary["sprt"]["verdict"] == "H0" and len(results) == 2  # one lost pair is enough here
    assert "-> H0" in text


def test_cli_runs_a_match_and_writes_json(tmp_path):
    out = tmp_path / "cli.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "learn",
            "match",
            "--engine1",
            usi("--seed", "1"),
            "--engine2",
            usi("--seed", "2"),
            "--name1",
            "a",
            "--name2",
            "b",
            "--games",
            "2",
            "--byoyomi",
            "200",
            "--max-moves",
            "10",
            "--option1",
            "Dummy=3",
            "--sprt",
            "0",
            "10",
            "--json",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Score of a vs b: 0 - 0 - 2" in proc.stdout and "SPRT" in proc.stdout
    data = json.loads(out.read_text())
    assert data["engines"][0]["options"] == {"Dummy": "3"}
    assert data["summary"]["sprt"]["verdict"] == "continue"
    bad = subprocess.run(
        [sys.executable, "-m", "learn", "match", "--engine1", "/nonexistent", "--engine2", usi(), "--byoyomi", "100"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "does not start" in bad.stderr


def test_a_killed_match_resumes_with_its_finished_games(tmp_path):
    """The JSON is rewritten after every game; a match killed after its first games resumes with them, plays
    only the missing indices, and refuses to resume with other settings."""
    cmd = [sys.executable, "-m", "learn", "match", "--engine1", usi("--seed", "5"), "--engine2", usi("--seed", "6")]
    cmd += ["--name1", "one", "--name2", "two", "--games", "6", "--byoyomi", "200", "--max-moves", "30"]
    cmd += ["--json", str(tmp_path / "match.json"), "--records", str(tmp_path / "records")]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("game    2/6"):
            proc.kill()
            break
    proc.wait(timeout=30)
    finished = json.loads((tmp_path / "match.json").read_text())["games"]
    assert 2 <= len(finished) < 6
    done = {g["index"]: g for g in finished}

    other = subprocess.run(cmd + ["--resume", "--byoyomi", "300"], cwd=REPO, capture_output=True, text=True)
    assert other.returncode == 2 and "other time_control" in other.stderr

    resumed = subprocess.run(cmd + ["--resume"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {len(done)} of 6 games already played" in resumed.stdout
    played = [
        int(line.split("/")[0].split()[-1]) - 1 for line in resumed.stdout.splitlines() if line.startswith("game ")
    ]
    assert sorted(played) == sorted(set(range(6)) - set(done))
    data = json.loads((tmp_path / "match.json").read_text())
    assert [g["index"] for g in data["games"]] == list(range(6)) and data["summary"]["games"] == 6
    for g in data["games"]:
        if g["index"] in done:
            assert g == done[g["index"]]
