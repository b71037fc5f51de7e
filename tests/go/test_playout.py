"""Playouts and the contract kernels: seeded playouts pinned, termination, legality, no own-eye filling, no big
self-atari (every playout policy, the softmax draw with the shipped gammas too), ownership, expand/root_status
values."""

import hashlib

import numpy as np
import pytest
from board_oracle import block

from usi_engine.go import GoBoard, game
from usi_engine.go import board as kb
from usi_engine.go import layout as L
from usi_engine.go.playout import (
    POLICY_MOGGY,
    POLICY_PATTERNS,
    POLICY_PLAIN,
    POLICY_REDIRECT,
    POLICY_SELFATARI,
    POLICY_SOFTMAX,
    POLICY_TACTICS,
    move_cap,
    run_playout,
    run_playouts,
    seed_rng,
)
from usi_engine.go.softplayout import playout_table
from usi_engine.go.workspace import _is_own_eye, new_workspace
from usi_engine.search.values import MATE

pytestmark = pytest.mark.process

NONE = np.empty(0, dtype=np.float64)


@pytest.mark.parametrize(
    "policy",
    [
        POLICY_PLAIN,
        POLICY_PATTERNS,
        POLICY_TACTICS,
        POLICY_PATTERNS | POLICY_TACTICS,
        POLICY_SOFTMAX,
        POLICY_PATTERNS | POLICY_TACTICS | POLICY_SOFTMAX,
        POLICY_PATTERNS | POLICY_SELFATARI,
        POLICY_PATTERNS | POLICY_TACTICS | POLICY_SELFATARI | POLICY_REDIRECT,
        POLICY_PATTERNS | POLICY_MOGGY,
        POLICY_PATTERNS | POLICY_MOGGY | POLICY_TACTICS | POLICY_SELFATARI,
    ],
    ids=str,
)
def test_playouts_are_legal_scored_and_fill_no_eye_nor_make_a_big_self_atari(policy):
    """Traced playouts of every playout policy, replayed on the rules kernels (simple ko, like the playouts): every
    move is legal, none fills an own eye, a move that captures nothing leaves its block of >= 2 stones with >= 2
    liberties; finished playouts end with two passes and score the area score."""
    gammas = playout_table() if policy & POLICY_SOFTMAX else None
    ws, rng = new_workspace(), seed_rng(11 + policy)
    for size, games in ((5, 20), (9, 20), (13, 6), (19, 3)):
        cap = move_cap(size)
        w = size + 1
        for _ in range(games):
            start = GoBoard(size, komi=7.0, ko_rule="simple", history=cap + 8)
            trace = np.full(cap, -1, dtype=np.int32)
            score, moves = run_playout(start.pos, ws, rng, cap, NONE, NONE, trace, policy, gammas)
            assert 0 < moves <= cap
            pos = start.pos.copy()
            for mv in trace[:moves]:
                board = pos[L.BOARD : L.BOARD + L.BOARD_CAP]
                if mv != L.PASS:
                    assert not _is_own_eye(board, w, mv, pos[L.SIDE])
                    assert kb.move_status(pos, mv) == kb.LEGAL
                captures = int(pos[L.CAP_TOP])
                kb.do_move(pos, mv)
                if mv != L.PASS and pos[L.CAP_TOP] == captures:
                    stones, libs = block(board, w, int(mv))
                    assert len(stones) == 1 or len(libs) >= 2, (size, start.vertex(int(mv)))
            if moves < cap:
                assert pos[L.PASSES] == 2
            assert kb.area_score(pos) == score


@pytest.mark.parametrize(
    "policy, digest",
    [
        # the plain policy as before the pattern rule existed (commit abca39f)
        (POLICY_PLAIN, "72b276d7ffda79378e5ed2ba2dea4ee7e16fe1c63223da2f080b2362cb46204e"),
        # the patterns-only policy as `patterns=True` gave before the tactics existed (commit 9575ba8)
        (POLICY_PATTERNS, "552ed3614faa4262f657713eecbb35591ea3fc3ef20bb46908feda4be1e9d790"),
    ],
    ids=["plain", "patterns"],
)
def test_seeded_playouts_are_pinned(policy, digest):
    """Seeded traces and scores hash to the value the policy gave before later rules were added: a rule that is off
    consumes no random number and changes no choice."""
    h = hashlib.sha256()
    ws, rng = new_workspace(), seed_rng(2024)
    for size, moves in ((9, ()), (9, ("E5", "E4", "D4", "F5", "D5", "C3")), (13, ("D4", "K10", "C6")), (19, ())):
        b = GoBoard(size, komi=7.0, ko_rule="simple")
        for i, v in enumerate(moves):
            b.play("bw"[i % 2], v)
        cap = move_cap(size)
        for _ in range(25):
            trace = np.full(cap, -1, dtype=np.int32)
            score, n = run_playout(b.pos, ws, rng, cap, NONE, NONE, trace, policy)
            h.update(trace[:n].tobytes())
            h.update(np.float64(score).tobytes())
    assert h.hexdigest() == digest


def test_own_true_eye_is_never_filled_even_when_it_is_the_last_empty_point():
    """A black block with two single-point eyes: Black must pass rather than fill them."""
    b = GoBoard(5, komi=0)
    eyes = ("B2", "D4")
    for x in "ABCDE":
        for y in range(1, 6):
            vert = f"{x}{y}"
            if vert not in eyes:
                b.play("b", vert)
    b.to_move = "b"
    trace = np.full(10, -1, dtype=np.int32)
    score, moves = run_playout(b.pos, new_workspace(), seed_rng(1), 50, NONE, NONE, trace, POLICY_PLAIN)
    assert moves == 2 and list(trace[:2]) == [L.PASS, L.PASS]  # white's moves would be suicide
    assert score == 25.0


def test_atari_escape_and_capture_heuristics():
    # Black E7 puts White E6 in atari (liberty E5): White extends there (3 liberties after).
    t = GoBoard(9)
    for colour, vert in (("b", "D6"), ("w", "E6"), ("b", "F6"), ("w", "A1"), ("b", "E7")):
        t.play(colour, vert)
    trace = np.full(1, -1, dtype=np.int32)
    run_playout(t.pos, new_workspace(), seed_rng(5), 1, NONE, NONE, trace, POLICY_PLAIN)
    assert trace[0] == t.parse_vertex("E5")
    # White E5 walks into atari (liberty E6): Black captures it.
    x = GoBoard(9)
    for colour, vert in (("b", "D5"), ("w", "A1"), ("b", "F5"), ("w", "A2"), ("b", "E4"), ("w", "E5")):
        x.play(colour, vert)
    run_playout(x.pos, new_workspace(), seed_rng(9), 1, NONE, NONE, trace, POLICY_PLAIN)
    assert trace[0] == x.parse_vertex("E6")


def test_dead_stones_from_ownership_and_final_score():
    """5x5, Black to move: the white stone B2 inside Black's area is dead, and White's top blocks
    (a 2-row strip too small for two eyes, Black to move) die as well: Black owns the board."""
    b = GoBoard(5, komi=0.5)
    for vert in ("A3", "B3", "C3", "D3", "E3", "B4", "D2"):
        b.play("b", vert)
    for vert in ("A4", "C4", "D4", "E4", "B5", "B2"):
        b.play("w", vert)
    assert b.area_score() == -3.5  # every stone counted alive
    dead = sorted(sorted(block) for block in b.final_status("dead"))
    assert dead == [["A4"], ["B2"], ["B5"], ["C4", "D4", "E4"]]
    assert [sorted(block) for block in b.final_status("alive")] == [["A3", "B3", "B4", "C3", "D2", "D3", "E3"]]
    assert b.final_score() == "B+24.5"


def test_expand_values_flags_and_pos_unchanged():
    b = GoBoard(9, komi=7.0)
    for vert in ("E5", "C3", "G7"):
        b.play(b.to_move, vert)
    pos = b.pos.copy()
    out_moves = np.empty(game.MAX_MOVES, dtype=np.int32)
    out_values = np.empty(game.MAX_MOVES, dtype=np.float64)
    out_flags = np.empty(game.MAX_MOVES, dtype=np.int8)
    params = game.default_params(playouts=4)
    n, work = game.expand(pos, np.empty(0), params, seed_rng(3), out_moves, out_values, out_flags)
    assert np.array_equal(L.live_state(pos), L.live_state(b.pos))
    assert n == 81 - 3 + 1 and out_moves[n - 1] == L.PASS
    assert work > n * 4 * 30
    assert (np.abs(out_values[:n]) <= 1000.0).all() and (out_flags[:n] == 0).all()
    # values are multiples of 1000 * 2 * 0.5 / K = 250 (wins and ties out of 4)
    assert np.allclose(np.round(out_values[:n] / 250.0) * 250.0, out_values[:n])


def test_pass_after_pass_is_a_terminal_child_with_exact_value():
    b = GoBoard(5, komi=0.5)
    for x in "ABCDE":
        b.play("b", f"{x}2")
        b.play("w", f"{x}4")
    b.play("b", "C3")  # Black rows 1-2 + C3 = 11, White rows 4-5 = 10, row 3 dame
    b.play("w", "pass")
    pos = b.pos
    assert game.root_status(pos, game.default_params()) == (False, 0.0)
    out_moves = np.empty(game.MAX_MOVES, dtype=np.int32)
    out_values = np.empty(game.MAX_MOVES, dtype=np.float64)
    out_flags = np.empty(game.MAX_MOVES, dtype=np.int8)
    n, _ = game.expand(pos, np.empty(0), game.default_params(), seed_rng(3), out_moves, out_values, out_flags)
    assert out_moves[n - 1] == L.PASS and out_flags[n - 1] == game.TERMINAL
    # after Black's pass White is to move and has lost by 11 - 10 - 0.5
    assert out_values[n - 1] == -MATE
    b.play("b", "pass")
    assert game.root_status(b.pos, game.default_params()) == (True, -MATE)
    assert b.area_score() == 0.5


def test_run_playouts_is_reproducible_and_balanced_on_empty_board():
    pos = L.new_pos(9, komi=7.0)
    a = run_playouts(pos, new_workspace(), seed_rng(42), 300, move_cap(9), NONE, NONE, POLICY_PLAIN)
    b = run_playouts(pos, new_workspace(), seed_rng(42), 300, move_cap(9), NONE, NONE, POLICY_PLAIN)
    assert a == b
    assert 0.25 < a[0] / 300 < 0.75  # komi 7 on an empty 9x9: neither side sweeps
    assert 60 < a[1] / 300 < 200  # mean playout length on 9x9


def test_bench_prints_the_rate_line():
    import re
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "usi_engine.go.bench", "--seconds", "0.2"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    last = out.strip().splitlines()[-1]
    m = re.fullmatch(r"playouts_per_sec=(\d+) moves_per_sec=(\d+)", last)
    assert m and int(m.group(1)) > 1000 and int(m.group(2)) > 50 * int(m.group(1))


def test_seki_with_one_eye_each_and_shared_liberties():
    """Black and White blocks with one eye each (A4, E4) share the C column: neither can fill the
    last shared liberty without self-atari, so both live in seki and the score counts no territory
    on column C."""
    b = GoBoard(5, komi=0.5)
    for y in (1, 2, 3, 5):
        b.play("b", f"A{y}")
        b.play("w", f"E{y}")
    for y in range(1, 6):
        b.play("b", f"B{y}")
        b.play("w", f"D{y}")
    statuses = {(st, c) for st, c, _ in b.statuses()}
    assert statuses == {("seki", L.BLACK), ("seki", L.WHITE)}
    assert b.final_status("dead") == []
    assert b.final_score() == "W+0.5"
