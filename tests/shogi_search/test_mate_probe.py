"""The mate probe of the expansion (mated_in_two) against a brute-force oracle on cshogi's move generator."""

import cshogi
import numpy as np
import pytest

from usi_engine.shogi import Board
from usi_engine.shogi.bench import random_game_sfens
from usi_engine.shogi.layout import HIST, HIST_STRIDE, H_CHECK, H_KEY
from usi_engine.shogi_search.mate_probe import mated_in_two, probe_scratch

# White to move, in check, mated in two plies whatever it plays (found by the brute-force oracle below)
MATED_IN_TWO = ["8k/9/6+B2/8N/9/9/9/9/K8 w P 2", "6+R1k/9/9/8+B/9/9/9/9/K8 w N 2", "5B1Rk/9/5+B3/9/9/9/9/9/K8 w - 2"]


def oracle_mate_in_one(board):
    for m in list(board.legal_moves):
        board.push(m)
        mated = board.is_check() and not any(True for _ in board.legal_moves)
        board.pop()
        if mated:
            return True
    return False


def oracle_mated_in_two(board):
    evasions = list(board.legal_moves)
    if not evasions:
        return False
    for m in evasions:
        board.push(m)
        found = oracle_mate_in_one(board)
        board.pop()
        if not found:
            return False
    return True


def probe(sfen):
    board = Board(sfen)
    # the current history entry's move/capture slots and everything after it are scratch
    live = np.r_[0 : HIST + HIST_STRIDE * board.ply, HIST + HIST_STRIDE * board.ply + np.array([H_KEY, H_CHECK])]
    before = board.pos[live].copy()
    result = mated_in_two(board.pos, *probe_scratch())
    assert np.array_equal(board.pos[live], before), "the probe must leave pos unchanged"
    return result


def positions_in_check(count, seed):
    """Positions with the side to move in check: random-game positions after each of their checking moves."""
    out = []
    for sfen in random_game_sfens(count, seed=seed, min_ply=30, max_ply=140):
        board = cshogi.Board(sfen)
        for m in list(board.legal_moves):
            board.push(m)
            if board.is_check():
                out.append(board.sfen())
            board.pop()
    return out


def test_probe_agrees_with_brute_force_on_random_checks():
    sfens = positions_in_check(80, seed=5)
    assert len(sfens) > 80
    found = 0
    for sfen in sfens:
        expected = oracle_mated_in_two(cshogi.Board(sfen))
        assert probe(sfen) == expected, sfen
        found += expected
    assert found > 0, "the sample must contain mates for the probe to find"


@pytest.mark.parametrize("sfen", MATED_IN_TWO)
def test_probe_finds_constructed_mates(sfen):
    assert oracle_mated_in_two(cshogi.Board(sfen))
    assert probe(sfen)


def test_no_legal_move_is_not_claimed():
    # mated already: the terminal rule's business, not the probe's
    sfen = "8k/7G1/7G1/9/9/9/9/9/K8 w - 1"
    board = cshogi.Board(sfen)
    assert board.is_check() and not list(board.legal_moves)
    assert not probe(sfen)
