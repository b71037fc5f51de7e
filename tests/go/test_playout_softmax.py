"""Softmax playouts (usi_engine/go/softplayout.py, playout.py rule 6 under POLICY_SOFTMAX): the gamma tables from a
move model, the draw's frequencies against gamma / sum gamma on a hand-made board, the rejections (own eye, suicide,
ko, nothing left), the incremental codes and gammas against a recomputation at every move of seeded playouts, the
playouts' length, the loud failure without a table, and the options (legality of whole softmax playouts and the
pinned plain / patterns playouts: test_playout.py)."""

import numpy as np
import pytest

from tests.go.test_playout_tactics import _board
from usi_engine.go import GoBoard
from usi_engine.go import layout as L
from usi_engine.go.game import (
    MAX_MOVES,
    P_PLAYOUT_POLICY,
    GoAdapter,
    default_params,
    expand,
    pack_weights,
    playout_gammas,
    split_weights,
)
from usi_engine.go.moveprior import G_SHAPE3, KEYS, N_SHAPE3, OFFSETS, SHAPE3_CLASS, SWAP3, new_model
from usi_engine.go.patterns import N_CODES
from usi_engine.go.player import GoPlayer
from usi_engine.go.playout import (
    POLICY_PATTERNS,
    POLICY_SOFTMAX,
    POLICY_TACTICS,
    _choose,
    move_cap,
    run_playout,
    run_playouts,
    seed_rng,
)
from usi_engine.go.softplayout import (
    GAMMA_TOP,
    TABLE_SIZE,
    draw_table,
    gamma_table,
    playout_table,
    soft_draw,
    soft_play,
    soft_setup,
)
from usi_engine.go.workspace import R_CODE, R_EMPTY, R_GAMMA_B, R_GAMMA_W, R_META, _setup, new_workspace
from usi_engine.gtp_options import build_parser, player_settings

NONE = np.empty(0, dtype=np.float64)
SHIPPED = playout_table()
# (dx, dy) of the 8 neighbours in the order of the code's base-4 digits, dy = +1 the row above
DIGIT_OFFSETS = ((-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1))


def _code(b: GoBoard, p: int) -> int:
    """The 3x3 code of point p read off the GoBoard by coordinates (off board = BORDER), without the kernels."""
    w = b.size + 1
    x, y = p % w, p // w - 1
    board = b.pos[L.BOARD : L.BOARD + L.BOARD_CAP]
    code = 0
    for k, (dx, dy) in enumerate(DIGIT_OFFSETS):
        xx, yy = x + dx, y + dy
        v = int(board[(yy + 1) * w + xx]) if 0 <= xx < b.size and 0 <= yy < b.size else L.BORDER
        code += v * 4**k
    return code


def _empties(b: GoBoard) -> list[int]:
    w = b.size + 1
    return [(y + 1) * w + x for y in range(b.size) for x in range(b.size) if b.pos[L.BOARD + (y + 1) * w + x] == 0]


def _set_up(b: GoBoard, table: np.ndarray) -> np.ndarray:
    ws = new_workspace()
    _setup(b.pos, ws)
    soft_setup(ws, b.size + 1, b.size, table)
    return ws


def _one_code_table(code: int, big: float = 1e9) -> np.ndarray:
    """A table where every mover-normalised code has gamma 1 except `code` (for Black to move): `big`."""
    gammas = np.ones(N_CODES)
    gammas[code] = big
    return draw_table(gammas)


# --- the tables -----------------------------------------------------------------------------------------------
def test_gamma_table_is_exp_of_the_model_shape_weights():
    """gamma(code) = exp(beta * w) of the code's G_SHAPE3 class; the kernels' table puts Black's gamma at 2 * code
    and White's (the colours swapped) at 2 * code + 1, in fixed point proportional to the gammas."""
    model = new_model()
    w = np.random.default_rng(3).normal(0.0, 1.5, N_SHAPE3)
    model[KEYS + OFFSETS[G_SHAPE3] : KEYS + OFFSETS[G_SHAPE3 + 1]] = w
    gammas = gamma_table(model)
    codes = np.random.default_rng(4).integers(0, N_CODES, 500)
    assert np.allclose(gammas[codes], np.exp(w[SHAPE3_CLASS[codes]]))
    assert np.allclose(gamma_table(model, 0.5), np.sqrt(gammas))
    assert np.all(gamma_table(model, 0.0) == 1.0)
    table = draw_table(gammas).reshape(N_CODES, 2)
    assert table.max() == GAMMA_TOP and table.min() >= 1.0 and np.all(table == np.rint(table))
    assert np.allclose(table[:, 0] / GAMMA_TOP, gammas / gammas.max(), rtol=1e-6)
    assert np.array_equal(table[:, 1], table[SWAP3, 0])
    with pytest.raises(ValueError, match="beta"):
        gamma_table(model, -1.0)
    with pytest.raises(ValueError, match="positive"):
        draw_table(np.zeros(N_CODES))


def test_shipped_table_comes_from_the_shipped_move_model():
    assert SHIPPED.shape == (TABLE_SIZE,)
    t = SHIPPED.reshape(N_CODES, 2)
    assert len(np.unique(t[:, 0])) > 500  # the model's shape classes, not a constant
    assert np.array_equal(t[:, 1], t[SWAP3, 0])


# --- the draw -------------------------------------------------------------------------------------------------
# A 9x9 board with shapes of both colours, White's last move E7 leaving nothing in atari (rules 1-2 stay silent).
# Black's own eye A1 (B1, A2 around it) and the suicide J9 (White H9, J8) are the empty points Black may not play.
SHAPES = ("C3 D4 E3 A2 B1 G7 F6 C5", "D3 E4 G6 F7 C6 J8 H9 D6", "E7")


def test_rule6_draws_points_in_proportion_to_their_gammas():
    """The first move of seeded one-move playouts (POLICY_SOFTMAX alone: rules 1, 2 and the draw) under random
    gammas: the frequencies pass a chi-square test against gamma / sum gamma over the points Black may play, and fail
    it by far against a uniform draw; the eye and the suicide are never played."""
    b = _board(*SHAPES)
    gammas = np.exp(np.random.default_rng(7).normal(0.0, 1.0, N_CODES))
    table = draw_table(gammas)
    eye, suicide = b.parse_vertex("A1"), b.parse_vertex("J9")
    points = [p for p in _empties(b) if p not in (eye, suicide)]
    expected = np.array([gammas[_code(b, p)] for p in points])
    expected /= expected.sum()
    n = 20000
    ws, rng = new_workspace(), seed_rng(17)
    trace = np.full(1, -1, dtype=np.int32)
    counts: dict[int, int] = {}
    for _ in range(n):
        run_playout(b.pos, ws, rng, 1, NONE, NONE, trace, POLICY_SOFTMAX, table)
        counts[int(trace[0])] = counts.get(int(trace[0]), 0) + 1
    assert set(counts) <= set(points)
    observed = np.array([counts.get(p, 0) for p in points])
    df = len(points) - 1
    bound = df + 5.0 * np.sqrt(2.0 * df)  # chi-square far in its upper tail (p well below 1e-4)
    chi2 = ((observed - n * expected) ** 2 / (n * expected)).sum()
    uniform = ((observed - n / len(points)) ** 2 / (n / len(points))).sum()
    assert chi2 < bound, (chi2, bound)
    assert uniform > 10 * bound, (uniform, bound)


def test_a_huge_gamma_is_drawn_almost_always_unless_the_point_is_refused():
    """One ordinary point's shape gets gamma 1e9 against 1 for every other shape: it is drawn on nearly every
    move; as the ko point it never is. The own eye A1 and the suicide J9 with the huge gamma are never drawn."""
    b = _board(*SHAPES)
    w = b.size + 1
    rng = seed_rng(5)
    target = b.parse_vertex("F3")
    assert sum(_code(b, p) == _code(b, target) for p in _empties(b)) == 1  # its shape is unique on this board
    ws = _set_up(b, _one_code_table(_code(b, target)))
    draws = [soft_draw(ws, w, L.BLACK, 0, rng) for _ in range(2000)]
    assert sum(p == target for p in draws) > 0.99 * len(draws)
    ko_draws = [soft_draw(ws, w, L.BLACK, target, rng) for _ in range(2000)]
    assert target not in ko_draws and L.PASS not in ko_draws
    for vertex in ("A1", "J9"):  # Black's own eye, Black's suicide
        p = b.parse_vertex(vertex)
        ws = _set_up(b, _one_code_table(_code(b, p)))
        refused = [soft_draw(ws, w, L.BLACK, 0, rng) for _ in range(500)]
        assert p not in refused and L.PASS not in refused
        assert len(set(refused)) > 20  # the others, drawn evenly


def test_the_side_passes_when_no_point_is_left():
    """A black block with two single-point eyes filling a 5x5 board: Black's points are own eyes, White's are
    suicides, whatever their gammas; the softmax playout is two passes."""
    b = GoBoard(5, komi=0)
    eyes = ("B2", "D4")
    for x in "ABCDE":
        for y in range(1, 6):
            if f"{x}{y}" not in eyes:
                b.play("b", f"{x}{y}")
    b.to_move = "b"
    ws = _set_up(b, _one_code_table(_code(b, b.parse_vertex("B2"))))
    assert soft_draw(ws, 6, L.BLACK, 0, seed_rng(1)) == L.PASS
    assert soft_draw(ws, 6, L.WHITE, 0, seed_rng(1)) == L.PASS
    trace = np.full(10, -1, dtype=np.int32)
    score, moves = run_playout(b.pos, new_workspace(), seed_rng(1), 50, NONE, NONE, trace, POLICY_SOFTMAX, SHIPPED)
    assert moves == 2 and list(trace[:2]) == [L.PASS, L.PASS]
    assert score == 25.0


# --- the incremental upkeep -----------------------------------------------------------------------------------
def _assert_recomputed(ws, w, size, table):
    """The incremental codes, gammas and totals of ws equal a recomputation from its board."""
    fresh = ws.copy()
    soft_setup(fresh, w, size, table)
    assert np.array_equal(ws[R_CODE : R_GAMMA_W + 1], fresh[R_CODE : R_GAMMA_W + 1])
    assert np.array_equal(ws[R_META, 1:3], fresh[R_META, 1:3])
    empties = ws[R_EMPTY, : ws[R_META, 0]]
    assert ws[R_META, 1] == ws[R_GAMMA_B, empties].sum() and ws[R_META, 2] == ws[R_GAMMA_W, empties].sum()


def test_incremental_gammas_equal_a_recomputation_at_every_move():
    """Seeded softmax playouts (with patterns and tactics) played move by move with the kernels: after every move the
    codes, gammas and totals kept by soft_play equal soft_setup's from scratch, through many captures; and after a
    whole run_playout too."""
    policy = POLICY_SOFTMAX | POLICY_PATTERNS | POLICY_TACTICS
    rng = seed_rng(23)
    captures = 0
    for size, games in ((9, 4), (13, 2), (19, 1)):
        w, cap = size + 1, move_cap(size)
        pos = GoBoard(size, komi=7.0).pos
        for _ in range(games):
            ws = _set_up(GoBoard(size, komi=7.0), SHIPPED)
            c, ko, last, prev, passes, moves = L.BLACK, 0, L.PASS, L.PASS, 0, 0
            while passes < 2 and moves < cap:
                p = _choose(ws, w, c, last, prev, ko, 0, rng, policy)
                if p == L.PASS:
                    passes, ko = passes + 1, 0
                else:
                    before = ws[R_META, 0]
                    ko = soft_play(ws, w, p, c, SHIPPED)
                    passes = 0
                    captures += ws[R_META, 0] >= before
                _assert_recomputed(ws, w, size, SHIPPED)
                prev, last, c, moves = last, p, 3 - c, moves + 1
            ws = new_workspace()
            run_playout(pos, ws, rng, cap, NONE, NONE, np.empty(0, np.int32), policy, SHIPPED)
            _assert_recomputed(ws, w, size, SHIPPED)
    assert captures > 50


def test_softmax_playouts_end_with_two_passes():
    """9x9 softmax playouts from the empty board end by two passes well before the move cap, at a length like the
    uniform policy's (both fill the board up to the eyes)."""
    pos = L.new_pos(9, komi=7.0)
    cap = move_cap(9)
    lengths = []
    ws, rng = new_workspace(), seed_rng(3)
    trace = np.full(cap, -1, dtype=np.int32)
    for _ in range(100):
        _, moves = run_playout(pos, ws, rng, cap, NONE, NONE, trace, POLICY_SOFTMAX, SHIPPED)
        assert trace[moves - 1] == L.PASS and trace[moves - 2] == L.PASS
        lengths.append(moves)
    assert max(lengths) < cap and 60 < np.mean(lengths) < 200
    wins, total, _ = run_playouts(pos, ws, rng, 200, cap, NONE, NONE, POLICY_SOFTMAX, SHIPPED)
    assert 0.2 < wins / 200 < 0.8 and 60 < total / 200 < 200


# --- no table, the adapter, the options -----------------------------------------------------------------------
def test_softmax_without_a_table_fails_loudly():
    """The kernel raises instead of reading an empty table; the adapter refuses params with the bit and no table."""
    pos = L.new_pos(9, komi=7.0)
    with pytest.raises(ValueError, match="gamma table"):
        run_playout(pos, new_workspace(), seed_rng(1), 10, NONE, NONE, NONE.astype(np.int32), POLICY_SOFTMAX)
    with pytest.raises(ValueError, match="gamma table"):
        run_playouts(pos, new_workspace(), seed_rng(1), 2, 10, NONE, NONE, POLICY_SOFTMAX, NONE)
    with pytest.raises(ValueError, match="gamma table"):
        GoAdapter(9, default_params(playout_softmax=True))
    adapter = GoAdapter(9, default_params(playout_softmax=True), playout_gammas=SHIPPED)
    with pytest.raises(ValueError, match="gamma table"):
        adapter.set_playout_gammas(None)


def test_adapter_packs_the_table_with_the_other_weights_and_expand_uses_it():
    """The table rides in the adapter's weights next to a move model (split_weights unchanged); expand with the
    softmax params runs on it."""
    adapter = GoAdapter(9, default_params(playout_softmax=True), playout_gammas=SHIPPED)
    adapter.set_move_model(np.arange(5.0))
    theta, model, tab = split_weights(adapter.weights)
    assert len(theta) == 0 and np.array_equal(model, np.arange(5.0)) and len(tab) == 0
    assert np.array_equal(playout_gammas(adapter.weights), SHIPPED)
    packed = pack_weights(np.ones(3), np.arange(4.0), np.full(6, 2.0), SHIPPED)
    assert [len(a) for a in split_weights(packed)] == [3, 4, 6] and np.array_equal(playout_gammas(packed), SHIPPED)
    assert len(playout_gammas(pack_weights(None, None, None))) == 0
    b = GoBoard(9, komi=7.0)
    moves = np.empty(MAX_MOVES, np.int32)
    values = np.empty(MAX_MOVES, np.float64)
    flags = np.empty(MAX_MOVES, np.int8)
    n, work = expand(b.pos, adapter.weights, adapter.params, seed_rng(2), moves, values, flags)
    assert n == 82 and work > 81 * 30 and np.all(np.abs(values[:n]) <= 1000.0)


@pytest.mark.parametrize(
    "argv, softmax, beta",
    [
        ([], False, 1.0),
        (["--playout-softmax", "on"], True, 1.0),
        (["--playout-softmax", "on", "--playout-softmax-beta", "0.5"], True, 0.5),
    ],
)
def test_gtp_option_reaches_the_playout_policy_and_the_table(argv, softmax, beta):
    """`--playout-softmax on|off` (default off) sets POLICY_SOFTMAX in the adapter's params and gives it the shipped
    model's table, `--playout-softmax-beta` its exponent."""
    adapter = GoPlayer(player_settings(build_parser().parse_args(["--hash", "1"] + argv)))._searcher(9).adapter
    assert bool(int(adapter.params[P_PLAYOUT_POLICY]) & POLICY_SOFTMAX) == softmax
    assert int(adapter.params[P_PLAYOUT_POLICY]) & POLICY_PATTERNS  # the other switches as they were
    if softmax:
        assert np.array_equal(playout_gammas(adapter.weights), playout_table(beta=beta))
    else:
        assert adapter.playout_gammas is None and len(playout_gammas(adapter.weights)) == 0


def test_softmax_with_a_missing_model_file_fails_loudly(tmp_path):
    """Unlike the move prior (which plays on without a bad file), the softmax playouts were asked for: no table, no
    search."""
    argv = ["--hash", "1", "--playout-softmax", "on", "--move-model", str(tmp_path / "missing.npz")]
    with pytest.raises(ValueError, match="missing.npz"):
        GoPlayer(player_settings(build_parser().parse_args(argv)))._searcher(9)
