"""The game-end adjudicator (usi_engine/shogi/adjudicate.py) against cshogi and python-shogi on crafted games."""

import cshogi
import pytest
import shogi as python_shogi

from usi_engine.shogi import Board
from usi_engine.shogi.adjudicate import GameRules, Verdict, after_move, before_move, declare

MATE = "4k4/4G4/4P4/9/9/9/9/9/4K4 w - 1"  # White is mated
STALEMATE = "8k/9/6NG1/9/9/9/9/9/4K4 w - 1"  # White's king on 1a has no move and is not in check
ROOK_CHECKS = "8k/9/9/9/8R/9/9/9/K8 w - 1"  # Black's rook checks along files 1 and 2
ENTERED = "+R+B+SGKG+S+N1/+P+P+P+P+P+P+P+P+P/9/9/9/9/9/9/4k4 b RB2S2N4L9P2g 1"  # Black may declare (27 and 24)
TRY = "9/4K4/9/9/9/9/9/9/4k4 b - 1"  # Black's king can step onto 5a


def play(sfen, moves):
    """Our board and both oracles after `moves`."""
    ours, cs, ps = Board(sfen), cshogi.Board(sfen), python_shogi.Board(sfen)
    for move in moves:
        ours.push_usi(move)
        cs.push_usi(move)
        ps.push_usi(move)
    return ours, cs, ps


def test_mate_loses_as_the_oracles_say():
    ours, cs, ps = play(MATE, [])
    assert cs.is_game_over() and ps.is_checkmate()
    assert before_move(ours, GameRules()) == Verdict("b", "mate")


def test_no_legal_move_without_check_also_loses():
    ours, cs, ps = play(STALEMATE, [])
    assert not cs.is_check() and not list(cs.legal_moves) and ps.is_stalemate()
    assert before_move(ours, GameRules()) == Verdict("b", "mate")


def test_fourth_occurrence_is_a_draw_exactly_when_python_shogi_says_so():
    cycle = ["2h3h", "8b7b", "3h2h", "7b8b"]
    ours, cs, ps = play(None, [])
    verdicts = []
    for _ in range(3):
        for move in cycle:
            ours.push_usi(move)
            ps.push_usi(move)
            verdicts.append(after_move(ours, GameRules()))
            assert (verdicts[-1] is not None) == ps.is_fourfold_repetition(), ps.sfen()
    assert verdicts[-1] == Verdict(None, "repetition") and verdicts[:-1] == [None] * 11
    # a search-style rule ends at the second occurrence, where cshogi's repetition test first fires
    ours = Board()
    for move in cycle:
        ours.push_usi(move)
    assert after_move(ours, GameRules(repetitions=2)) == Verdict(None, "repetition")


def test_perpetual_check_loses_for_the_checker_as_cshogi_classifies_it():
    cycle = ["1a2a", "1e2e", "2a1a", "2e1e"]
    ours, cs, _ = play(ROOK_CHECKS, cycle * 3)
    # the fourth occurrence, with White to move: cshogi calls it a win for the side to move
    assert cs.is_draw() == cshogi.REPETITION_WIN
    assert after_move(ours, GameRules()) == Verdict("w", "perpetual-check")
    ours.push_usi("1a2a")
    cs.push_usi("1a2a")
    assert cs.is_draw() == cshogi.REPETITION_LOSE  # Black to move checked every move of its cycle
    assert after_move(ours, GameRules()) == Verdict("w", "perpetual-check")


@pytest.mark.parametrize("rule, law", [("CSARule27", cshogi.LAW_27), ("CSARule24", cshogi.LAW_24)])
def test_declarations_under_the_point_rules_match_cshogi(rule, law):
    ours, cs, _ = play(ENTERED, [])
    assert cs.nyugyoku_result(law) == cshogi.NYUGYOKU_WIN
    assert declare(ours, GameRules(rule)) == Verdict("b", "declaration", rule)
    assert before_move(ours, GameRules(rule, auto_declare=True)) == Verdict("b", "declaration", rule)
    assert before_move(ours, GameRules(rule)) is None  # an engine must say `bestmove win` itself


def test_a_24_point_draw_and_a_false_declaration():
    # Black in the camp with 10 pieces but only 24-30 points: a 24-point draw, and no 27-point win
    draw = "+R+B+P+P+P+PK+P+P/+P+P7/9/9/9/9/9/9/4k4 b 2G2S2N 1"
    ours, cs, _ = play(draw, [])
    assert cs.nyugyoku_result(cshogi.LAW_24) == cshogi.NYUGYOKU_DRAW
    assert declare(ours, GameRules("CSARule24")) == Verdict(None, "declaration-draw", "CSARule24")
    assert before_move(ours, GameRules("CSARule24", auto_declare=True)) is None  # a draw is not taken for it
    assert not cs.is_nyugyoku(cshogi.LAW_27)
    assert declare(ours, GameRules("CSARule27")).reason == "false-declaration"
    assert declare(ours, GameRules("CSARule27")).winner == "w"
    assert declare(Board(ENTERED), GameRules("NoEnteringKing")).reason == "false-declaration"


def test_try_rule_ends_the_game_after_the_king_reaches_the_square():
    ours, _, ps = play(TRY, [])
    assert python_shogi.Move.from_usi("5b5a") in ps.legal_moves
    assert before_move(ours, GameRules("TryRule", auto_declare=True)) == Verdict("b", "declaration", "TryRule")
    ours.push_usi("5b5a")
    assert after_move(ours, GameRules("TryRule")) == Verdict("b", "try")
    assert after_move(ours, GameRules("CSARule27")) is None  # no try under the point rules


def test_max_moves_counts_from_the_sfen_move_number():
    ours = Board("lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 312")  # 311 plies played
    rules = GameRules(max_moves=320)
    for move in ["2h3h", "8b7b", "3h2h", "7b8b", "2g2f", "8c8d", "2f2e", "8d8e", "2e2d"]:
        assert before_move(ours, rules) is None
        ours.push_usi(move)
    assert before_move(ours, rules) == Verdict(None, "max-moves", "320 moves")
    assert before_move(ours, GameRules(max_moves=0)) is None
    assert before_move(Board(MATE), GameRules(max_moves=1)).reason == "mate"  # mate comes first


def test_rules_are_validated():
    with pytest.raises(ValueError, match="entering-king rule"):
        GameRules("Bogus")
    with pytest.raises(ValueError):
        GameRules(max_moves=-1)
