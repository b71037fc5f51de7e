"""The in-process arena: referee rules, the 1-ply material and alpha-beta players, short real MCSS games."""

import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from learn.match.arena import Arena, ArenaConfig, ArenaRules, make_player, parse_spec, play_in_process, random_opening
from learn.match.players import AlphaBetaPlayer, MaterialPlayer, Player
from usi_engine.shogi import Board
from usi_engine.shogi.sfen import usi_to_move
from usi_engine.shogi_eval.evalfile import load_weights
from usi_engine.shogi_eval.linear import evaluate
from usi_engine.shogi_search.game import make_params

pytestmark = pytest.mark.process

REPO = Path(__file__).resolve().parents[3]
MIDGAME_SFEN = "ln1g3nl/1r3kg2/p2pppsp1/2ps2p1p/1p7/2P1P1P2/PPSP1P1PP/2G2S1R1/LN2KG1NL b Bb 1"
MATE_SFEN = "4k4/9/4P4/9/9/9/9/9/4K4 b G 1"  # G*5b mates
KINGS_SFEN = "4k4/9/9/9/9/9/9/9/4K4 b - 1"  # bare kings: shuffling repeats
PERPETUAL_SFEN = "4k4/9/9/9/4R4/9/9/9/K8 w - 1"  # White in check from the rook on 5e
HANGING_ROOK_SFEN = "4k4/9/9/9/4r4/4P4/9/9/4K4 b - 1"  # 5f5e takes an undefended rook
POISONED_PAWN_SFEN = "4k4/9/9/3gp4/9/9/9/4R4/4K4 b - 1"  # 5h5d wins a pawn, the gold on 6d retakes
GAME_REASONS = {"mate", "resign", "max-moves", "repetition", "perpetual-check", "declaration"}


class Scripted(Player):
    """Plays a fixed cycle of USI moves (a test opponent, not a stand-in for an engine component)."""

    def __init__(self, name, moves):
        super().__init__(name)
        self.moves, self.i = moves, 0

    def new_game(self, seed):
        self.i = 0

    def choose(self, board):
        move = self.moves[self.i % len(self.moves)]
        self.i += 1
        return usi_to_move(move)


def scripted_game(sfen, black, white, rules=ArenaRules()):
    board = Board(sfen)
    return play_in_process({"b": Scripted("b", black), "w": Scripted("w", white)}, board, rules, seed=1), board


@pytest.fixture(scope="module")
def weights():
    return load_weights()


def test_mate_ends_the_game():
    (winner, reason, moves), board = scripted_game(MATE_SFEN, ["G*5b"], ["5a4a"])
    assert (winner, reason, moves) == ("b", "mate", ["G*5b"])
    assert board.is_checkmate()


def test_fourth_occurrence_is_a_draw():
    (winner, reason, moves), _ = scripted_game(KINGS_SFEN, ["5i5h", "5h5i"], ["5a5b", "5b5a"])
    assert (winner, reason, len(moves)) == (None, "repetition", 12)


def test_perpetual_check_loses_for_the_checker():
    (winner, reason, moves), _ = scripted_game(PERPETUAL_SFEN, ["5e4e", "4e5e"], ["5a4a", "4a5a"])
    assert (winner, reason, len(moves)) == ("w", "perpetual-check", 12)


def test_max_moves_draw():
    (winner, reason, moves), board = scripted_game(
        KINGS_SFEN, ["5i5h", "5h5i"], ["5a5b", "5b5a"], ArenaRules(max_moves=6)
    )
    assert (winner, reason, len(moves), board.ply) == (None, "max-moves", 6, 6)


def test_illegal_move_loses():
    (winner, reason, _), _ = scripted_game(KINGS_SFEN, ["5i5g"], ["5a5b"])
    assert (winner, reason) == ("w", "illegal")


def test_material_player_takes_a_hanging_rook():
    player = MaterialPlayer()
    for seed in range(3):
        player.new_game(seed)
        assert player.choose(Board(HANGING_ROOK_SFEN)) == usi_to_move("5f5e")


def test_material_player_breaks_ties_by_seed():
    player = MaterialPlayer()
    picks = []
    for seed in (1, 1, 2, 3, 4):
        player.new_game(seed)
        picks.append(player.choose(Board()))
    assert picks[0] == picks[1]  # same seed, same move
    assert len(set(picks)) > 1  # all 30 opening moves tie on material: seeds differ


def test_alpha_beta_sees_the_recapture_the_material_player_misses(weights):
    board = Board(POISONED_PAWN_SFEN)
    greedy = MaterialPlayer()
    greedy.new_game(0)
    assert greedy.choose(board) == usi_to_move("5h5d")
    material = load_weights("material")
    for depth in (1, 2):
        for w in (weights, material):
            ab = AlphaBetaPlayer(depth=depth, weights=w, params=make_params())
            ab.new_game(0)
            move = ab.choose(board)
            assert move in board.legal_move_codes() and move != usi_to_move("5h5d")
        # in material terms nothing is won and nothing is lost (the default's effect terms move with any rook move)
        assert abs(ab.last_value - evaluate(board.pos, material)) < 100
    assert board.sfen() == Board(POISONED_PAWN_SFEN).sfen()  # players leave the board alone


def test_alpha_beta_takes_the_rook_and_finds_mate_in_one(weights):
    ab = AlphaBetaPlayer(depth=2, weights=weights, params=make_params())
    ab.new_game(0)
    assert ab.choose(Board(HANGING_ROOK_SFEN)) == usi_to_move("5f5e")
    assert ab.choose(Board(MATE_SFEN)) == usi_to_move("G*5b") and ab.last_value == 30000.0


def test_mcss_player_moves_after_its_tree_reuse_reaches_a_repetition(weights):
    """The second occurrence of a position is a draw inside the search but the game goes on: the player
    must still answer with a move when the reused tree's new root was a repetition terminal."""
    player = make_player("mcss:samples=30,hash=16", weights, make_params())
    player.new_game(1)
    board = Board()
    for move in ("5i5h", "5a5b", "5h5i"):
        board.push_usi(move)
    assert player.choose(board) is not None
    board.push_usi("5b5a")
    move = player.choose(board)
    assert move is not None and move in board.legal_move_codes()


def test_mcss_pick_draws_from_the_root_policy_with_its_own_weights(weights):
    """pick > 0 plays like the learner: the move is drawn from softmax(E*/pick) over the root children, not
    the best value (pick = 0, the engine). weights= gives a player its own file (here the material one)."""
    board = Board(MIDGAME_SFEN)
    legal = set(board.legal_move_codes())
    engine = make_player("mcss:samples=40,hash=16,graph=0", weights, make_params())
    learner = make_player("mcss:samples=40,hash=16,graph=0,pick=100000,weights=material", weights, make_params())
    assert np.array_equal(learner.searcher.adapter.weights, load_weights("material"))
    drawn, not_best = set(), 0
    for seed in range(16):
        engine.new_game(seed)
        assert engine.choose(board) == engine.last_result.best_move
        learner.new_game(seed)
        move = learner.choose(board)
        assert move in legal
        drawn.add(move)
        not_best += move != learner.last_result.best_move
    assert len(drawn) >= 10 and not_best >= 10  # ~uniform over the root moves at this temperature
    with pytest.raises(ValueError, match="pick"):
        make_player("mcss:pick=-1", None, None)
    with pytest.raises(ValueError, match="nosuch.npz: no such file"):
        make_player("mcss:weights=nosuch.npz", None, None)


def test_player_specs():
    assert parse_spec("mcss:t=40,samples=50,name=x") == ("mcss", {"t": 40.0, "samples": 50, "name": "x"})
    assert parse_spec("material") == ("material", {})
    for bad in ("mcts", "mcss:temp=3", "alphabeta:depth=x", "mcss:t"):
        with pytest.raises(ValueError):
            parse_spec(bad)
    for bad in ("mcss:samples=5,nodes=9", "mcss:nodes=0", "alphabeta:depth=3"):
        with pytest.raises(ValueError):
            make_player(bad, None, None)


def test_random_openings_are_balanced_and_seeded():
    import random

    a = random_opening(random.Random(5), 6, 150.0)
    assert a == random_opening(random.Random(5), 6, 150.0) and len(a) == 6
    board = Board()
    for move in a:
        board.push_usi(move)
    assert board.legal_moves()


def run_arena(tmp_path, name, games):
    path = tmp_path / f"{name}.json"
    out = io.StringIO()
    config = ArenaConfig(
        "mcss:samples=20,name=mcss",
        "material",
        games=games,
        seed=3,
        rules=ArenaRules(max_moves=120),
        json_path=str(path),
    )
    summary = Arena(config, out=out).run()
    return summary, json.loads(path.read_text()), out.getvalue()


def test_mcss_against_material_plays_legal_games_reproducibly(tmp_path):
    summary, data, text = run_arena(tmp_path, "first", 2)
    assert summary["games"] == 2 and summary["wins"] + summary["losses"] + summary["draws"] == 2
    assert text.count("\ngame ") == 2 and "Score of mcss vs material" in text
    for game in data["games"]:
        assert game["reason"] in GAME_REASONS
        board = Board()
        for move in game["opening"].split() + game["moves"]:
            board.push_usi(move)  # raises on an illegal move
        assert board.ply == game["plies"]
        if game["reason"] == "mate":
            assert board.is_checkmate() and game["winner"] == ("w" if board.turn == 0 else "b")
    assert [g["black"] for g in data["games"]] == ["mcss", "material"]
    for game in data["games"]:  # the samples limit (fewer once a mate is proven)
        assert list(game["search"]) == ["mcss"] and 0 < game["search"]["mcss"]["samples"] <= 20
    assert summary["search"]["mcss"]["moves"] == sum(g["search"]["mcss"]["moves"] for g in data["games"])
    assert data["games"][0]["opening"] == data["games"][1]["opening"]
    _, again, _ = run_arena(tmp_path, "again", 1)
    assert again["games"][0]["moves"] == data["games"][0]["moves"]


def test_cli_runs_and_rejects_bad_specs(tmp_path):
    path = tmp_path / "cli.json"
    cmd = [
        sys.executable,
        "-m",
        "learn",
        "arena",
        "--player1",
        "alphabeta:depth=1,name=ab1",
        "--player2",
        "material",
        "--games",
        "2",
        "--max-moves",
        "60",
        "--json",
        str(path),
    ]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Score of ab1 vs material" in done.stdout
    assert json.loads(path.read_text())["summary"]["games"] == 2
    bad = subprocess.run(
        cmd[:5] + ["mcss:tsel=3", "--player2", "material"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "arena: error: bad setting 'tsel=3'" in bad.stderr
