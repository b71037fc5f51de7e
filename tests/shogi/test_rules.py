"""Hand-made rule cases, perft counts, SFEN handling and bad input for the shogi rules core."""

import cshogi
import numpy as np
import pytest
import shogi as python_shogi

from usi_engine.shogi import STARTPOS, Board

KIWI = "l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1"
PINNED_CAPTURER = "R6sk/9/7G1/9/9/9/9/9/4K4 b P 1"


@pytest.mark.parametrize("depth,count", [(1, 30), (2, 900), (3, 25_470), (4, 719_731)])
def test_perft_start_position(depth, count):
    assert Board().perft(depth) == count


@pytest.mark.parametrize("depth,count", [(1, 207), (2, 28_684), (3, 4_809_015)])
def test_perft_tactical_position(depth, count):
    assert Board(KIWI).perft(depth) == count


def test_perft_bulk_counting_agrees():
    assert Board(KIWI).perft(3, bulk=True) == 4_809_015


# --- uchifuzume and drops ----------------------------------------------------------------------
def test_pawn_drop_mate_with_pinned_capturer_is_illegal():
    """python-shogi allows P*1b here; the only capturer (silver 2a) is pinned by the rook."""
    board = Board(PINNED_CAPTURER)
    assert "P*1b" not in board.legal_moves()
    assert not cshogi.Board(PINNED_CAPTURER).is_legal(cshogi.Board(PINNED_CAPTURER).move_from_usi("P*1b"))
    assert python_shogi.Move.from_usi("P*1b") in python_shogi.Board(PINNED_CAPTURER).legal_moves
    with pytest.raises(ValueError):
        board.push_usi("P*1b")
    assert board.sfen() == PINNED_CAPTURER


@pytest.mark.parametrize(
    "sfen,legal",
    [
        ("7nk/9/7G1/9/9/9/9/9/4K4 b P 1", False),  # gold guards 1b and 2b, knight blocks 2a: mate
        ("8k/9/9/9/9/9/9/9/4K4 b P 1", True),  # the king takes the undefended pawn
        ("7sk/9/7G1/9/9/9/9/9/4K4 b P 1", True),  # the unpinned silver takes the pawn
    ],
)
def test_pawn_drop_checks(sfen, legal):
    board = Board(sfen)
    assert ("P*1b" in board.legal_moves()) == legal
    assert set(board.legal_moves()) == {cshogi.move_to_usi(m) for m in cshogi.Board(sfen).legal_moves}


def test_nifu_and_dead_ranks():
    board = Board("4k4/9/9/9/9/9/9/4P4/4K4 b PLN 1")
    moves = board.legal_moves()
    assert not any(m.startswith("P*5") for m in moves)  # a black pawn stands on file 5
    assert "P*4a" not in moves and "L*4a" not in moves  # would never move again
    assert "N*4a" not in moves and "N*4b" not in moves
    assert "N*4c" in moves and "L*4b" in moves and "P*4b" in moves


def test_forced_and_optional_promotion():
    board = Board("4k4/P8/9/9/9/9/9/4K4/9 b - 1")  # pawn on 9b must promote on 9a
    assert "9b9a+" in board.legal_moves() and "9b9a" not in board.legal_moves()
    board = Board("4k4/9/9/P8/9/9/9/4K4/9 b - 1")  # 9d -> 9c may or may not promote
    assert {"9d9c", "9d9c+"} <= set(board.legal_moves())


def test_double_check_allows_only_king_moves():
    sfen = "4k4/9/4R4/9/9/9/1B7/9/4K4 b - 1"
    board = Board(sfen)
    board.push_usi("5c5b+")  # dragon checks from 5b... and the bishop line stays closed
    assert board.is_check()
    double = Board("4k4/9/9/9/4L4/9/9/B8/4K4 w - 1")
    assert set(double.legal_moves()) == {cshogi.move_to_usi(m) for m in cshogi.Board(double.sfen()).legal_moves}


def test_checkmate_detection():
    board = Board("4k4/4G4/4P4/9/9/9/9/9/4K4 w - 1")
    assert board.is_check() and board.is_checkmate() and board.legal_moves() == []


# --- repetition ------------------------------------------------------------------------------
def test_fourfold_repetition_is_a_draw():
    board = Board()
    cycle = ["2h3h", "8b7b", "3h2h", "7b8b"]
    for _ in range(3):
        for move in cycle:
            assert board.repetition() == "none"
            board.push_usi(move)
    assert board.repetition() == "draw"  # the start position for the fourth time
    assert board.repetition(occurrences=2) == "draw"


def test_perpetual_check_loses_for_the_checker():
    board = Board("8k/9/9/9/8R/9/9/9/K8 w - 1")  # the rook checks along files 1 and 2
    cycle = ["1a2a", "1e2e", "2a1a", "2e1e"]
    for _ in range(3):
        for move in cycle:
            board.push_usi(move)
    assert board.is_check() and board.repetition() == "win"  # White, checked every move, wins
    board.push_usi("1a2a")  # the position after the first move, for the fourth time
    assert board.turn == 0 and board.repetition() == "loss"  # Black checked every move: loses
    board.pop()
    board.pop()
    assert board.repetition() == "none"


# --- declaration -----------------------------------------------------------------------------
def test_declaration_27_point_rule():
    sfen = "+R+B+SGKG+S+N1/+P+P+P+P+P+P+P+P+P/9/9/9/9/9/9/4k4 b RB2S2N4L9P2g 1"
    board = Board(sfen)
    points, pieces = board.declaration_points()
    assert pieces >= 10 and points >= 28
    assert board.declaration("CSARule27") and board.declaration_result("CSARule24") == "win"
    assert not board.declaration("NoEnteringKing")
    assert cshogi.Board(sfen).is_nyugyoku()


def test_try_rule():
    board = Board("9/4K4/9/9/9/9/9/9/4k4 b - 1")
    assert board.declaration("TryRule") and board.try_rule_move() == "5b5a"
    guarded = Board("9/4K4/9/9/9/9/9/9/r3k4 b - 1")  # the rook on 9i does not cover 5a
    assert guarded.declaration("TryRule")
    covered = Board("r8/4K4/9/9/9/9/9/9/4k4 b - 1")  # the rook on 9a covers 5a
    assert not covered.declaration("TryRule")


def test_unknown_declaration_rule_is_rejected():
    with pytest.raises(ValueError, match="entering-king rule"):
        Board().declaration("Bogus")


# --- SFEN --------------------------------------------------------------------------------------
def test_sfen_round_trip_and_leniency():
    assert Board().sfen() == STARTPOS
    assert Board("sfen " + STARTPOS).sfen() == STARTPOS
    no_counter = "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b -"
    assert Board(no_counter).sfen() == STARTPOS
    many = "4k4/9/9/9/9/9/9/9/4K4 b 10P2p 1"
    assert Board(many).sfen() == "4k4/9/9/9/9/9/9/9/4K4 b 10P2p 1"


def test_positions_without_kings():
    tsume = Board("4k4/9/4P4/9/9/9/9/9/9 b G2r2b3g4s4n4l17p 1")  # no black king
    assert "G*5b" in tsume.legal_moves()
    tsume.push_usi("G*5b")
    assert tsume.is_checkmate()
    empty = Board("9/9/9/9/9/9/9/9/9 b P 1")
    assert len(empty.legal_moves()) == 72


@pytest.mark.parametrize(
    "sfen,message",
    [
        ("", "fields"),
        ("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1 b - 1", "9 ranks"),
        ("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL x - 1", "side to move"),
        ("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNLL b - 1", "more than 9"),
        ("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSN b - 1", "8 squares"),
        ("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNX b - 1", "piece letter"),
        ("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNS+GKGSNL b - 1", "cannot be promoted"),
        ("4k4/9/9/9/9/9/9/9/4K4 b 2 1", "count and no piece"),
        ("4k4/9/9/9/9/9/9/9/4K4 b K 1", "king cannot be in hand"),
        ("4k4/9/9/9/9/9/9/9/4K4 b - 0", "move number"),
        ("P3k4/9/9/9/9/9/9/9/4K4 b - 1", "never move"),
        ("4k4/9/9/9/P8/P8/9/9/4K4 b - 1", "two unpromoted"),
        ("4k4/9/9/9/9/9/9/9/3KK4 b - 1", "2 kings"),
        ("4k4/9/9/9/9/9/9/9/4K4 b 19P 1", "a set has 18"),
    ],
)
def test_malformed_sfen_is_rejected(sfen, message):
    with pytest.raises(ValueError, match=message):
        Board(sfen)


def test_illegal_and_malformed_moves_leave_the_board_unchanged():
    board = Board()
    before = board.pos.copy()
    for bad in ["7g7e", "7g7f+", "P*5e", "5i5g", "xyz", "", "7g7", "10a1b", "K*5e"]:
        with pytest.raises(ValueError):
            board.push_usi(bad)
        assert np.array_equal(board.pos, before)
    with pytest.raises(IndexError):
        board.pop()


def test_long_games_grow_the_history():
    board = Board()
    cycle = ["2h3h", "8b7b", "3h2h", "7b8b"]
    for _ in range(700):  # 2,800 plies: beyond the default capacity
        for move in cycle:
            board.push_usi(move)
    assert board.ply == 2800 and board.sfen().split()[:3] == STARTPOS.split()[:3]
    assert board.repetition() == "draw"


def test_search_moves_are_the_legal_moves_without_dominated_plain_twins():
    """gen_search_moves = gen_legal in its order, less each plain move whose promotion is also legal and never
    worse: pawn, bishop, rook, and a lance to its second rank (piece types read by python-shogi, ranks from
    the USI text). A knight's plain move and a lance's to its third rank stay."""
    from usi_engine.shogi.bench import random_game_sfens
    from usi_engine.shogi.movegen import gen_search_moves
    from usi_engine.shogi.sfen import move_to_usi

    out = np.zeros(600, dtype=np.int32)
    dominated = {python_shogi.PAWN, python_shogi.BISHOP, python_shogi.ROOK}
    removed, kept_plain = set(), set()
    for s in random_game_sfens(400, seed=31, min_ply=30, max_ply=200):
        board, oracle = Board(s), python_shogi.Board(s)
        legal = [move_to_usi(int(c)) for c in board.legal_move_codes()]
        present = set(legal)
        expected = []
        for usi in legal:
            if not usi.endswith("+") and usi + "+" in present:
                ptype = oracle.piece_at(python_shogi.Move.from_usi(usi).from_square).piece_type
                second_rank = usi[3] == ("b" if board.turn == 0 else "h")
                if ptype in dominated or (ptype == python_shogi.LANCE and second_rank):
                    removed.add(ptype)
                    continue
                kept_plain.add(ptype)
            expected.append(usi)
        n = gen_search_moves(board.pos, out)
        assert [move_to_usi(int(c)) for c in out[:n]] == expected, s
    assert dominated | {python_shogi.LANCE} <= removed and python_shogi.KNIGHT in kept_plain
