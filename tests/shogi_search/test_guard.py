"""The root mate guard (guard.RootMateGuard) against cshogi's mate search, and in the engine's search."""

import cshogi
import pytest

from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions
from usi_engine.search.values import MATE
from usi_engine.shogi import Board
from usi_engine.shogi.bench import random_game_sfens
from usi_engine.shogi.position import game_length
from usi_engine.shogi_search.game import ShogiAdapter, make_params
from usi_engine.shogi_search.guard import RootMateGuard
from usi_engine.shogi_search.mate import MateSolver
from usi_engine.shogi_search.params import P_MAX_MOVES

MAX_PLY = 7


def cshogi_mates_within(board: cshogi.Board, plies: int) -> bool:
    """Does the side to move of `board` (not in check) mate by checks within `plies` plies (cshogi)?"""
    return bool(board.mate_move_in_1ply()) if plies == 1 else bool(board.mate_move(plies))


@pytest.fixture(scope="module")
def solver():
    return MateSolver()


def quiet_root_moves(count, seed):
    """(sfen, usi, code) of root moves that give no check, over positions of random games."""
    out = []
    for sfen in random_game_sfens(count, seed=seed, min_ply=50, max_ply=140):
        board, cb = Board(sfen), cshogi.Board(sfen)
        for usi, code in zip(board.legal_moves(), board.legal_move_codes()):
            cb.push_usi(usi)
            if not cb.is_check():
                out.append((sfen, usi, int(code)))
            cb.pop()
    return out


def test_claims_are_mates_and_short_mates_are_claimed(solver):
    """Every mate the guard claims is a mate by checks cshogi finds within the claimed plies (never a false
    claim); every mate in one or three cshogi finds, the guard finds too."""
    guard = RootMateGuard(solver, make_params(), MAX_PLY, 3000)
    claims = short = 0
    for sfen, usi, code in quiet_root_moves(16, seed=5):
        value, work = guard(Board(sfen).pos, code, None)
        assert work > 0
        cb = cshogi.Board(sfen)
        cb.push_usi(usi)
        if value is not None:
            plies = int(MATE - value)
            assert 1 <= plies <= MAX_PLY and plies % 2 == 1
            assert cshogi_mates_within(cb, plies), (sfen, usi, plies)
            claims += 1
        if cshogi_mates_within(cb, 3):
            assert value is not None, (sfen, usi)
            short += 1
    assert claims >= 20 and short >= 10  # the sample holds real work for both checks


def test_a_mate_after_the_game_length_draw_is_no_loss(solver):
    sfen, usi, code = next((s, u, c) for s, u, c in quiet_root_moves(6, seed=9) if cshogi_mates_within(_after(s, u), 3))
    pos = Board(sfen).pos
    params = make_params()
    assert RootMateGuard(solver, params, MAX_PLY, 3000)(pos, code, None)[0] is not None
    after = Board(sfen)
    after.push_usi(usi)
    params[P_MAX_MOVES] = game_length(after.pos)  # the draw comes on the opponent's first move
    assert RootMateGuard(solver, params, MAX_PLY, 3000)(pos, code, None)[0] is None


def _after(sfen, usi):
    cb = cshogi.Board(sfen)
    cb.push_usi(usi)
    return cb


# Black to move; several drops and moves leave White a mate in one, seven moves keep the king safe from any
# mate by checks within nine plies (cshogi). Reached in a game against an alpha-beta engine.
SHARP = "ln1R3+B1/3ng1+L2/2skg4/1p1p1pB2/P1p1p4/2PPP4/L4P1PP/4+r4/1P3s1KL b GN5Pg2sn 141"


def test_the_guarded_search_avoids_the_moves_it_refutes(solver):
    """In the search: every root move the guard refuted has a proven-lost child, and the move played is one
    cshogi finds no mate after within seven plies."""
    adapter = ShogiAdapter(params=make_params(qsearch_see=True))
    adapter.root_verifier = RootMateGuard(solver, adapter.params, 11, 5000)
    s = Searcher(adapter, SearchOptions(threads=1, hash_mb=64, seed=1))
    r = s.search(Board(SHARP).pos, Limits(samples=300))
    refuted = [m for m, v in s.verified.items() if v is not None]
    assert len(refuted) >= 3 and r.best_move not in refuted
    after = _after(SHARP, r.best_move_str)
    assert after.is_check() or not cshogi_mates_within(after, 7)
