"""USI protocol tests against the real engine process (reference/usi.md §10 transcript, §9 failure table).

One engine process serves the module (the first isready compiles numba; later ones are fast); tests that
must start or end a process (registration-only run, quit mid-search) start their own.
"""

import time

import cshogi
import pytest

from tests.usi_driver import UsiProcess

DECLARABLE = "2SGKGS2/1R5B1/LN1PPP1NL/9/9/9/9/9/4k4 b 7Prb2g2s2n2l8p 1"        # 28 points, 13 pieces
ONE_SHORT = "2SGKGS2/1R5B1/LN1PPP1NL/9/9/9/9/9/4k4 b 6Prb2g2s2n2l9p 1"         # 27 points
MATED = "4k4/4G4/4P4/9/9/9/9/9/4K4 w - 1"                                      # White to move, mated
FAST_GO = "go btime 0 wtime 0 byoyomi 1500"                                    # NetworkDelay2=1000 below


@pytest.fixture(scope="module")
def eng():
    e = UsiProcess()
    e.handshake()
    e.send("setoption name NetworkDelay2 value 1000")
    e.send("setoption name NetworkDelay value 100")
    e.send("setoption name MinimumThinkingTime value 1000")
    yield e
    e.close()


def bestmoves(lines):
    return [s for s in lines if s.startswith("bestmove")]


def legal_in(position_cmd, move):
    """Whether `move` is legal in the position of a `position ...` command (cshogi as the oracle)."""
    tokens = position_cmd.split()[1:]
    moves = tokens[tokens.index("moves") + 1:] if "moves" in tokens else []
    head = tokens[:tokens.index("moves")] if "moves" in tokens else tokens
    board = cshogi.Board() if head == ["startpos"] else cshogi.Board(" ".join(head[1:]))
    for m in moves:
        assert board.push_usi(m), m
    return move in [cshogi.move_to_usi(m) for m in board.legal_moves]


def go_and_answer(eng, position, go=FAST_GO, timeout=15.0):
    eng.send(position)
    eng.send(go)
    lines, _ = eng.expect_prefix("bestmove", timeout)
    return lines, lines[-1].split()


def assert_quiet(eng, wait=0.5):
    """No stray bestmove after the one already read."""
    assert bestmoves(eng.drain(wait)) == []


def test_usiok_fast_registration_only_run():
    e = UsiProcess()
    try:
        t0 = e.send("usi")
        lines, t1 = e.expect(lambda s: s == "usiok", 10.0)
        print(f"usiok after {1000 * (t1 - t0):.0f} ms (including interpreter start-up)")
        assert t1 - t0 < 0.5
        assert lines[0].startswith("id name") and lines[1].startswith("id author")
        names = [s.split()[2] for s in lines if s.startswith("option name")]
        for required in ("Threads", "USI_Hash", "USI_Ponder", "MultiPV", "EvalFile", "NetworkDelay",
                         "NetworkDelay2", "MinimumThinkingTime", "SlowMover", "ResignValue", "DrawValueBlack",
                         "DrawValueWhite", "MaxMovesToDraw", "EnteringKingRule", "DepthLimit", "NodesLimit",
                         "ConsiderationMode", "PvInterval", "LogFile", "SoftmaxTemperature",
                         "BackupTemperature", "TemperatureSpread", "QSearchDepth", "GraphSearch",
                         "SelectionPolicy", "Seed"):
            assert required in names
        for s in lines:
            if s.startswith("option name"):
                assert s.split()[3] == "type"          # names without spaces
        e.send("quit")
        assert e.proc.wait(5) == 0
    finally:
        e.close()


def test_isready_keepalive_then_readyok(eng):
    eng.send("setoption name USI_Ponder value true")
    eng.send("setoption name USI_Hash value 64")
    t0 = eng.send("isready")
    lines, t1 = eng.expect(lambda s: s == "readyok", 600.0)
    assert all(s == "" for s in lines[:-1]), lines
    print(f"isready (hash reallocation) answered in {1000 * (t1 - t0):.0f} ms")


def test_game_with_byoyomi_gives_legal_move_and_pv(eng):
    eng.send("usinewgame")
    pos = "position startpos"
    lines, answer = go_and_answer(eng, pos)
    assert legal_in(pos, answer[1])
    infos = [s for s in lines if s.startswith("info depth")]
    assert infos and " pv " in infos[-1] and " score " in infos[-1] and " nps " in infos[-1]
    if len(answer) == 4:
        assert answer[2] == "ponder"
        assert legal_in(f"{pos} moves {answer[1]}", answer[3])
    assert_quiet(eng)


def test_ponder_held_until_stop_exactly_one_bestmove(eng):
    pos = "position startpos moves 7g7f 3c3d"
    eng.send(pos)
    eng.send("go ponder btime 0 wtime 0 byoyomi 1500")
    assert bestmoves(eng.drain(1.5)) == []           # held although its search time would be over
    t0 = eng.send("stop")
    lines, t1 = eng.expect_prefix("bestmove", 5.0)
    print(f"stop -> bestmove {1000 * (t1 - t0):.1f} ms")
    assert t1 - t0 < 0.1
    assert legal_in(pos, lines[-1].split()[1])
    assert_quiet(eng)


def test_ponderhit_clock_starts_at_ponderhit(eng):
    pos = "position startpos moves 7g7f 3c3d 2g2f"
    eng.send(pos)
    eng.send("go ponder btime 0 wtime 0 byoyomi 1500")
    assert bestmoves(eng.drain(1.0)) == []
    t0 = eng.send("ponderhit")
    lines, t1 = eng.expect_prefix("bestmove", 5.0)
    # byoyomi 1500 - NetworkDelay2 1000 = 500 ms counted from ponderhit
    assert 0.3 < t1 - t0 < 1.4, t1 - t0
    assert legal_in(pos, lines[-1].split()[1])
    assert_quiet(eng)


def test_ponderhit_with_new_times(eng):
    pos = "position startpos moves 2g2f 8c8d"
    eng.send(pos)
    eng.send("go ponder btime 60000 wtime 60000 byoyomi 0")
    eng.drain(0.3)
    t0 = eng.send("ponderhit btime 0 wtime 0 byoyomi 1300")
    lines, t1 = eng.expect_prefix("bestmove", 5.0)
    assert t1 - t0 < 1.2, t1 - t0                   # 1300 - 1000 = 300 ms, not the 60 s main time
    assert legal_in(pos, lines[-1].split()[1])
    assert_quiet(eng)


def test_gameover_during_ponder_then_reuse(eng):
    pos = "position startpos moves 7g7f 8c8d"
    eng.send(pos)
    eng.send("go ponder btime 0 wtime 0 byoyomi 1500")
    eng.drain(0.5)
    eng.send("gameover lose")
    lines, _ = eng.expect_prefix("bestmove", 5.0)
    assert len(bestmoves(lines)) == 1
    assert_quiet(eng)
    t0 = eng.send("isready")
    _, t1 = eng.expect(lambda s: s == "readyok", 30.0)
    eng.send("usinewgame")
    pos = "position startpos moves 2g2f"
    lines, answer = go_and_answer(eng, pos)
    assert legal_in(pos, answer[1])
    assert_quiet(eng)


def test_infinite_until_stop_and_readyok_during_search(eng):
    pos = "position startpos"
    eng.send(pos)
    eng.send("go infinite")
    eng.drain(0.5)
    t0 = eng.send("isready")
    lines, t1 = eng.expect(lambda s: s == "readyok", 5.0)
    print(f"readyok during search {1000 * (t1 - t0):.1f} ms")
    assert t1 - t0 < 0.05
    assert bestmoves(lines + eng.drain(1.0)) == []
    t0 = eng.send("stop")
    lines, t1 = eng.expect_prefix("bestmove", 5.0)
    assert t1 - t0 < 0.1
    assert legal_in(pos, lines[-1].split()[1])
    assert_quiet(eng)


def test_go_byoyomi_only_keyword_parser(eng):
    pos = "position startpos moves 7g7f"
    lines, answer = go_and_answer(eng, pos, "go byoyomi 1500 foo bar")   # cshogi CLI style, junk tokens
    assert legal_in(pos, answer[1])


def test_go_nodes_and_movetime(eng):
    pos = "position startpos"
    _, answer = go_and_answer(eng, pos, "go nodes 20000")
    assert legal_in(pos, answer[1])
    t0 = time.perf_counter()
    _, answer = go_and_answer(eng, pos, "go movetime 400")
    assert time.perf_counter() - t0 < 1.5
    assert legal_in(pos, answer[1])


def test_multipv_lines(eng):
    eng.send("setoption name MultiPV value 3")
    try:
        lines, answer = go_and_answer(eng, "position startpos", "go movetime 500")
        assert any(" multipv 3 " in s for s in lines)
    finally:
        eng.send("setoption name MultiPV value 1")


def test_declaration_win_and_one_point_short(eng):
    lines, answer = go_and_answer(eng, f"position sfen {DECLARABLE}")
    assert answer == ["bestmove", "win"]
    assert any("declaration: 28 points" in s for s in lines)
    _, answer = go_and_answer(eng, f"position sfen {ONE_SHORT}")
    assert answer[1] != "win" and legal_in(f"position sfen {ONE_SHORT}", answer[1])
    eng.send("setoption name EnteringKingRule value NoEnteringKing")
    try:
        _, answer = go_and_answer(eng, f"position sfen {DECLARABLE}")
        assert answer[1] != "win"
    finally:
        eng.send("setoption name EnteringKingRule value CSARule27")


def test_declaration_held_during_ponder(eng):
    eng.send(f"position sfen {DECLARABLE}")
    eng.send("go ponder btime 0 wtime 0 byoyomi 1500")
    assert bestmoves(eng.drain(0.8)) == []
    eng.send("ponderhit")
    lines, _ = eng.expect_prefix("bestmove", 5.0)
    assert lines[-1] == "bestmove win"
    assert_quiet(eng)


def test_resign_when_mated(eng):
    _, answer = go_and_answer(eng, f"position sfen {MATED}")
    assert answer == ["bestmove", "resign"]


def test_invalid_position_then_go_resigns_with_error(eng):
    eng.send("position startpos moves 7g7f 7g7f")
    lines, _ = eng.expect_prefix("info string error", 5.0)
    eng.send(FAST_GO)
    lines, _ = eng.expect_prefix("bestmove", 5.0)
    assert lines[-1] == "bestmove resign"
    assert any(s.startswith("info string error") for s in lines)
    pos = "position startpos moves 7g7f"                       # a valid position afterwards works again
    _, answer = go_and_answer(eng, pos)
    assert legal_in(pos, answer[1])


MALFORMED = [
    "garbage", "", "   ", "\t", "gogo", "position", "position sfen", "position sfen xyz b - 1",
    "position sfen 9/9/9/9/9/9/9/9/9 q - 1", "position sfen lnsgkgsnl/9/9/9/9/9/9/9/9 b - 1 extra",
    "position startpos moves 7g7z", "position startpos moves P*5e", "position startpos moves 7g7f 7g7f",
    "position startpos moves 1a1b", "position sfen 10/9/9/9/9/9/9/9/9 b - 1", "position fen startpos",
    "setoption", "setoption name", "setoption name Threads value abc", "setoption name Threads value 0",
    "setoption name MultiPV value -3", "setoption name NoSuchOption value 1",
    "setoption name EnteringKingRule value Nonsense", "setoption name USI_Ponder value maybe",
    "setoption name GraphSearch", "stop", "ponderhit", "ponderhit btime x", "gameover", "gameover maybe",
    "usinewgame extra", "d", "isready now", "\x00\x01\x02", "日本語", "position startpos moves " + "7g7f " * 50,
    "goo btime -5", "setoption name USI_Hash value 99999999999999999999",
    "position sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 0",
    "position sfen 4k4/9/9/9/9/9/9/9/9 b 99P 1", "position sfen 4k4/9/9/9/9/9/9/9/P3K4 b - 1",
]


def test_malformed_lines_engine_stays_alive(eng):
    errors = 0
    for i in range(4):
        for line in MALFORMED:
            eng.send(f"{line} {'x' * i}" if i and line else line)
        eng.send("isready")
        lines, _ = eng.expect(lambda s: s == "readyok", 30.0)
        errors += sum(s.startswith("info string error") for s in lines)
        assert bestmoves(lines) == []
    assert errors >= 40
    pos = "position startpos moves 7g7f 3c3d"
    _, answer = go_and_answer(eng, pos)
    assert legal_in(pos, answer[1])


def test_specific_errors_are_reported(eng):
    for line in ("position sfen xyz b - 1", "position startpos moves 7g7f 7g7f",
                 "setoption name Threads value abc"):
        eng.send(line)
        lines, _ = eng.expect_prefix("info string error", 5.0)
    eng.send("setoption name USI_Hash value 64")
    eng.send("setoption name USI_Ponder value false")
    eng.send("isready")
    lines, _ = eng.expect(lambda s: s == "readyok", 30.0)
    assert not any("error" in s for s in lines)


def test_display_board(eng):
    eng.send("position startpos moves 7g7f")
    eng.send("d")
    lines, _ = eng.expect_prefix("sfen ", 5.0)
    assert lines[-1] == "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2"


def test_quit_mid_search_exits_promptly():
    e = UsiProcess()
    try:
        e.handshake()
        e.send("position startpos")
        e.send("go infinite")
        e.drain(1.0)
        t0 = e.send("quit")
        e.proc.wait(5)
        print(f"quit mid-search: exit after {1000 * (time.perf_counter() - t0):.0f} ms")
        assert time.perf_counter() - t0 < 2.0
    finally:
        e.close()
