"""The learned move prior (usi_engine/go/moveprior.py) and its fitting (learn/go_moves.py): features against an
independent flood-fill reading of the board, invariance under the square's symmetries and colour swap, the
softmax, the gradient against finite differences, model files, record parsing, a real fitting run, and the
prior inside expand_amaf and the GTP player."""

import json
import random

import numpy as np
import pytest
from board_oracle import block

from learn.__main__ import main as learn_main
from learn.go_moves import _position_nll, parse_moves, vocabulary
from usi_engine.go import GoBoard
from usi_engine.go import layout as L
from usi_engine.go import moveprior as M
from usi_engine.go import shapes as S
from usi_engine.go.board import gen_moves
from usi_engine.go.game import (
    MOVES_EVEN,
    MOVES_WINS,
    P_MOVES_AMAF,
    P_MOVES_EVEN,
    P_MOVES_WINS,
    P_PRIOR_MOVES,
    WEIGHTS_HEADER,
    expand_amaf,
    moves_prior,
)
from usi_engine.go.ladder import S_ROWS, escape_is_laddered
from usi_engine.go.player import GoPlayer
from usi_engine.go.playout import PRIOR_EYE, PRIOR_PASS, PRIOR_SELF_ATARI, move_priors, seed_rng
from usi_engine.go.workspace import _setup, new_workspace
from usi_engine.gtp_options import build_parser, player_settings
from usi_engine.weightfile import WeightFileError


def _random_game(size: int, plies: int, seed: int, colours=("b", "w"), local: bool = False) -> tuple[GoBoard, list]:
    """A board after random legal moves (no passes), and the moves as GTP vertices; local: every move after the
    first is next to the one before when it can be (a local player)."""
    rnd = random.Random(seed)
    b = GoBoard(size, 7.5)
    played: list = []
    for i in range(plies):
        legal = [v for v in b.legal_moves() if v != "pass"]
        if not legal:
            break
        if local and played:
            last = b.parse_vertex(played[-1])
            legal = [v for v in legal if abs(b.parse_vertex(v) - last) in (1, size + 1)] or legal
        v = rnd.choice(legal)
        b.play(colours[i % 2], v)
        played.append(v)
    return b, played


def _features(b: GoBoard, p: int, own=None) -> np.ndarray:
    ws = new_workspace()
    _setup(b.pos, ws)
    last, prev = M.last_moves(b.pos)
    out = np.zeros(M.N_GROUPS, np.int64)
    sc = np.zeros((S_ROWS, L.BOARD_CAP), np.int64)
    context = np.zeros(0) if own is None else np.concatenate([[1.0], own])
    w, c = b.size + 1, int(b.pos[L.SIDE])
    M.candidate_features(ws, sc, np.zeros(2, np.int64), w, b.size, p, c, last, prev, context, out)
    return out


def _oracle(b: GoBoard, p: int) -> dict:
    """The tactical, distance and edge groups read independently from the board by flood fill."""
    size, w = b.size, b.size + 1
    board = b.pos[L.BOARD : L.BOARD + L.BOARD_CAP].copy()
    c = int(b.pos[L.SIDE])
    o = 3 - c
    near = {p + d for d in (1, -1, w, -w)}
    opp = [block(board, w, q) for q in near if board[q] == o]
    own = [block(board, w, q) for q in near if board[q] == c]
    captured = set().union(*[s for s, libs in opp if len(libs) == 1]) if opp else set()
    own_atari = any(len(libs) == 1 for _, libs in own)
    f = {"capture": 0, "escape": 0, "self_atari": 0, "atari": 0}
    if captured:
        f["capture"] = 3 if own_atari else (1 if len(captured) == 1 else 2)
    else:
        board[p] = c
        stones, libs = block(board, w, p)
        for q in near:
            if board[q] == o:
                s, lq = block(board, w, q)
                if len(lq) == 1:
                    f["atari"] = max(f["atari"], 1 if len(s) == 1 else 2)
        board[p] = L.EMPTY
        if own_atari and len(libs) >= 2:
            f["escape"] = 1 if len(libs) >= 3 else (3 if escape_is_laddered(board, w, p, c) else 2)
        elif len(libs) == 1:
            f["self_atari"] = 1 if len(stones) == 1 else 2

    def dist(q):
        if q <= 0 or q == L.PASS:
            return 0
        dx, dy = abs(p % w - q % w), abs(p // w - q // w)
        return min(dx + dy + max(dx, dy), M.DIST_CAP) - 1

    hist = [int(b.pos[L.HIST + L.HIST_STRIDE * i + L.H_MOVE]) for i in range(int(b.pos[L.PLY]))]
    f["last"] = dist(hist[-1]) if hist else 0
    f["prev"] = dist(hist[-2]) if len(hist) > 1 else 0
    x, y = p % w, p // w - 1
    ex, ey = min(x, size - 1 - x, M.EDGE_CAP), min(y, size - 1 - y, M.EDGE_CAP)
    lo, hi = sorted((ex, ey))
    stones_near = any(
        board[(y + dy + 1) * w + x + dx] in (L.BLACK, L.WHITE)
        for dy in range(-2, 3)
        for dx in range(-2, 3)
        if abs(dx) + abs(dy) <= 2 and 0 <= x + dx < size and 0 <= y + dy < size
    )
    f["edge"] = 2 * (hi * (hi + 1) // 2 + lo) + (0 if stones_near else 1)
    return f


@pytest.mark.parametrize("size, plies, seed", [(19, 120, 1), (19, 220, 2), (9, 50, 3), (9, 70, 4)])
def test_features_match_a_flood_fill_reading_of_the_board(size, plies, seed):
    b, _ = _random_game(size, plies, seed)
    legal = [b.parse_vertex(v) for v in b.legal_moves() if v != "pass"]
    seen = set()
    for p in legal:
        f = _features(b, p)
        want = _oracle(b, p)
        got = {
            "capture": f[M.G_CAPTURE],
            "escape": f[M.G_ESCAPE],
            "self_atari": f[M.G_SELF_ATARI],
            "atari": f[M.G_ATARI],
            "last": f[M.G_DIST_LAST],
            "prev": f[M.G_DIST_PREV],
            "edge": f[M.G_EDGE],
        }
        assert got == want, (b.to_string(), b.vertex(p))
        seen |= {k for k, v in want.items() if v and k in ("capture", "self_atari", "atari", "escape")}
    assert {"atari", "self_atari"} <= seen  # the random positions exercise the tactical groups


def _sym_vertex(v: str, size: int, g: int, b: GoBoard) -> str:
    """The vertex v under symmetry g (0..7) of the size x size board (the engine's shapes._transform)."""
    p = b.parse_vertex(v)
    w = size + 1
    x, y = S._transform(g, p % w, p // w - 1, size)
    return b.vertex(L.point(size, x, y))


@pytest.mark.parametrize("seed", [5, 6])
def test_features_are_invariant_under_symmetry_and_colour_swap(seed):
    size = 13
    b, played = _random_game(size, 90, seed)
    for g in range(1, 8):
        for swap in (False, True):
            colours = ("w", "b") if swap else ("b", "w")
            t = GoBoard(size, 7.5)
            for i, v in enumerate(played):
                t.play(colours[i % 2], _sym_vertex(v, size, g, b))
            t.to_move = colours[len(played) % 2]
            for v in b.legal_moves()[:-1]:
                a = _features(b, b.parse_vertex(v))
                c = _features(t, t.parse_vertex(_sym_vertex(v, size, g, b)))
                assert np.array_equal(a, c), (g, swap, v)


def test_probabilities_form_a_softmax_over_the_stone_moves():
    b, _ = _random_game(19, 40, 8)
    moves = np.empty(L.BOARD_CAP + 1, np.int32)
    n = gen_moves(b.pos, moves)
    out = np.empty(n)
    M.move_probabilities(b.pos, new_workspace(), M.new_model(), moves, n, out)
    assert moves[n - 1] == L.PASS and out[n - 1] == 0.0
    assert np.allclose(out[: n - 1], 1.0 / (n - 1))
    model = M.new_model()
    model[M.KEYS + M.OFFSETS[M.G_DIST_LAST] + 1] = 3.0  # next to the last move: e^3 times as likely
    M.move_probabilities(b.pos, new_workspace(), model, moves, n, out)
    assert out.sum() == pytest.approx(1.0)
    last = M.last_moves(b.pos)[0]
    w = b.size + 1
    near = np.array([abs(int(m) - last) in (1, w) for m in moves[: n - 1]])
    assert near.any() and np.allclose(out[: n - 1][near] / out[: n - 1][~near].max(), np.exp(3.0))


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 12, size=(7, 3)).astype(np.int32)
    w = rng.normal(size=12)
    grad = np.zeros(12)
    p = np.empty(8)
    nll, _ = _position_nll(rows, 0, 7, 4, w, p, grad, 1.0)
    s = np.array([w[r].sum() for r in rows])
    assert nll == pytest.approx(np.log(np.exp(s).sum()) - s[4])
    for i in range(12):
        e = np.zeros(12)
        e[i] = 1e-6
        up = _position_nll(rows, 0, 7, 4, w + e, p, np.zeros(0), 0.0)[0]
        down = _position_nll(rows, 0, 7, 4, w - e, p, np.zeros(0), 0.0)[0]
        assert grad[i] == pytest.approx((up - down) / 2e-6, abs=1e-6)


def test_vocabulary_keeps_frequent_shapes_and_weight_indices_look_them_up():
    codes = np.array([9, 400, 9, 10, 400, 9, 7, 5, 5, 400, 400])  # 400 four times, 9 three, 5 twice
    keys = vocabulary(codes, 2, 4, M.NO_KEY12)
    assert list(keys) == [5.0, 9.0, 400.0, M.NO_KEY12]
    assert list(vocabulary(codes, 2, 2, M.NO_KEY12)) == [9.0, 400.0]  # the most frequent when over capacity
    model = M.new_model()
    model[: M.SHAPE12_KEYS] = np.concatenate([keys, np.full(M.SHAPE12_KEYS - 4, M.NO_KEY12)])
    model[M.SHAPE12_KEYS] = float(1 << 40)
    f = np.zeros(M.N_GROUPS, np.int64)
    f[M.G_SHAPE12], f[M.G_SHAPE24], f[M.G_EDGE] = 400, 1 << 40, 3
    M.weight_indices(model, f)
    assert f[M.G_SHAPE12] == M.OFFSETS[M.G_SHAPE12] + 3 and f[M.G_SHAPE24] == M.OFFSETS[M.G_SHAPE24] + 1
    assert f[M.G_EDGE] == M.OFFSETS[M.G_EDGE] + 3 and f[M.G_SHAPE3] == 0
    f[M.G_SHAPE12], f[M.G_SHAPE24] = 10, 1 << 41
    M.weight_indices(model, f)
    assert f[M.G_SHAPE12] == M.OFFSETS[M.G_SHAPE12] and f[M.G_SHAPE24] == M.OFFSETS[M.G_SHAPE24]


def test_model_files_round_trip_and_fail_clearly(tmp_path):
    model = M.new_model()
    model[:2] = [3.0, 17.0]
    model[M.SHAPE12_KEYS : M.SHAPE12_KEYS + 2] = [5.0, float((1 << 47) + 12345)]  # 48-bit keys survive float32
    model[M.KEYS : M.OWN_AT] = np.random.default_rng(1).normal(size=M.N_WEIGHTS).astype(np.float32)
    path = M.save_model(tmp_path / "m.npz", model, note="test")
    back, meta = M.read_model(path)
    assert np.array_equal(back, model) and meta["note"] == "test"
    bad = model.copy()
    bad[:2] = [17.0, 3.0]
    M.save_model(tmp_path / "order.npz", bad)
    with pytest.raises(WeightFileError, match="ascending"):
        M.read_model(tmp_path / "order.npz")
    (tmp_path / "cut.npz").write_bytes(path.read_bytes()[:500])
    with pytest.raises(WeightFileError, match="cut.npz"):
        M.read_model(tmp_path / "cut.npz")
    with pytest.raises(WeightFileError, match="no such file"):
        M.read_model(tmp_path / "none.npz")


def test_the_owner_feature_buckets_the_movers_share_of_the_ownership():
    b, _ = _random_game(9, 10, 3)  # Black to move
    p = b.parse_vertex([v for v in b.legal_moves() if v != "pass"][0])
    own = np.zeros(L.BOARD_CAP)
    assert _features(b, p)[M.G_OWNER] == 0  # no ownership known
    for x, bucket in ((1.0, 9), (-1.0, 1), (0.0, 5), (0.5, 7), (-0.5, 3)):  # 1 + floor(9 (1 + x) / 2), at most 9
        own[p] = x
        assert _features(b, p, own)[M.G_OWNER] == bucket
        w, _ = _random_game(9, 11, 3)  # the same position one move on: White to move sees the colours swapped
        q = w.parse_vertex([v for v in w.legal_moves() if v != "pass"][0])
        own_w = np.zeros(L.BOARD_CAP)
        own_w[q] = -x
        assert _features(w, q, own_w)[M.G_OWNER] == bucket


def test_version_2_model_files_load_with_the_owner_weights_at_zero(tmp_path):
    from usi_engine.weightfile import write_archive

    model = M.new_model()
    model[M.KEYS : M.KEYS + M.N_WEIGHTS_V2] = np.random.default_rng(2).normal(size=M.N_WEIGHTS_V2).astype(np.float32)
    blocks = {
        "keys12": model[: M.SHAPE12_KEYS],
        "keys24_hi": np.floor(model[M.SHAPE12_KEYS : M.KEYS] / M.HALF),
        "keys24_lo": model[M.SHAPE12_KEYS : M.KEYS] % M.HALF,
        "w": model[M.KEYS : M.KEYS + M.N_WEIGHTS_V2],
    }
    write_archive(tmp_path / "v2.npz", blocks, M.FEATURE_SET, 2, 1.0)
    back, _ = M.read_model(tmp_path / "v2.npz")
    assert np.array_equal(back, model) and not M.uses_ownership(back)
    model[M.KEYS + M.OFFSETS[M.G_OWNER] + 1] = -2.0
    assert M.uses_ownership(model)


def test_the_adapter_writes_the_root_ownership_into_the_kernels_model():
    from usi_engine.go.game import GoAdapter, default_params

    b, _ = _random_game(9, 30, 8)
    moves = np.empty(L.BOARD_CAP + 1, np.int32)
    n = gen_moves(b.pos, moves)
    plain = M.new_model()
    adapter = GoAdapter(9, default_params(prior_moves=1.0))
    adapter.set_move_model(plain)
    assert not adapter.update_ownership(b.pos, 64)  # no owner weights: nothing to compute
    model = plain.copy()
    model[M.KEYS + M.OFFSETS[M.G_OWNER] + 1 : M.KEYS + M.OFFSETS[M.G_OWNER] + 10] = np.linspace(-2.0, 2.0, 9)
    adapter.set_move_model(model)
    before = np.empty(n)
    M.move_probabilities(b.pos, new_workspace(), adapter.move_model, moves, n, before)
    assert np.allclose(before[moves[:n] != L.PASS], 1.0 / np.sum(moves[:n] != L.PASS))  # no context: uniform
    assert adapter.update_ownership(b.pos, 64)
    a = WEIGHTS_HEADER + int(adapter.weights[0])  # the model inside the packed weights the kernels read
    seen = adapter.weights[a : a + int(adapter.weights[1])]
    assert np.array_equal(seen, adapter.move_model) and seen[M.OWN_AT] == 1.0
    own = seen[M.OWN_AT + 1 :]
    assert np.all(np.abs(own) <= 1.0) and np.any(own != 0.0)
    black = b.pos[L.BOARD : L.BOARD + L.BOARD_CAP] == L.BLACK
    assert np.mean(own[black]) > 0.0  # Black's stones are mostly Black's at the end
    after = np.empty(n)
    M.move_probabilities(b.pos, new_workspace(), adapter.move_model, moves, n, after)
    stone = moves[:n] != L.PASS
    share = 0.5 * (1.0 + own[moves[:n][stone]] * (1 if b.pos[L.SIDE] == L.BLACK else -1))
    order = np.argsort(share)
    assert np.all(np.diff(after[stone][order]) >= -1e-12)  # the more the mover owns a point, the likelier here


def test_records_parse_with_sgf_coordinates_and_plain_games_only():
    b = GoBoard(19, 7.5)
    moves = parse_moves("(;GM[1]SZ[19]KM[6.5];B[pd];W[dp];B[tt];W[]" + ";B[aa];W[ss]" * 3 + ")", 19)
    assert [b.vertex(int(m)) for m in moves[:4]] == ["Q16", "D4", "pass", "pass"]
    assert b.vertex(int(moves[4])) == "A19" and b.vertex(int(moves[5])) == "T1"
    line = "82259393\t;B[pd];W[dd];B[pp];W[dq];B[do];W[co];B[dp];W[cp];B[eq];W[cn];B[dn]"
    assert len(parse_moves(line, 19)) == 11
    assert parse_moves("(;SZ[19]AB[dd];W[pd]" + ";B[aa];W[ss]" * 5 + ")", 19) is None
    assert parse_moves("(;SZ[9];B[cc]" + ";W[aa];B[ss]" * 5 + ")", 19) is None
    assert parse_moves("(;SZ[19];B[pd];B[dd]" + ";W[aa];B[ss]" * 5 + ")", 19) is None


def _sgf(size: int, moves: list, b: GoBoard) -> str:
    body = ""
    for i, v in enumerate(moves):
        p = b.parse_vertex(v)
        x, y = p % (size + 1), p // (size + 1) - 1
        body += f";{'BW'[i % 2]}[{chr(97 + x)}{chr(97 + size - 1 - y)}]"
    return f"(;GM[1]SZ[{size}]{body})"


def test_fitting_learns_a_local_player_and_writes_a_usable_model(tmp_path, capsys):
    size = 9
    b = GoBoard(size, 7.5)
    for i in range(40):
        (tmp_path / f"g{i:02d}.sgf").write_text(_sgf(size, _random_game(size, 40, 1100 + i, local=True)[1], b))
    out = tmp_path / "m.npz"
    argv = ["go-moves", str(out), "--games", str(tmp_path), "--size", "9", "--test-games", "8", "--epochs", "4"]
    assert learn_main(argv + ["--sample", "0.5", "--lr", "0.1", "--min-count", "2"]) == 0
    text = capsys.readouterr().out
    assert "epoch 4:" in text and "32 training games" in text
    model, meta = M.read_model(out)
    assert meta["size"] == 9 and meta["test_games"] == 8
    assert meta["test_top1"] > 0.2  # uniform over ~40-80 legal moves would be ~2 %
    assert model[M.KEYS + M.OFFSETS[M.G_DIST_LAST] + 1] > 1.0  # "next to the last move" learned
    assert learn_main(["go-moves", str(out), "--games", str(tmp_path), "--size", "9", "--test-games", "40"]) == 2


def test_extraction_gives_each_candidate_its_ownership_bucket_when_asked():
    from learn.go_moves import extract, parse_moves

    b = GoBoard(9, 7.5)
    games = [parse_moves(_sgf(9, _random_game(9, 40, 1200 + i)[1], b), 9) for i in range(2)]
    keeps = [np.ones(len(g), bool) for g in games]
    model = M.new_model()
    rows, starts, played, _ = extract(games, keeps, 9, model)
    assert np.all(rows[:, M.G_OWNER] == M.OFFSETS[M.G_OWNER])  # value 0: no ownership
    rows, starts2, played2, _ = extract(games, keeps, 9, model, owner_playouts=32)
    assert np.array_equal(starts, starts2) and np.array_equal(played, played2)
    values = rows[:, M.G_OWNER] - M.OFFSETS[M.G_OWNER]
    assert values.min() >= 1 and values.max() <= M.OWNER_BUCKETS
    first = values[starts[0] : starts[1]]  # the empty board: every point contested
    assert np.all((first >= 2) & (first <= 8))
    assert len(np.unique(values)) >= 5  # later positions have settled points of both colours


def _teacher_line(b: GoBoard, moves: list, model: np.ndarray) -> tuple[str, np.ndarray]:
    """A teacher file line for the position b reached by moves: the model's probabilities of its stone moves;
    and those probabilities."""
    legal = np.array([b.parse_vertex(v) for v in b.legal_moves() if v != "pass"], np.int32)
    probs = np.empty(len(legal))
    M.move_probabilities(b.pos, new_workspace(), model, legal, len(legal), probs)
    line = {"moves": moves, "probs": {b.vertex(int(m)): float(x) for m, x in zip(legal, probs)}}
    return json.dumps(line), probs


def test_distillation_recovers_a_teacher_of_the_models_own_form(tmp_path, capsys):
    """learn go-moves --teacher: fitted to the move distributions of a planted model (the nearer the opponent's
    last move, the likelier), the fit reproduces them on held-out positions (its KL divergence a small fraction of
    the uniform model's) and the planted distance weights come back up to the softmax's constant."""
    planted = M.new_model()
    d0 = M.KEYS + M.OFFSETS[M.G_DIST_LAST]
    planted[d0 + 1 : d0 + 17] = np.linspace(3.0, -3.0, 16)
    lines, uniform_kl = [], []
    for i in range(160):
        b, moves = _random_game(9, 4 + i % 40, 1300 + i)
        line, q = _teacher_line(b, moves, planted)
        lines.append(line)
        uniform_kl.append(np.log(len(q)) + np.sum(q * np.log(q)))
    teacher = tmp_path / "teacher.jsonl"
    teacher.write_text("\n".join(lines) + "\n")
    out = tmp_path / "m.npz"
    argv = ["go-moves", str(out), "--teacher", str(teacher), "--size", "9", "--test-games", "40", "--epochs", "8"]
    assert learn_main(argv + ["--lr", "0.1", "--batch", "16", "--l2", "0"]) == 0
    text = capsys.readouterr().out
    assert "120 training positions" in text
    kl = float(text.strip().splitlines()[-2].split("test KL ")[1].split()[0])
    assert kl < 0.1 * np.mean(uniform_kl)  # uniform: ~0.5 nats here
    model, meta = M.read_model(out)
    assert meta["teacher"] and meta["test_kl"] == pytest.approx(kl, abs=1e-3)
    fitted = model[d0 + 1 : d0 + 7] - model[d0 + 1]
    assert np.allclose(fitted, planted[d0 + 1 : d0 + 7] - planted[d0 + 1], atol=0.4)  # the common distances


def test_a_teacher_file_names_the_line_it_cannot_use(tmp_path):
    from learn.go_moves import read_teacher

    f = tmp_path / "t.jsonl"
    good = '{"moves": ["E5", "C4"], "probs": {"C5": 3, "D6": 1, "pass": 5}}\n'
    f.write_text(good + '\n{"moves": ["E5", "E5"], "probs": {"C5": 1}}\n')
    with pytest.raises(ValueError, match=r"t.jsonl:3: not a teacher position"):
        read_teacher(f, 9)
    f.write_text(good)
    ((moves, probs),) = read_teacher(f, 9)
    b = GoBoard(9, 7.0)
    assert [b.vertex(int(m)) for m in moves] == ["E5", "C4", "C5"]  # the teacher's first choice appended
    assert {b.vertex(m): x for m, x in probs.items()} == {"C5": 0.75, "D6": 0.25}  # pass left out, normalised
    for bad in (
        '{"moves": ["E5"], "probs": {"E5": 1}}',
        '{"moves": ["E5"]}',
        "[1, 2",
        '{"moves": [], "probs": {"C5": 0}}',
    ):
        f.write_text(bad + "\n")
        with pytest.raises(ValueError, match=r"t.jsonl:1: not a teacher position"):
            read_teacher(f, 9)


def test_expand_amaf_uses_the_learned_prior_with_its_weight():
    from usi_engine.go.game import GoAdapter, default_params

    b, _ = _random_game(19, 30, 12)
    model = M.new_model()
    model[M.KEYS + M.OFFSETS[M.G_DIST_LAST] + 1 : M.KEYS + M.OFFSETS[M.G_DIST_LAST] + 4] = 2.0
    moves = np.empty(L.BOARD_CAP + 1, np.int32)
    n = gen_moves(b.pos, moves)
    want = np.empty(n)
    ws = new_workspace()
    _setup(b.pos, ws)
    moves_prior(b.pos, ws, model, moves, n, want)
    assert want.max() > 0.6 and want.min() >= 0.5
    p = np.empty(n)
    M.move_probabilities(b.pos, new_workspace(), model, moves, n, p)
    root = np.sqrt(p)
    assert np.allclose(want, (0.5 * MOVES_EVEN + MOVES_WINS * root) / (MOVES_EVEN + MOVES_WINS * root))
    for mix in (1.0, 0.0):
        adapter = GoAdapter(19, default_params(prior_moves=mix))
        adapter.set_move_model(model)
        cap = adapter.amaf_capacity(b.pos)
        out_moves, values = np.empty(L.BOARD_CAP + 1, np.int32), np.empty(L.BOARD_CAP + 1)
        flags, prior = np.empty(L.BOARD_CAP + 1, np.int32), np.empty(L.BOARD_CAP + 1)
        trace, tstart = np.empty(cap, np.int32), np.empty(L.BOARD_CAP + 2, np.int64)
        k, _ = expand_amaf(
            b.pos, adapter.weights, adapter.params, seed_rng(1), out_moves, values, flags, prior, trace, tstart
        )
        assert k == n and np.array_equal(out_moves[:n], moves[:n])
        heuristic = np.empty(n)
        move_priors(b.pos, new_workspace(), moves, n, heuristic, False, False)
        veto = (moves[:n] == L.PASS) | (heuristic == PRIOR_EYE) | (heuristic == PRIOR_SELF_ATARI)
        assert veto.sum() >= 1 and np.array_equal(prior[:n][veto], heuristic[veto])  # the vetoes stay
        if mix:
            assert np.allclose(prior[:n][~veto], want[~veto])
        else:
            assert not np.allclose(prior[:n][~veto], want[~veto])


def test_the_move_prior_keeps_the_vetoes_on_filling_an_own_eye_and_passing():
    """Strong players never fill their own eyes, so the model rates it improbable, not terrible (H near 1/2); the
    heuristic's 0.05 stays, below a pass (0.1): at a game's end the engine passes instead of killing itself."""
    from usi_engine.go.game import GoAdapter, default_params

    b = GoBoard(19, 7.5)
    for v in ["A2", "Q16", "B1", "D4", "B2", "Q4"]:
        b.play(b.to_move, v)
    adapter = GoAdapter(19, default_params(prior_moves=1.0))
    adapter.set_move_model(M.read_model(M.shipped_model(19))[0])
    moves = np.array([b.parse_vertex("A1"), L.PASS, b.parse_vertex("K10")], np.int32)
    h = adapter.priors(b.pos, moves)
    assert h[0] == PRIOR_EYE and h[1] == PRIOR_PASS and h[2] > 0.5


def test_gtp_options_load_the_model_on_large_boards_and_survive_a_bad_file(tmp_path, capsys):
    path = M.save_model(tmp_path / "m.npz", M.new_model())
    argv = ["--hash", "1", "--prior-moves", "0.7", "--prior-moves-small", "0", "--move-model", str(path)]
    player = GoPlayer(player_settings(build_parser().parse_args(argv)))
    adapter = player._searcher(19).adapter
    assert adapter.params[P_PRIOR_MOVES] == 0.7 and adapter.move_model is not None
    assert player._searcher(9).adapter.move_model is None  # --prior-moves is the weight of large boards only
    (tmp_path / "bad.npz").write_bytes(b"not an archive")
    argv = ["--hash", "1", "--prior-moves", "1", "--move-model", str(tmp_path / "bad.npz")]
    player = GoPlayer(player_settings(build_parser().parse_args(argv)))
    assert player._searcher(19).adapter.move_model is None
    assert "learned move prior off" in capsys.readouterr().err
    off = GoPlayer(player_settings(build_parser().parse_args(["--hash", "1", "--prior-moves", "0"])))
    assert off._searcher(19).adapter.params[P_PRIOR_MOVES] == 0.0 and off._searcher(19).adapter.move_model is None


def test_the_default_player_uses_each_sizes_shipped_move_prior_in_its_measured_form():
    """19x19: the 19x19 model with 400 shared virtual visits; 9x9: the 9x9 model in Pachi's form, per-move counts
    14 + 210 sqrt(P) of MC visits only, over the heuristic prior's own 10 / 20 (docs/go.md, "Against Pachi")."""
    player = GoPlayer(player_settings(build_parser().parse_args(["--hash", "1"])))
    large = player._searcher(19)
    assert large.adapter.params[P_PRIOR_MOVES] == 1.0 and large.adapter.move_model is not None
    assert (large.options.prior_visits, large.options.prior_amaf) == (400.0, 400.0)
    assert large.options.prior_counts is False
    small = player._searcher(9)
    assert np.array_equal(small.adapter.move_model, M.read_model(M.shipped_model(9))[0])
    assert small.adapter.params[P_PRIOR_MOVES] == 1.0
    assert (small.options.prior_visits, small.options.prior_amaf) == (10.0, 20.0)
    assert small.options.prior_counts is True
    assert (small.adapter.params[P_MOVES_EVEN], small.adapter.params[P_MOVES_WINS]) == (14.0, 210.0)
    assert small.adapter.params[P_MOVES_AMAF] == 0.0
    assert player._searcher(19).options.prior_counts is False  # back to the large board's form
    off = GoPlayer(player_settings(build_parser().parse_args(["--hash", "1", "--prior-moves", "0"])))
    searcher = off._searcher(19)
    assert searcher.adapter.move_model is None and searcher.options.prior_visits == 50.0


def test_prior_moves_small_brings_the_move_prior_to_small_boards_and_leaves_large_ones_alone():
    argv = ["--hash", "1", "--prior-moves", "0", "--prior-moves-small", "0.5", "--prior-counts", "shared"]
    player = GoPlayer(player_settings(build_parser().parse_args(argv)))
    small = player._searcher(9)
    assert small.adapter.move_model is not None and small.adapter.params[P_PRIOR_MOVES] == 0.5
    assert (small.options.prior_visits, small.options.prior_amaf) == (400.0, 400.0)
    large = player._searcher(19)  # the same searcher, another board: the large-board weight, 0 here
    assert large.adapter.move_model is None and large.adapter.params[P_PRIOR_MOVES] == 0.0
    assert player._searcher(9).adapter.params[P_PRIOR_MOVES] == 0.5  # and back
    argv = ["--hash", "1", "--prior-moves-small", "1", "--prior-counts", "per-move"]
    per_move = GoPlayer(player_settings(build_parser().parse_args(argv)))._searcher(9)
    assert per_move.adapter.move_model is not None and per_move.options.prior_visits == 10.0


def test_each_board_gets_the_shipped_model_fitted_to_its_size():
    """Below 15x15 the shipped moves9.npz (fitted to 9x9 games), from 15x15 on moves19.npz; a 9x9 player asking for
    the move prior loads the 9x9 model, and back to 19x19 the 19x19 one. The 9x9 model knows the 9x9 opening: on the
    empty board it gives the four 4-4 points (D4, F4, D6, F6) one probability, far above the 1/81 of a uniform
    guess, and the corner point far below it."""
    assert M.shipped_model(9).name == "moves9.npz" and M.shipped_model(13).name == "moves9.npz"
    assert M.shipped_model(15).name == "moves19.npz" and M.shipped_model(19).name == "moves19.npz"
    nine, nineteen = M.read_model(M.shipped_model(9))[0], M.read_model(M.shipped_model(19))[0]
    argv = ["--hash", "1", "--prior-moves-small", "1"]
    player = GoPlayer(player_settings(build_parser().parse_args(argv)))
    assert np.array_equal(player._searcher(9).adapter.move_model, nine)
    assert np.array_equal(player._searcher(19).adapter.move_model, nineteen)
    assert np.array_equal(player._searcher(9).adapter.move_model, nine)
    b = GoBoard(9, 7.0)
    moves = np.array([b.parse_vertex(v) for v in ("D4", "F4", "D6", "F6", "E5", "A1")], np.int32)
    legal = np.zeros(L.BOARD_CAP + 1, np.int32)
    n = gen_moves(b.pos, legal)
    p = np.zeros(n)
    M.move_probabilities(b.pos, new_workspace(), nine, legal, n, p)
    prob = {int(m): q for m, q in zip(legal[:n], p)}
    corners = [prob[int(m)] for m in moves[:4]]
    assert np.allclose(corners, corners[0]) and corners[0] > 5.0 / 81
    assert prob[int(moves[5])] < 1.0 / 81  # the corner point


@pytest.mark.parametrize("prior_moves", [0.0, 1.0])
def test_root_winrates_leave_out_the_priors_virtual_visits(prior_moves):
    """RAVE starts each edge with C virtual visits of value H (eq. 49): the reported winrate is the edge's real
    MC winrate (H before any real visit), and the adapter's priors are the ones expand_amaf gave."""
    from usi_engine.go.game import GoAdapter, default_params
    from usi_engine.search import layout
    from usi_engine.search.searcher import Searcher
    from usi_engine.search.settings import Limits, SearchOptions
    from usi_engine.search.values import is_proven

    b, _ = _random_game(19, 12, 13)
    adapter = GoAdapter(19, default_params(prior_patterns=True, prior_moves=prior_moves))
    adapter.set_move_model(M.read_model(M.shipped_model(19))[0])
    moves = np.empty(L.BOARD_CAP + 1, np.int32)
    n = gen_moves(b.pos, moves)
    cap = adapter.amaf_capacity(b.pos)
    prior = np.empty(L.BOARD_CAP + 1)
    expand_amaf(
        b.pos, adapter.weights, adapter.params, seed_rng(1), np.empty(L.BOARD_CAP + 1, np.int32),
        np.empty(L.BOARD_CAP + 1), np.empty(L.BOARD_CAP + 1, np.int32), prior, np.empty(cap, np.int32),
        np.empty(L.BOARD_CAP + 2, np.int64),
    )  # fmt: skip
    assert np.allclose(adapter.priors(b.pos, moves[:n]), prior[:n])
    pn = 50.0
    s = Searcher(adapter, SearchOptions(policy="rave", hash_mb=16, seed=1, prior_visits=pn, prior_amaf=pn))
    r = s.search(b.pos, Limits(samples=300), multipv=400)
    t = s.pool.tree
    f, k = int(t[layout.T_FIRST][0]), int(t[layout.T_COUNT][0])
    h = adapter.priors(b.pos, t[layout.T_EMOVE][f : f + k])
    index = {int(m): j for j, m in enumerate(t[layout.T_EMOVE][f : f + k])}
    visited = 0
    for rm in r.root:
        j = index[rm.move]
        real = t[layout.T_RN][f + j] - pn
        if is_proven(float(t[layout.T_VALUE][t[layout.T_ECHILD][f + j]])):
            continue  # a proven result's winrate is 0 or 1
        if real < 0.5:
            assert rm.winrate == h[j]
        else:
            visited += 1
            assert rm.winrate == pytest.approx((t[layout.T_RW][f + j] - pn * h[j]) / real)
    assert visited >= 5 and len(r.root) == k
