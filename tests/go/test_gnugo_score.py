"""final_score agreement with GNU Go on finished games.

GNU Go (Debian's gnugo, installed by tools/test.sh) plays both sides of short 9x9 games at level 1
until two passes; every move is replayed on GoBoard (which must accept it), then our final_score
after dead-stone estimation must equal GNU Go's own final_score, and our dead stones its
final_status_list dead.
"""

import os
import shutil

import pytest

from learn.match.engines import GtpEngine
from usi_engine.go import GoBoard

pytestmark = [pytest.mark.process, pytest.mark.gnugo]

MAX_MOVES = 250
GAMES = [(9, 7.0, seed) for seed in (1, 2, 3, 4, 5, 6)]


def gnugo_binary():
    path = shutil.which("gnugo") or ("/usr/games/gnugo" if os.path.exists("/usr/games/gnugo") else None)
    assert path, "gnugo not found: install it with `apt-get install gnugo` (tools/test.sh does)"
    return path


def play_gnugo_game(size, komi, seed):
    """(our GoBoard after the game, GNU Go's final_score, GNU Go's dead stones as a set)."""
    eng = GtpEngine(
        [
            gnugo_binary(),
            "--mode",
            "gtp",
            "--level",
            "1",
            "--chinese-rules",
            "--positional-superko",
            "--seed",
            str(seed),
        ],
        "gnugo",
    )
    eng.start()
    try:
        eng.command_ok(f"boardsize {size}")
        eng.command_ok("clear_board")
        eng.command_ok(f"komi {komi}")
        board = GoBoard(size, komi=komi)
        colour = "black"
        for _ in range(MAX_MOVES):
            move = eng.command_ok(f"genmove {colour}").lower()
            assert move != "resign"
            board.play(colour, move)  # raises if we disagree about legality
            if board.is_over():
                break
            colour = "white" if colour == "black" else "black"
        assert board.is_over(), "game did not end within the move limit"
        dead = set(eng.command_ok("final_status_list dead").upper().split())
        return board, eng.command_ok("final_score"), dead
    finally:
        eng.stop_process()


@pytest.mark.parametrize("size,komi,seed", GAMES)
def test_final_score_matches_gnugo(size, komi, seed):
    board, theirs, their_dead = play_gnugo_game(size, komi, seed)
    ours = board.final_score()
    assert ours == theirs.replace(".0", ""), f"\n{board.to_string()}\nours {ours} gnugo {theirs}"
    assert {v for block in board.final_status("dead") for v in block} == their_dead
