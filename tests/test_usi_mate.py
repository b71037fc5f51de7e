"""`go mate` over the real engine process: tsume answers verified by cshogi, no-mate, timeout, stop;
and the root mate check of normal play."""

import cshogi
import pytest

from tests.usi_driver import UsiProcess

# Positions from seeded random games where cshogi's mate_move(3) finds a mate (attacker to move).
TSUME = [
    "4k4/9/4P4/9/9/9/9/9/9 b G2r2b3g4s4n4l17p 1",                     # reference transcript: G*5b
    "1ng1bg2b/LP1p5/2p+P1k1pl/1pP1p3p/3L1sPP1/1n2PG2P/1l2rP+p1n/pS+s3R2/4G1KN1 w Psp 118",
    "1ns1kg2l/l1rg3s1/ppppp2pp/5pP2/4P4/P8/1PBP1P+nPP/3S1bSRL/LN1G1K1N1 w Pgp 32",
    "2+P2l3/1p1kg+Bn1p/1+L1ppp+R2/p1g3LPP/4b4/1PS1PP3/N2K2G1+l/P3N1Pp1/4Sg3 b RSN3Ps 195",
    "k7b/l2+S2+S+Pl/r1n+Pg1n2/1P3ppgp/1sP2nP2/pR2P2KP/2NP1b2L/L1S2P1P1/2G3g2 w 2P2p 134",
    "1n2kpln1/lr+P3gb1/5P1p1/p1P2BpP1/2pP2g2/Ps1pK2s+l/NP2P1NS1/LG5R1/1S2+p3P b GPp 143",
    "2r3k2/l1sg4s/p4p+B1l/2+Bg1P1pp/1pppp1P2/2P1S4/P1NP1KpPP/2S1R3L/L1G1NNGN1 b 2p 93",
    "l+R2pg2k/P7r/Lpps1Knpl/3S1p1Pg/gP1P1P2p/6P2/B1+bNG1N2/3pP1p1L/1NP2S+s2 w Pp 124",
]
NO_MATE = [
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1",   # no check at all
    "4k4/9/9/9/9/9/9/9/9 b P2r2b4g4s4n4l17p 1",                         # one pawn check, then nothing
]
HARD = "7nl/7k1/9/7pp/9/9/9/9/9 b GS2r2b3g3s3n3l16p 1"                 # no mate found by cshogi either


@pytest.fixture(scope="module")
def eng():
    e = UsiProcess()
    e.handshake()
    yield e
    e.close()


def mate_answer(eng, sfen, go="go mate 10000", timeout=20.0):
    eng.send(f"position sfen {sfen}")
    eng.send(go)
    lines, _ = eng.expect_prefix("checkmate", timeout)
    assert not any(s.startswith("bestmove") for s in lines)
    return lines[-1].split()[1:]


def cshogi_mate_length(sfen):
    board = cshogi.Board(sfen)
    dfpn = cshogi.DfPn()
    dfpn.set_max_search_node(500000)
    assert dfpn.search(board)
    return len(dfpn.get_pv(board))


@pytest.mark.parametrize("sfen", TSUME)
def test_tsume_answers_are_verified_mates(eng, sfen):
    moves = mate_answer(eng, sfen)
    board = cshogi.Board(sfen)
    for i, m in enumerate(moves):
        assert m in [cshogi.move_to_usi(x) for x in board.legal_moves], (i, m)
        board.push_usi(m)
        if i % 2 == 0:
            assert board.is_check(), f"attacker move {m} is not a check"
    assert board.is_game_over() and board.is_check(), "the line does not end in checkmate"
    assert len(moves) % 2 == 1
    assert len(moves) <= cshogi_mate_length(sfen)
    assert eng.drain(0.2) == []                      # exactly one answer


def test_reference_transcript_answer(eng):
    assert mate_answer(eng, TSUME[0]) == ["G*5b"]


@pytest.mark.parametrize("sfen", NO_MATE)
def test_nomate(eng, sfen):
    assert mate_answer(eng, sfen) == ["nomate"]


def test_timeout_when_unproven(eng):
    assert mate_answer(eng, HARD, "go mate 300", 5.0) in (["timeout"], ["nomate"])


def test_stop_ends_go_mate_infinite(eng):
    eng.send(f"position sfen {HARD}")
    eng.send("go mate infinite")
    assert eng.drain(0.5) == []
    t0 = eng.send("stop")
    lines, t1 = eng.expect_prefix("checkmate", 5.0)
    assert lines[-1] in ("checkmate timeout", "checkmate nomate")
    assert t1 - t0 < 0.2


def test_normal_go_plays_a_short_mate(eng):
    sfen = TSUME[2]
    eng.send(f"position sfen {sfen}")
    eng.send("go btime 0 wtime 0 byoyomi 2000")
    lines, _ = eng.expect_prefix("bestmove", 10.0)
    board = cshogi.Board(sfen)
    move = lines[-1].split()[1]
    board.push_usi(move)
    assert board.is_check()
    assert any(" score mate " in s for s in lines)
