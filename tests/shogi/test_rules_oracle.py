"""Differential tests of the rules core against cshogi (and python-shogi) on random-game positions."""

import random

import cshogi
import numpy as np
import pytest
import shogi as python_shogi

from usi_engine.shogi import Board, position
from usi_engine.shogi.layout import HIST, KEY
from usi_engine.shogi.sfen import parse_sfen

from .random_games import random_games

CSHOGI_REPETITION = {
    cshogi.NOT_REPETITION: "none",
    cshogi.REPETITION_DRAW: "draw",
    cshogi.REPETITION_WIN: "win",
    cshogi.REPETITION_LOSE: "loss",
    cshogi.REPETITION_SUPERIOR: "none",
    cshogi.REPETITION_INFERIOR: "none",
}
MIN_POSITIONS = 10_000


@pytest.fixture(scope="module")
def games():
    return random_games(seed=20261121, count=90, max_plies=160)


def test_differential_against_cshogi(games):
    """Legal moves, check, mate, repetition, declaration, SFEN and keys on >= 10,000 positions."""
    positions = 0
    repetitions = checks = mates = 0
    for moves in games:
        ours, theirs = Board(), cshogi.Board()
        for ply in range(len(moves) + 1):
            ours_moves = set(ours.legal_moves())
            theirs_moves = {cshogi.move_to_usi(m) for m in theirs.legal_moves}
            assert ours_moves == theirs_moves, (ours.sfen(), theirs_moves ^ ours_moves)
            assert ours.is_check() == theirs.is_check(), ours.sfen()
            assert ours.is_checkmate() == (theirs.is_check() and not theirs_moves), ours.sfen()
            rep = ours.repetition(occurrences=2)
            assert rep == CSHOGI_REPETITION[theirs.is_draw()], (ours.sfen(), moves[:ply])
            assert ours.declaration("CSARule27") == theirs.is_nyugyoku(cshogi.LAW_27)
            assert ours.sfen() == theirs.sfen()
            assert ours.key() == position.compute_key(ours.pos)
            positions += 1
            repetitions += rep != "none"
            checks += ours.is_check()
            mates += ours.is_checkmate()
            if ply == len(moves):
                break
            before = ours.pos[:HIST].copy()
            ours.push_usi(moves[ply])
            ours.pop()
            assert np.array_equal(ours.pos[:HIST], before), "push/pop must restore the position"
            ours.push_usi(moves[ply])
            theirs.push_usi(moves[ply])
    assert positions >= MIN_POSITIONS
    assert repetitions > 50 and checks > 500 and mates >= 1, (repetitions, checks, mates)


def test_second_oracle_python_shogi(games):
    """python-shogi agrees on legal moves on a sample of the same positions."""
    rng = random.Random(7)
    compared = 0
    for moves in rng.sample(games, 20):
        ply = rng.randrange(len(moves))
        ours = Board()
        for m in moves[:ply]:
            ours.push_usi(m)
        theirs = python_shogi.Board(ours.sfen())
        assert set(ours.legal_moves()) == {m.usi() for m in theirs.legal_moves}, ours.sfen()
        compared += 1
    assert compared == 20


def _random_entering_position(rng):
    """An SFEN where the side to move has its king in the enemy camp and many pieces there."""
    side = rng.randrange(2)
    board = [[None] * 9 for _ in range(9)]  # board[file-1][rank-1]
    camp = range(0, 3) if side == 0 else range(6, 9)
    home = range(6, 9) if side == 0 else range(0, 3)
    board[rng.randrange(9)][rng.choice(camp)] = ("K", side)
    board[rng.randrange(9)][rng.choice(home)] = ("K", 1 - side)
    hands = [[], []]
    pieces = list("P" * 18 + "L" * 4 + "N" * 4 + "S" * 4 + "G" * 4 + "B" * 2 + "R" * 2)
    in_camp = rng.uniform(0.2, 0.6)
    for letter in pieces:
        owner = side if rng.random() < 0.75 else 1 - side
        promoted = letter not in "GK" and rng.random() < 0.3
        r = rng.random()
        if r < in_camp:
            ranks = camp if owner == side else range(9)
        elif r < in_camp + 0.2:
            hands[owner].append(letter)
            continue
        else:
            ranks = range(9)
        for _ in range(20):
            f, rank = rng.randrange(9), rng.choice(ranks)
            if board[f][rank] is None:
                break
        else:
            hands[owner].append(letter)
            continue
        last = 0 if owner == 0 else 8
        second = 1 if owner == 0 else 7
        if letter in "PL" and rank == last or letter == "N" and rank in (last, second):
            promoted = True
        if letter == "P" and not promoted and any(board[f][q] == ("P", owner) for q in range(9)):
            hands[owner].append(letter)
            continue
        board[f][rank] = (("+" if promoted else "") + letter, owner)
    rows = []
    for rank in range(9):
        row, empty = "", 0
        for f in range(8, -1, -1):
            cell = board[f][rank]
            if cell is None:
                empty += 1
                continue
            row += (str(empty) if empty else "") + (cell[0] if cell[1] == 0 else cell[0].lower())
            empty = 0
        rows.append(row + (str(empty) if empty else ""))
    hand = ""
    for owner in (0, 1):
        for letter in "RBGSNLP":
            count = hands[owner].count(letter)
            if count:
                hand += (str(count) if count > 1 else "") + (letter if owner == 0 else letter.lower())
    return f"{'/'.join(rows)} {'bw'[side]} {hand or '-'} 1"


def test_declaration_against_cshogi():
    """27- and 24-point declarations agree with cshogi on random entering-king positions."""
    rng = random.Random(11)
    compared = wins27 = draws24 = 0
    while compared < 3000:
        sfen = _random_entering_position(rng)
        try:
            ours = Board(sfen)
        except ValueError:
            continue
        theirs = cshogi.Board(sfen)
        opponent_king = ours.pos[position.KING_SQ + 1 - ours.turn]
        if opponent_king >= 0 and position.is_attacked(ours.pos, opponent_king, ours.turn):
            continue  # the side not to move is in check
        assert ours.declaration("CSARule27") == theirs.is_nyugyoku(cshogi.LAW_27), sfen
        result24 = {cshogi.NYUGYOKU_WIN: "win", cshogi.NYUGYOKU_DRAW: "draw", cshogi.NYUGYOKU_NONE: "none"}[
            theirs.nyugyoku_result(cshogi.LAW_24)
        ]
        assert ours.declaration_result("CSARule24") == result24, sfen
        compared += 1
        wins27 += ours.declaration("CSARule27")
        draws24 += result24 == "draw"
    assert wins27 > 100 and draws24 > 50, (wins27, draws24)


def test_incremental_key_matches_scratch_after_parse():
    pos = parse_sfen("l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1")
    assert pos[KEY] == position.compute_key(pos)
