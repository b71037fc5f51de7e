"""The mate probes of the expansion (mate_in_one, mated_in_two) against brute-force oracles on cshogi's move
generator."""

import cshogi
import numpy as np
import pytest

from usi_engine.search.layout import FLAG_TERMINAL
from usi_engine.search.values import MATE
from usi_engine.shogi import Board
from usi_engine.shogi.bench import random_game_sfens
from usi_engine.shogi.layout import HIST, HIST_STRIDE, H_CHECK, H_KEY
from usi_engine.shogi_search.game import ShogiAdapter, expand, make_params
from usi_engine.shogi_search.mate_probe import mate_in_one, mated_in_two, probe_scratch

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
    result, work = mated_in_two(board.pos, *probe_scratch())
    assert work >= 1
    assert np.array_equal(board.pos[live], before), "the probe must leave pos unchanged"
    return result


def children(sfens, in_check):
    """The positions one legal move after each of `sfens` whose side to move is (or is not) in check."""
    out = []
    for sfen in sfens:
        board = cshogi.Board(sfen)
        for m in list(board.legal_moves):
            board.push(m)
            if board.is_check() == in_check:
                out.append(board.sfen())
            board.pop()
    return out


def positions_in_check(count, seed):
    """Positions with the side to move in check: random-game positions after each of their checking moves."""
    return children(random_game_sfens(count, seed=seed, min_ply=30, max_ply=140), True)


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


def test_mate_in_one_agrees_with_brute_force():
    sfens = children(random_game_sfens(12, seed=9, min_ply=30, max_ply=140), False)
    assert len(sfens) > 500
    sfens += children(MATED_IN_TWO, False)  # after any evasion of these the checker mates in one
    found = 0
    for sfen in sfens:
        board = Board(sfen)
        result, work = mate_in_one(board.pos, *probe_scratch()[1:])
        assert work >= 1
        assert result == oracle_mate_in_one(cshogi.Board(sfen)), sfen
        found += result
    assert found > 0, "the sample must contain mates in one"


def test_threat_probe_marks_exactly_the_moves_that_allow_mate_in_one():
    """With the threat probe a child whose side to move (not in check) mates in one is a terminal valued
    MATE - 1; every other child keeps the value the expansion without the probe gives it; cshogi confirms."""
    adapter = ShogiAdapter()
    checked = 0
    for sfen in random_game_sfens(30, seed=11, min_ply=40, max_ply=140):
        results = []
        for threat in (False, True):
            board = Board(sfen)
            params = make_params(threat_probe=threat)
            moves = np.empty(600, dtype=np.int32)
            values = np.empty(600, dtype=np.float64)
            flags = np.zeros(600, dtype=np.int8)
            n, _ = expand(board.pos, adapter.weights, params, np.zeros(1, dtype=np.uint64), moves, values, flags)
            results.append({int(moves[i]): (values[i], flags[i]) for i in range(n)})
        plain, probed = results
        assert plain.keys() == probed.keys()
        for move, (value, flag) in probed.items():
            oracle = cshogi.Board(sfen)
            oracle.push_usi(adapter.move_to_str(move))
            allows = not oracle.is_check() and oracle_mate_in_one(oracle)
            if allows and not plain[move][1] & FLAG_TERMINAL:
                assert (value, flag) == (MATE - 1.0, FLAG_TERMINAL), sfen
                checked += 1
            else:
                assert (value, flag) == plain[move], sfen
    assert checked > 0, "the sample must contain moves that allow a mate in one"
