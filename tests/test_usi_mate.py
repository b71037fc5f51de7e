"""The df-pn mate solver: in-process on its tsume set (every line checked as a forced mate with cshogi as the
independent oracle: each defence refuted, short lines also shortest by exhaustive search), its check test
against make-move, nomate / timeout / stop; then `go mate` and the root mate of normal play over the real
engine process."""

import random
import threading
import time

import cshogi
import numpy as np
import pytest

from tests.usi_driver import running_engine
from usi_engine.shogi import Board
from usi_engine.shogi_search.mate import MATE_PROBLEMS, MateSolver, gives_check

pytestmark = pytest.mark.process

NO_MATE = [
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1",  # no check at all
    "4k4/9/9/9/9/9/9/9/9 b P2r2b4g4s4n4l17p 1",  # one pawn check, then nothing
    "7nl/7k1/9/7pp/9/9/9/9/9 b GS2r2b3g3s3n3l16p 1",  # checks run out (cshogi agrees)
]
UNDECIDED = "l3k1s2/r2s1gp1l/n1p1pp1pn/p1P1g4/Pprp1P1Np/3+bP1PPS/1G1P1S2P/B1G4KL/3L5 w np 80"  # > 10 s
EXHAUSTIVE_PLIES = 5  # defences with at most this many plies left are refuted by exhaustive search
SHORTEST_CHECKED = 7  # lines up to this long are checked to be the shortest
SOLVE_SECONDS = 60.0


def mates_within(board, plies):
    """Exhaustive AND/OR search with cshogi: the side to move mates within `plies` (odd) plies."""
    for move in list(board.legal_moves):
        board.push(move)
        mated = False
        if board.is_check():
            replies = list(board.legal_moves)
            mated = not replies or (plies >= 3 and all(_mated_after(board, r, plies - 2) for r in replies))
        board.pop()
        if mated:
            return True
    return False


def _mated_after(board, reply, plies):
    board.push(reply)
    try:
        return mates_within(board, plies)
    finally:
        board.pop()


def still_mate(board, plies):
    """A mate for the side to move within `plies` (exhaustive when short, else cshogi's own df-pn)."""
    if plies <= EXHAUSTIVE_PLIES:
        return mates_within(board, plies)
    dfpn = cshogi.DfPn()
    dfpn.set_max_search_node(5_000_000)
    return dfpn.search(board)


def assert_forced_mate(sfen, line):
    """Every attacker move of `line` is legal and checks, every other defence still loses, and the
    line ends in checkmate."""
    board = cshogi.Board(sfen)
    for i, move in enumerate(line):
        assert move in [cshogi.move_to_usi(m) for m in board.legal_moves], (i, move)
        board.push_usi(move)
        if i % 2 == 0:
            assert board.is_check(), f"attacker move {move} does not check"
            left = len(line) - i - 2
            for reply in list(board.legal_moves) if left > 0 else []:
                board.push(reply)
                assert still_mate(board, left), f"defence {cshogi.move_to_usi(reply)} after {line[: i + 1]} escapes"
                board.pop()
    assert board.is_check() and not list(board.legal_moves), "the line does not end in checkmate"
    assert len(line) % 2 == 1


@pytest.fixture(scope="module")
def solver():
    return MateSolver()


@pytest.mark.parametrize("sfen,plies", MATE_PROBLEMS)
def test_problem_set_lines_are_forced_mates(solver, sfen, plies):
    result = solver.solve(Board(sfen), SOLVE_SECONDS)
    print(f"{plies:2d} plies: {result.nodes} nodes in {result.seconds:.3f} s")
    assert result.status == "mate"
    assert_forced_mate(sfen, result.line)
    if plies <= SHORTEST_CHECKED:
        assert result.plies == plies
        assert plies == 1 or not mates_within(cshogi.Board(sfen), plies - 2), "a shorter mate exists"
    else:
        assert result.plies <= plies


def test_attacker_in_check_mates_with_a_checking_evasion(solver):
    # Black's king 5a is checked by the gold 5b; taking it uncovers the rook 9a on the king 1a: mate.
    sfen = "R3K3k/4g4/7G1/9/9/9/9/9/9 b - 1"
    assert cshogi.Board(sfen).is_check()
    result = solver.solve(Board(sfen), SOLVE_SECONDS)
    assert result.status == "mate" and result.line == ["5a5b"]
    assert_forced_mate(sfen, result.line)


def test_gives_check_agrees_with_make_move():
    rng = random.Random(5)
    checks = 0
    for _ in range(20):
        board = Board()
        for _ in range(120):
            codes = board.legal_move_codes()
            if len(codes) == 0:
                break
            for m in codes:
                board.push_code(int(m))
                real = board.is_check()
                board.pop()
                assert gives_check(board.pos, np.int32(m)) == real, (board.sfen(), int(m))
                checks += real
            board.push_code(int(rng.choice(codes)))
    assert checks > 100


@pytest.mark.parametrize("sfen", NO_MATE)
def test_nomate_is_proven(solver, sfen):
    assert solver.solve(Board(sfen), SOLVE_SECONDS).status == "nomate"
    dfpn = cshogi.DfPn()
    dfpn.set_max_search_node(2_000_000)
    assert not dfpn.search(cshogi.Board(sfen))


def test_time_limit_gives_timeout(solver):
    t0 = time.perf_counter()
    assert solver.solve(Board(UNDECIDED), 0.3).status == "timeout"
    assert time.perf_counter() - t0 < 1.0


def test_stop_event_ends_the_solve(solver):
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    t0 = time.perf_counter()
    result = solver.solve(Board(UNDECIDED), None, stop)
    assert result.status == "timeout" and time.perf_counter() - t0 < 1.0


# --- over the engine process ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def eng():
    with running_engine() as e:
        yield e


def mate_answer(eng, sfen, go="go mate 20000", timeout=30.0):
    eng.send(f"position sfen {sfen}")
    eng.send(go)
    lines, _ = eng.expect_prefix("checkmate", timeout)
    assert not any(s.startswith("bestmove") for s in lines)
    assert eng.drain(0.2) == []  # exactly one answer
    return lines[-1].split()[1:]


@pytest.mark.parametrize("sfen,plies", [p for p in MATE_PROBLEMS if p[1] <= 9])
def test_go_mate_answers(eng, sfen, plies):
    line = mate_answer(eng, sfen)
    assert len(line) == plies if plies <= SHORTEST_CHECKED else len(line) <= plies
    assert_forced_mate(sfen, line)


def test_reference_transcript_answer(eng):
    assert mate_answer(eng, MATE_PROBLEMS[0][0]) == ["G*5b"]


def test_go_mate_nomate_and_timeout(eng):
    assert mate_answer(eng, NO_MATE[2]) == ["nomate"]
    assert mate_answer(eng, UNDECIDED, "go mate 300", 5.0) == ["timeout"]


def test_stop_ends_go_mate_infinite(eng):
    eng.send(f"position sfen {UNDECIDED}")
    eng.send("go mate infinite")
    assert eng.drain(0.5) == []
    t0 = eng.send("stop")
    lines, t1 = eng.expect_prefix("checkmate", 5.0)
    print(f"stop -> checkmate {1000 * (t1 - t0):.1f} ms")
    assert lines[-1] == "checkmate timeout"
    assert t1 - t0 < 0.2


def test_normal_go_plays_a_short_mate(eng):
    sfen, plies = MATE_PROBLEMS[3]
    eng.send(f"position sfen {sfen}")
    eng.send("go btime 0 wtime 0 byoyomi 2000")
    lines, _ = eng.expect_prefix("bestmove", 10.0)
    board = cshogi.Board(sfen)
    board.push_usi(lines[-1].split()[1])
    assert board.is_check()
    assert any(f" score mate {plies} " in s for s in lines)


def test_mate_guard_option_keeps_a_sharp_move_safe(eng):
    """MateGuardPly on: in a position where many moves allow a mate in one, the move played under a byoyomi
    allows no mate by checks within three plies (cshogi); the option goes back off for the other tests."""
    sfen = "ln1R3+B1/3ng1+L2/2skg4/1p1p1pB2/P1p1p4/2PPP4/L4P1PP/4+r4/1P3s1KL b GN5Pg2sn 141"
    eng.send("setoption name MateGuardPly value 11")
    eng.send("isready")
    eng.expect_prefix("readyok", 60.0)
    try:
        eng.send(f"position sfen {sfen}")
        eng.send("go btime 0 wtime 0 byoyomi 2000")
        lines, _ = eng.expect_prefix("bestmove", 10.0)
    finally:
        eng.send("setoption name MateGuardPly value 0")
    board = cshogi.Board(sfen)
    board.push_usi(lines[-1].split()[1])
    assert board.is_check() or not (board.mate_move_in_1ply() or board.mate_move(3))
