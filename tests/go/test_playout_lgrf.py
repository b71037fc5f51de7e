"""The last good reply with forgetting in the playouts (usi_engine/go/playout.py POLICY_LGRF, `--playout-lgrf`;
Baier & Drake's LGRF-2): the table's update after a playout, the stored reply played first, and the table's life in
the search (kept in the adapter's weights, filled by a search, cleared for a new game)."""

import numpy as np
import pytest

from usi_engine.go import GoBoard
from usi_engine.go.game import P_PLAYOUT_POLICY, GoAdapter, default_params, playout_replies
from usi_engine.go.layout import BLACK, PASS, WHITE, new_pos
from usi_engine.go.player import GoPlayer
from usi_engine.go.playout import (
    POLICY_LGRF,
    POLICY_PATTERNS,
    REPLY_LEN,
    _reply_one,
    _reply_two,
    move_cap,
    remember_replies,
    run_playout,
    seed_rng,
)
from usi_engine.go.workspace import new_workspace
from usi_engine.gtp_options import build_parser, player_settings
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions

pytestmark = pytest.mark.process

NONE = np.empty(0, dtype=np.float64)
A, B, C, D, X, Y = 13, 14, 15, 16, 40, 41  # six points of the 9x9 board (point index (row + 1) * 10 + column)


def _table() -> np.ndarray:
    return np.zeros(REPLY_LEN, np.float64)


def test_the_winner_s_moves_become_replies_and_the_loser_s_are_forgotten():
    replies = _table()
    moves = np.array([A, B, C, D], np.int32)  # Black A, White B, Black C, White D
    # the playout starts with Black to move after Black's X and White's Y: prev = X, last = Y
    remember_replies(replies, moves, 4, BLACK, Y, X, True)
    assert replies[_reply_one(BLACK, Y)] == A and replies[_reply_two(BLACK, X, Y)] == A
    assert replies[_reply_one(BLACK, B)] == C and replies[_reply_two(BLACK, A, B)] == C
    assert replies[_reply_one(WHITE, A)] == 0 and replies[_reply_two(WHITE, Y, A)] == 0  # White lost
    assert np.count_nonzero(replies) == 4
    # the same moves lost by Black: Black's stored replies that it played again are forgotten, White's are stored
    remember_replies(replies, moves, 4, BLACK, Y, X, False)
    assert replies[_reply_one(BLACK, Y)] == 0 and replies[_reply_two(BLACK, X, Y)] == 0
    assert replies[_reply_one(BLACK, B)] == 0 and replies[_reply_two(BLACK, A, B)] == 0
    assert replies[_reply_one(WHITE, A)] == B and replies[_reply_two(WHITE, Y, A)] == B
    assert replies[_reply_one(WHITE, C)] == D and replies[_reply_two(WHITE, B, C)] == D
    assert np.count_nonzero(replies) == 4


def test_a_loser_forgets_only_the_reply_it_played():
    replies = _table()
    replies[_reply_one(BLACK, Y)] = C  # Black's stored answer to Y is C; the lost playout answered A
    remember_replies(replies, np.array([A], np.int32), 1, BLACK, Y, X, False)
    assert replies[_reply_one(BLACK, Y)] == C


def test_passes_and_missing_history_store_nothing():
    replies = _table()
    # a pass is never a reply; a reply to a pass is not stored; before the game's first move (0) only the
    # one-move context of the first reply exists
    remember_replies(replies, np.array([PASS, A, B], np.int32), 3, BLACK, Y, 0, True)
    assert replies[_reply_one(BLACK, Y)] == 0  # Black's pass
    assert replies[_reply_one(BLACK, A)] == B  # Black's B answered A; the pair (pass, A) is no context
    assert np.count_nonzero(replies) == 1
    replies[:] = 0.0
    remember_replies(replies, np.array([A, B], np.int32), 2, BLACK, Y, 0, True)
    assert replies[_reply_one(BLACK, Y)] == A
    assert np.count_nonzero(replies) == 1  # no pair context without Black's previous move


def _after_one_move() -> tuple[np.ndarray, int, int]:
    """(pos after Black D5 on the empty 9x9 board, D5, White's reply to store: G3)."""
    b = GoBoard(9, komi=7.0)
    b.play("b", "D5")
    return b.pos, b.parse_vertex("D5"), b.parse_vertex("G3")


def _first_moves(pos, policy: int, replies, seeds: int = 20) -> list[int]:
    """The first move of a playout from pos with each seed, each from a copy of the table `replies` (a playout
    updates its table: a lost one forgets the reply it played)."""
    ws, out = new_workspace(), []
    for seed in range(seeds):
        trace = np.zeros(4 * move_cap(9), np.int32)
        table = replies.copy()
        run_playout(pos.copy(), ws, seed_rng(seed), move_cap(9), NONE, NONE, trace, policy, None, None, None, table)
        out.append(int(trace[0]))
    return out


def test_the_stored_reply_is_the_playout_s_first_move():
    pos, last, reply = _after_one_move()
    replies = _table()
    replies[_reply_one(WHITE, last)] = reply
    assert _first_moves(pos, POLICY_PATTERNS | POLICY_LGRF, replies) == [reply] * 20
    # without the rule, or with an empty table, the first moves are the policy's own
    assert len(set(_first_moves(pos, POLICY_PATTERNS, replies))) > 1
    assert len(set(_first_moves(pos, POLICY_PATTERNS | POLICY_LGRF, _table()))) > 1
    # a stored reply on an occupied point is not played
    replies[_reply_one(WHITE, last)] = last
    assert last not in _first_moves(pos, POLICY_PATTERNS | POLICY_LGRF, replies)


def test_a_playout_updates_the_table_with_its_moves():
    pos, _, _ = _after_one_move()
    replies, trace = _table(), np.zeros(4 * move_cap(9), np.int32)
    policy = POLICY_PATTERNS | POLICY_LGRF
    run_playout(
        pos.copy(), new_workspace(), seed_rng(1), move_cap(9), NONE, NONE, trace, policy, None, None, None, replies
    )
    assert np.count_nonzero(replies) > 20  # the winner's moves of one playout of ~80 moves
    assert set(np.unique(replies)) <= set(range(421))


@pytest.mark.parametrize(("argv", "bit"), [([], 0), (["--playout-lgrf", "on"], POLICY_LGRF)])
def test_the_option_reaches_the_search_and_a_new_game_clears_the_table(argv, bit):
    player = GoPlayer(player_settings(build_parser().parse_args(argv)))
    adapter = player._searcher(9).adapter
    assert int(adapter.params[P_PLAYOUT_POLICY]) & POLICY_LGRF == bit
    assert playout_replies(adapter.weights).shape[0] == (REPLY_LEN if bit else 0)
    if bit:
        params = default_params(playout_patterns=True, playout_lgrf=True)
        lgrf = GoAdapter(9, params)
        Searcher(lgrf, SearchOptions(policy="rave", hash_mb=16, seed=1)).search(
            new_pos(9, komi=7.0), Limits(samples=300)
        )
        assert np.count_nonzero(playout_replies(lgrf.weights)) > 100
        lgrf.set_move_model(None)  # a repack keeps what the playouts learned
        assert np.count_nonzero(playout_replies(lgrf.weights)) > 100
        lgrf.reset_short_term()
        assert np.count_nonzero(playout_replies(lgrf.weights)) == 0
