"""Go rules on hand-made positions: captures, ko, superko, suicide, scoring, undo, keys."""

import numpy as np
import pytest

from usi_engine.go import GoBoard
from usi_engine.go import board as kb
from usi_engine.go import layout as L

COLS = "ABCDEFGHJ"


def v(x, y):
    """GTP vertex of 0-based column x and row y."""
    return f"{COLS[x]}{y + 1}"


def setup(board, black=(), white=()):
    for vert in black:
        board.play("b", vert)
    for vert in white:
        board.play("w", vert)


def recomputed_key(pos):
    key = 0
    for p in range(L.BOARD_CAP):
        c = int(pos[L.BOARD + p])
        if c in (L.BLACK, L.WHITE):
            key ^= int(L.ZOBRIST[c, p]) & 0xFFFFFFFFFFFFFFFF
    if key >= 2**63:
        key -= 2**64
    return key


def test_vertex_parsing_skips_i_and_rejects_bad_input():
    b = GoBoard(19)
    assert b.vertex(b.parse_vertex("J1")) == "J1"
    assert b.parse_vertex("j1") == b.parse_vertex("J1") == L.point(19, 8, 0)
    assert b.parse_vertex("H1") == L.point(19, 7, 0)
    assert b.parse_vertex("T19") == L.point(19, 18, 18)
    assert b.parse_vertex("PASS") == L.PASS
    for bad in ("I5", "A0", "A20", "U1", "Z", "", "5A", "A-1"):
        with pytest.raises(ValueError):
            b.parse_vertex(bad)
    with pytest.raises(ValueError):
        b.play("red", "A1")


def test_single_stone_capture_and_area_score():
    b = GoBoard(9, komi=0)
    setup(b, black=["D5", "F5", "E6"], white=["E5"])
    b.play("b", "E4")
    assert b.stone("E5") == L.EMPTY
    assert b.area_score() == 81.0  # black owns the whole board
    b.komi = 7.5
    assert b.area_score() == 73.5


def test_group_capture_and_multiple_groups_at_once():
    b = GoBoard(9)
    # White blocks C1-D1 and F1 on the first line; Black's E1 captures both.
    setup(b, black=["B1", "C2", "D2", "F2", "G1", "E2"], white=["C1", "D1", "F1"])
    b.play("b", "E1")
    for vert in ("C1", "D1", "F1"):
        assert b.stone(vert) == L.EMPTY
    assert b.stone("E1") == L.BLACK
    # A five-stone block in the corner, last liberty A4.
    b2 = GoBoard(5)
    setup(b2, white=["A1", "B1", "A2", "B2", "A3"], black=["C1", "C2", "B3"])
    assert b2.stone("A1") == L.WHITE
    b2.play("b", "A4")
    assert all(b2.stone(x) == L.EMPTY for x in ("A1", "B1", "A2", "B2", "A3"))


def test_ko_immediate_recapture_refused_then_allowed_after_a_move_elsewhere():
    k = GoBoard(9)
    # . X O .      row 6
    # X O . O      row 5   (O at D5 in atari; black takes at E5)
    # . X O .      row 4
    setup(k, black=["C5", "D6", "D4"], white=["D5", "E6", "E4", "F5"])
    k.to_move = "b"
    k.play("b", "E5")
    assert k.stone("D5") == L.EMPTY
    with pytest.raises(ValueError, match="ko"):
        k.play("w", "D5")
    assert k.stone("E5") == L.BLACK and k.to_move == L.WHITE
    k.play("w", "A1")
    k.play("b", "A9")
    k.play("w", "D5")  # ko threat exchange done: recapture is legal
    assert k.stone("E5") == L.EMPTY


def _triple_ko(ko_rule):
    """Three separate kos (columns A-D rows 1-3, A-D rows 5-7, F-J rows 1-3), in states W, B, W.
    Returns (board, list of (a, b) points: white takes at a, black takes at b)."""
    b = GoBoard(9, ko_rule=ko_rule)
    kos = []
    for cx, r in ((0, 1), (0, 5), (5, 1)):
        black = [v(cx, r), v(cx + 1, r + 1), v(cx + 1, r - 1)]
        white = [v(cx + 3, r), v(cx + 2, r + 1), v(cx + 2, r - 1)]
        setup(b, black=black, white=white)
        kos.append((v(cx + 1, r), v(cx + 2, r)))
    b.play("w", kos[0][0])
    b.play("b", kos[1][1])
    b.play("w", kos[2][0])
    b.to_move = "b"
    return b, kos


def test_triple_ko_cycle_is_refused_by_positional_superko_only():
    for rule in ("positional", "situational", "simple"):
        b, kos = _triple_ko(rule)
        start = b.pos[L.BOARD : L.BOARD + L.BOARD_CAP].copy()
        cycle = [("b", kos[0][1]), ("w", kos[1][0]), ("b", kos[2][1]), ("w", kos[0][0]), ("b", kos[1][1])]
        for colour, vert in cycle:
            b.play(colour, vert)  # every move captures one stone
        last = kos[2][0]
        if rule == "simple":
            b.play("w", last)
            assert np.array_equal(b.pos[L.BOARD : L.BOARD + L.BOARD_CAP], start)
        else:
            assert last not in b.legal_moves()
            before = b.pos.copy()
            with pytest.raises(ValueError, match="superko"):
                b.play("w", last)
            assert np.array_equal(L.live_state(before), L.live_state(b.pos))  # the flood scratch may differ


def test_pass_then_out_of_turn_recapture_repeats_the_position():
    """Simple ko allows retaking after a pass; positional superko refuses the repetition."""
    for rule, legal in (("simple", True), ("positional", False)):
        k = GoBoard(9, ko_rule=rule)
        setup(k, black=["C5", "D6", "D4"], white=["D5", "E6", "E4", "F5"])
        k.play("b", "E5")
        k.play("w", "pass")
        assert k.is_legal("w", "D5") == legal
        if not legal:
            with pytest.raises(ValueError, match="superko"):
                k.play("w", "D5")


def test_suicide_forbidden_by_default_and_multi_stone_suicide_when_allowed():
    b = GoBoard(5)
    setup(b, black=["A2", "B1"])
    with pytest.raises(ValueError, match="suicide"):
        b.play("w", "A1")
    assert b.stone("A1") == L.EMPTY
    # White A2 inside a black wall: white A1 would leave the pair A1-A2 without liberties.
    t = GoBoard(5, suicide=True)
    t.play("w", "A2")  # first, so that the board after the suicide is new (no superko)
    setup(t, black=["A3", "B2", "B1"])
    with pytest.raises(ValueError, match="suicide"):
        _forbidden_copy(t).play("w", "A1")
    t.play("w", "A1")  # legal under Tromp-Taylor: both white stones come off
    assert t.stone("A1") == L.EMPTY and t.stone("A2") == L.EMPTY
    t.undo()
    assert t.stone("A2") == L.WHITE and t.stone("A1") == L.EMPTY
    single = GoBoard(5, suicide=True)
    setup(single, black=["A2", "B1"])
    with pytest.raises(ValueError, match="suicide"):
        single.play("w", "A1")  # single-stone suicide changes nothing: always illegal


def _forbidden_copy(board):
    b = GoBoard(board.size)
    b.pos = board.pos.copy()
    b.pos[L.SUICIDE_OK] = 0
    return b


def test_occupied_point_is_illegal_and_board_unchanged():
    b = GoBoard(9)
    b.play("b", "E5")
    before = b.pos.copy()
    with pytest.raises(ValueError, match="occupied"):
        b.play("w", "E5")
    assert np.array_equal(L.live_state(before), L.live_state(b.pos))


def test_scoring_with_komi_and_neutral_points():
    b = GoBoard(5, komi=0.5)
    # Black wall on column B, white wall on column D: A = black, E = white, C = dame (reaches both).
    for y in range(5):
        b.play("b", v(1, y))
        b.play("w", v(3, y))
    assert b.area_score() == 10 - 10 - 0.5
    b.play("b", "C3")
    assert b.area_score() == 11 - 10 - 0.5
    assert kb.area_score(b.pos) == 0.5
    from usi_engine.go.goboard import format_score

    assert format_score(3.5) == "B+3.5" and format_score(-0.5) == "W+0.5" and format_score(0) == "0"
    assert format_score(-2.0) == "W+2"


def test_random_game_undo_restores_exactly_and_keys_stay_consistent():
    rng = np.random.default_rng(7)
    b = GoBoard(7)
    snapshots = [b.pos.copy()]
    for _ in range(150):
        moves = b.legal_moves()
        stones = [m for m in moves if m != "pass"]
        mv = stones[rng.integers(len(stones))] if stones and rng.random() < 0.95 else "pass"
        if b.is_over():
            break
        b.play(b.to_move, mv)
        assert int(b.pos[L.KEY]) == recomputed_key(b.pos)
        snapshots.append(b.pos.copy())
    n = b.move_number
    assert n > 50 and b.pos[L.CAP_TOP] - b.pos[L.CAPS] > 5  # the game had captures to undo
    for i in range(n, -1, -1):
        assert np.array_equal(L.live_state(b.pos), L.live_state(snapshots[i]))
        if i:
            b.undo()
    assert b.pos[L.CAP_TOP] == b.pos[L.CAPS]
    with pytest.raises(ValueError):
        b.undo()


def test_gen_moves_agrees_with_move_status_and_pos_key_distinguishes_side():
    b = GoBoard(9)
    setup(b, black=["C5", "D6", "D4"], white=["D5", "E6", "E4", "F5"])
    b.to_move = "b"
    b.play("b", "E5")
    legal = b.legal_moves()
    assert "D5" not in legal and "E5" not in legal and legal[-1] == "pass"
    n_empty = 81 - 7
    assert len(legal) == n_empty - 1 + 1  # every empty point but the ko point, plus pass
    k1 = b.key()
    b.play("w", "pass")
    assert b.key() != k1  # side to move and the pending pass are in the key


def test_history_grows_beyond_capacity():
    b = GoBoard(5, history=8)
    rng = np.random.default_rng(3)
    for _ in range(40):
        moves = b.legal_moves()
        b.play(b.to_move, moves[rng.integers(len(moves) - 1)] if len(moves) > 1 else "pass")
    assert b.move_number == 40 and b.pos[L.HIST_CAP] >= 41
    while b.move_number:
        b.undo()
    assert (b.pos[L.BOARD : L.BOARD + L.BOARD_CAP] != L.BLACK).all()
    assert (b.pos[L.BOARD : L.BOARD + L.BOARD_CAP] != L.WHITE).all()
