"""GTP sessions with the real engine process (`python -m usi_engine gtp`) over pipes: protocol framing,
ids, errors, malformed input, play/undo, handicap, loadsgf, clocks, analysis streaming, final_score
against GNU Go on a finished game."""

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from learn.match.engines import EngineError, EngineProcess
from learn.match.go_game import parse_score

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parent.parent
FIRST_TIMEOUT = 600.0  # a cold numba cache compiles the Go kernels before the first answer
REQUIRED = (
    "protocol_version name version known_command list_commands quit boardsize clear_board komi "
    "play genmove undo showboard final_score final_status_list time_settings time_left "
    "kgs-time_settings kgs-genmove_cleanup loadsgf fixed_handicap place_free_handicap "
    "set_free_handicap reg_genmove gogui-analyze_commands gogui-playout_moves lz-analyze"
).split()


class GtpProcess:
    """The engine (or `argv`) on the project's pipe driver; `ask` sends one line and returns the full response
    lines (blank excluded)."""

    def __init__(self, *args, argv=None, env=None, log_path=None):
        env = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
        argv = argv or [sys.executable, "-m", "usi_engine", "gtp", *args]
        self.engine = EngineProcess(argv, "gtp", cwd=str(ROOT), env=env, log_path=log_path)
        self.engine.start()
        self.proc = self.engine.proc

    def line(self, timeout=60.0):
        """The next line (AssertionError on a timeout or when the engine exited)."""
        try:
            return self.engine.readline(time.monotonic() + timeout)[1]
        except EngineError as e:
            raise AssertionError(str(e)) from None

    def send(self, text):
        self.engine.send(text)

    def response(self, timeout=60.0):
        out = []
        while True:
            line = self.line(timeout)
            if line == "" and out:
                return out
            if line or out:
                out.append(line)

    def ask(self, text, timeout=60.0):
        self.send(text)
        return self.response(timeout)

    def ok(self, text, timeout=60.0):
        lines = self.ask(text, timeout)
        assert lines[0].startswith("="), (text, lines)
        return "\n".join([lines[0][1:].lstrip("0123456789").strip()] + lines[1:]).strip()

    def close(self):
        self.engine.kill()


@pytest.fixture(scope="module")
def gtp():
    p = GtpProcess("--size", "9", "--komi", "7", "--seconds", "0.2", "--resign", "0")
    p.ok("boardsize 9", timeout=FIRST_TIMEOUT)  # the first answer waits for the kernels (loaded or compiled)
    p.ok("genmove b")
    p.ok("clear_board")
    yield p
    p.close()


def stones(p, colour):
    board = p.ok("showboard").splitlines()
    return sum(row.split(" ", 1)[1].count(colour) for row in board if row.strip()[:1].isdigit())


def test_framing_ids_and_required_commands(gtp):
    assert gtp.ask("protocol_version") == ["= 2"]
    assert gtp.ask("17 name") == ["=17 MCSS"]
    assert gtp.ask("3 known_command genmove") == ["=3 true"]
    assert gtp.ask("known_command frobnicate") == ["= false"]
    listed = gtp.ok("list_commands").split("\n")
    assert set(REQUIRED) <= set(listed)
    assert gtp.ask("9 frobnicate") == ["?9 unknown command"]


def test_malformed_input_gets_errors_and_the_engine_keeps_answering(gtp):
    assert gtp.ask("4 play b zz") == ["?4 invalid color or coordinate"]
    assert gtp.ask("play purple e5")[0].startswith("? ")
    assert gtp.ask("play b")[0].startswith("? ")
    assert gtp.ask("boardsize 40") == ["? unacceptable size"]
    assert gtp.ask("boardsize nine")[0].startswith("? ")
    assert gtp.ask("komi lots")[0].startswith("? ")
    assert gtp.ask("genmove")[0].startswith("? ")
    assert gtp.ask("time_left b x 0")[0].startswith("? ")
    assert gtp.ask("final_status_list sideways")[0].startswith("? ")
    gtp.send("")  # empty lines and comments are skipped,
    gtp.send("# just a comment")
    assert gtp.ask("5\tname # trailing comment\x01") == ["=5 MCSS"]  # tabs -> spaces, controls dropped
    assert gtp.ask("protocol_version") == ["= 2"]


def test_play_undo_showboard_and_illegal_moves(gtp):
    gtp.ok("clear_board")
    gtp.ok("play b e5")
    assert stones(gtp, "X") == 1
    assert gtp.ask("play w E5") == ["? illegal move"]  # occupied
    gtp.ok("play w d5")
    gtp.ok("play w f5")
    gtp.ok("play w e4")  # same colour twice is legal input
    gtp.ok("play w e6")  # captures e5
    assert stones(gtp, "X") == 0 and stones(gtp, "O") == 4
    gtp.ok("undo")
    assert stones(gtp, "X") == 1
    for _ in range(4):
        gtp.ok("undo")
    assert gtp.ask("undo") == ["? cannot undo"]
    gtp.ok("clear_board")
    for v in ("a2", "b1"):
        gtp.ok(f"play w {v}")
    assert gtp.ask("play b a1") == ["? illegal move"]  # suicide


def test_genmove_plays_a_legal_move_and_reg_genmove_does_not(gtp):
    gtp.ok("clear_board")
    move = gtp.ok("genmove b")
    assert move.lower() != "resign"
    assert stones(gtp, "X") == (0 if move.lower() == "pass" else 1)
    before = gtp.ok("showboard")
    reg = gtp.ok("reg_genmove w")
    assert reg and gtp.ok("showboard") == before
    if move.lower() != "pass":
        assert gtp.ask(f"play w {move}") == ["? illegal move"]


def test_engine_plays_with_pattern_playouts_and_pattern_prior():
    """`--playout-patterns on --prior-patterns on` (docs/go.md, "Playouts"): the engine starts and plays legal
    moves on both sides."""
    p = GtpProcess(
        "--size", "9", "--komi", "7", "--playouts", "300", "--playout-patterns", "on", "--prior-patterns", "on"
    )
    try:
        p.ok("boardsize 9", timeout=FIRST_TIMEOUT)
        for colour in "bwbw":
            move = p.ok(f"genmove {colour}")
            assert move.upper() not in ("PASS", "RESIGN") and len(move) in (2, 3)
        assert stones(p, "X") == 2 and stones(p, "O") == 2
    finally:
        p.close()


def test_handicap_commands(gtp):
    gtp.ok("clear_board")
    assert gtp.ok("fixed_handicap 4").split() == ["C7", "G7", "C3", "G3"]
    assert stones(gtp, "X") == 4
    assert gtp.ask("fixed_handicap 2") == ["? board not empty"]
    assert gtp.ask("set_free_handicap a1 b2") == ["? board not empty"]
    gtp.ok("clear_board")
    assert gtp.ask("fixed_handicap 10") == ["? invalid number of stones"]
    assert gtp.ask("set_free_handicap a1 a1") == ["? bad vertex list"]
    assert gtp.ask("set_free_handicap a1 zz9") == ["? bad vertex list"]
    gtp.ok("set_free_handicap a1 b2 c3")
    assert stones(gtp, "X") == 3
    assert "White to move" in gtp.ok("showboard")
    gtp.ok("clear_board")
    assert len(gtp.ok("place_free_handicap 3").split()) == 3


def test_loadsgf_positions(gtp, tmp_path):
    path = tmp_path / "game.sgf"
    path.write_text("(;GM[1]FF[4]SZ[9]KM[6.5]AB[aa];B[ee];W[dd];B[ce];W[cc])")
    assert gtp.ok(f"loadsgf {path}") == "black"
    assert stones(gtp, "X") == 3 and stones(gtp, "O") == 2
    assert gtp.ok(f"loadsgf {path} 3") == "black"  # before move 3 (B ce)
    assert stones(gtp, "X") == 2 and stones(gtp, "O") == 1
    assert gtp.ok(f"loadsgf {path} C7") == "white"  # before the first move at C7 (W cc)
    assert "komi 6.5" in gtp.ok("showboard")
    assert gtp.ask(f"loadsgf {tmp_path / 'missing.sgf'}")[0].startswith("? cannot load file")
    bad = tmp_path / "bad.sgf"
    bad.write_text("this is no sgf")
    assert gtp.ask(f"loadsgf {bad}")[0].startswith("? cannot load file")
    gtp.ok("boardsize 9")


def test_time_settings_keep_genmove_within_the_clock(gtp):
    gtp.ok("clear_board")
    gtp.ok("time_settings 0 1 1")  # 1 s per move, Canadian 1 stone
    gtp.ok("time_left b 1 1")
    start = time.perf_counter()
    gtp.ok("genmove b")
    assert time.perf_counter() - start < 1.0
    gtp.ok("kgs-time_settings absolute 30")
    gtp.ok("time_left w 0.5 0")  # nearly flagged: answer at once
    start = time.perf_counter()
    gtp.ok("genmove w")
    assert time.perf_counter() - start < 0.5
    assert gtp.ask("kgs-time_settings fortnightly 3")[0].startswith("? ")
    gtp.ok("kgs-time_settings none")


def test_lz_analyze_streams_until_the_next_line(gtp):
    gtp.ok("clear_board")
    gtp.send("7 lz-analyze b 10")
    assert gtp.line(30) == "=7"
    infos = [gtp.line(30) for _ in range(2)]
    gtp.send("")  # any line, even empty, stops it
    rest = []
    while True:
        line = gtp.line(30)
        if line == "":
            break
        rest.append(line)
    for line in infos + rest:
        assert line.startswith("info move ")
        fields = line.split()
        assert {"visits", "winrate", "prior", "order", "pv"} <= set(fields)
        assert 0 <= int(fields[fields.index("winrate") + 1]) <= 10000
    assert gtp.ask("protocol_version") == ["= 2"]
    commands = gtp.ok("gogui-analyze_commands").split("\n")
    assert "plist/Dead Stones/final_status_list dead" in commands


def test_gogui_playout_moves_reports_the_playout_policys_first_moves(gtp):
    """White's E4 is in atari after Black's E5, White to move: the playouts' first move is the escape E3 nearly
    always (rule 1), reported as GoGui's gfx `VAR w E3` and whole percents summing to about 100."""
    gtp.ok("clear_board")
    for move in ("b D4", "w E4", "b F4", "w A1", "b E5"):
        gtp.ok(f"play {move}")
    lines = gtp.ok("gogui-playout_moves").split("\n")
    assert lines[0] == "VAR w E3", lines
    percent = {line.split()[1]: int(line.split()[2]) for line in lines[1:]}
    assert all(line.startswith("LABEL ") for line in lines[1:])
    assert percent["E3"] >= 90 and 98 <= sum(percent.values()) <= 102, percent
    assert "gfx/Playout Moves/gogui-playout_moves" in gtp.ok("gogui-analyze_commands").split("\n")
    gtp.ok("clear_board")


def gnugo_binary():
    return shutil.which("gnugo") or ("/usr/games/gnugo" if os.path.exists("/usr/games/gnugo") else None)


@pytest.mark.gnugo
def test_final_score_and_dead_stones_agree_with_gnugo_on_a_finished_game(gtp):
    """GNU Go plays both sides of a 9x9 game at level 1 until two passes; every move goes to our engine;
    then final_score and final_status_list dead must match GNU Go's."""
    binary = gnugo_binary()
    assert binary, "gnugo not installed (tools/test.sh installs it)"
    gnu = GtpProcess(argv=[binary, "--mode", "gtp", "--level", "1", "--chinese-rules", "--seed", "3"])
    try:
        for cmd in ("boardsize 9", "clear_board", "komi 7"):
            gnu.ok(cmd)
            gtp.ok(cmd)
        passes, colour = 0, "black"
        for _ in range(250):
            move = gnu.ok(f"genmove {colour}")
            assert move.lower() != "resign"
            gtp.ok(f"play {colour} {move}")
            passes = passes + 1 if move.lower() == "pass" else 0
            if passes == 2:
                break
            colour = "white" if colour == "black" else "black"
        assert passes == 2
        assert parse_score(gtp.ok("final_score")) == parse_score(gnu.ok("final_score"))
        ours = sorted(gtp.ok("final_status_list dead").split())
        theirs = sorted(gnu.ok("final_status_list dead").split())
        assert ours == theirs
    finally:
        gnu.close()


def test_quit_answers_then_exits():
    p = GtpProcess("--size", "9")
    try:
        assert p.ask("5 quit") == ["=5"]
        assert p.proc.wait(timeout=30) == 0
    finally:
        p.close()


def test_end_of_input_during_analysis_ends_the_engine():
    p = GtpProcess("--size", "9")
    try:
        p.send("1 lz-analyze b 10")
        assert p.line(FIRST_TIMEOUT) == "=1"
        p.proc.stdin.close()
        assert p.proc.wait(timeout=120) == 0
    finally:
        p.close()


def test_play_accepts_a_superko_repetition_that_genmove_never_makes(gtp):
    """The controller owns the ko rule (GNU Go and KGS use simple ko): `play` of a move whose only fault is
    repeating an earlier position is accepted (a real GNU Go game was lost by refusing one), while the
    engine's own moves still obey positional superko."""
    gtp.ok("clear_board")
    for colour, vertices in (("b", ["C5", "D6", "D4"]), ("w", ["D5", "E6", "E4", "F5"])):
        for v in vertices:
            gtp.ok(f"play {colour} {v}")
    gtp.ok("play b E5")  # captures D5
    gtp.ok("play w pass")
    assert gtp.ask("play w D5") == ["="]  # retakes: the position after `play w F5` again (superko)
    assert stones(gtp, "X") == 3 and stones(gtp, "O") == 4
    move = gtp.ok("genmove b")
    assert move.upper() != "E5"  # retaking would repeat the position after `play b E5`


@pytest.mark.slow
def test_cold_start_answers_first_timed_genmove_in_time(tmp_path):
    """A first start (empty numba cache, as on a user's machine) compiles the Go kernels before the first
    answer, saying so on stderr, so the first genmove under a 2 s byoyomi is searched within its clock
    (it used to wait ~28 s for the compile)."""
    log = tmp_path / "gtp.log"  # the transcript holds the engine's stderr
    p = GtpProcess("--size", "9", "--komi", "7", env={"NUMBA_CACHE_DIR": str(tmp_path / "numba")}, log_path=str(log))
    try:
        t0 = time.monotonic()
        p.ok("time_settings 0 2 1", timeout=FIRST_TIMEOUT)
        compile_seconds = time.monotonic() - t0
        t1 = time.monotonic()
        move = p.ok("genmove b")
        seconds = time.monotonic() - t1
        assert seconds < 2.0, (seconds, compile_seconds)
        assert move.upper() not in ("PASS", "RESIGN") and len(move) in (2, 3)
        assert p.ok("quit") == ""
        assert p.proc.wait(timeout=30) == 0
        assert "loading the search kernels" in log.read_text()
    finally:
        p.close()
