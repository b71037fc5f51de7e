"""Seeded random shogi games played with cshogi (the oracle), biased towards the rules that matter.

Moves are drawn with extra weight on captures, promotions, drops and checks, and with a chance of
undoing one's previous move so that repetitions occur. Each game is a list of USI moves from the
start position; every prefix is a test position with its full history.
"""

import random

import cshogi

WEIGHT_CAPTURE, WEIGHT_PROMOTION, WEIGHT_DROP, WEIGHT_CHECK = 4.0, 3.0, 2.0, 6.0
UNDO_CHANCE = 0.25
CANDIDATES = 10


def _reverse(usi):
    """The move that takes a non-promoting board move back, e.g. '2h3h' -> '3h2h'."""
    if "*" in usi or usi.endswith("+"):
        return None
    return usi[2:4] + usi[0:2]


def _weight(board, move):
    usi = cshogi.move_to_usi(move)
    w = 1.0
    if "*" in usi:
        w += WEIGHT_DROP
    if usi.endswith("+"):
        w += WEIGHT_PROMOTION
    if cshogi.move_cap(move):
        w += WEIGHT_CAPTURE
    board.push(move)
    if board.is_check():
        w += WEIGHT_CHECK
    board.pop()
    return w


def random_game(rng, max_plies=160):
    """A list of USI moves: a random legal game from the start position, ended by mate or length."""
    board = cshogi.Board()
    moves = []
    for _ in range(max_plies):
        legal = list(board.legal_moves)
        if not legal:
            break
        chosen = None
        if len(moves) >= 2 and rng.random() < UNDO_CHANCE:
            back = _reverse(moves[-2])
            legal_usi = {cshogi.move_to_usi(m): m for m in legal}
            chosen = legal_usi.get(back) if back else None
        if chosen is None:
            pool = rng.sample(legal, min(CANDIDATES, len(legal)))
            weights = [_weight(board, m) for m in pool]
            chosen = rng.choices(pool, weights)[0]
        moves.append(cshogi.move_to_usi(chosen))
        board.push(chosen)
    return moves


def random_games(seed, count, max_plies=160):
    rng = random.Random(seed)
    return [random_game(rng, max_plies) for _ in range(count)]
