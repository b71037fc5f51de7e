"""The shogi move prior (usi_engine/shogi_search/moveprior.py): its features against an independent reading of
the board (attack sets recomputed piece by piece, before and after each move), the must-keep flag against making
the move and quiescence's SEE, the softmax, colour symmetry, model files, and the bench."""

import io

import numpy as np
import pytest

from tests.shogi.random_games import random_games
from usi_engine.cli import bench_main
from usi_engine.shogi import layout as L
from usi_engine.shogi.board import Board
from usi_engine.shogi.movegen import gen_search_moves
from usi_engine.shogi.position import do_move, first_piece, in_check, undo_move
from usi_engine.shogi.sfen import STARTPOS, move_to_usi
from usi_engine.shogi.tables import DISTANCE, KNIGHT_TARGETS, NEIGHBOUR, SLIDE, STEP
from usi_engine.shogi_eval.evalfile import load_weights
from usi_engine.shogi_search import moveprior as M
from usi_engine.shogi_search.moveprior_bench import bench_moveprior
from usi_engine.shogi_search.quiescence import ORDER_VALUE, see
from usi_engine.weightfile import WeightFileError, write_archive


def _positions(seed: int, games: int, every: int = 7) -> list[Board]:
    """Boards along seeded random games (biased to captures, checks, drops, promotions), with their history."""
    out = []
    for moves in random_games(seed, games):
        b = Board()
        for i, u in enumerate(moves):
            if i % every == every - 1:
                out.append(b.copy())
            b.push_usi(u)
    return out


def _search_moves(pos) -> np.ndarray:
    moves = np.empty(L.MAX_MOVES, np.int32)
    return moves[: gen_search_moves(pos, moves)].copy()


def _rows(pos, moves) -> tuple[np.ndarray, np.ndarray]:
    rows = np.empty((len(moves), M.N_GROUPS), np.int64)
    tactical = np.empty(len(moves), np.int8)
    M.position_features(pos, moves, len(moves), rows, tactical)
    return rows - M.OFFSETS[:-1], tactical  # the values v_g(m)


# --- an independent reading of the board ---------------------------------------------------------------------------
def _attacks(board, piece, sq) -> set:
    """Squares the piece on sq attacks on `board` (a list of 81 piece codes), pins ignored."""
    out = set()
    for d in range(8):
        if STEP[piece, d]:
            if NEIGHBOUR[sq, d] >= 0:
                out.add(int(NEIGHBOUR[sq, d]))
        elif SLIDE[piece, d]:
            t = NEIGHBOUR[sq, d]
            while t >= 0:
                out.add(int(t))
                if board[t]:
                    break
                t = NEIGHBOUR[t, d]
    if piece & 15 == L.KNIGHT:
        out |= {int(t) for t in KNIGHT_TARGETS[piece >> 4, sq] if t >= 0}
    return out


def _attackers(board, sq, colour, skip=-1) -> list:
    return [
        s
        for s in range(81)
        if s != skip and board[s] and board[s] >> 4 == colour and sq in _attacks(board, board[s], s)
    ]


def _swing(pt) -> float:
    return M.SEE_VALUES[pt] + M.SEE_VALUES[16 + L.DEMOTE[pt]]


def _oracle(pos, move) -> dict:
    """The feature values of a search move read from the boards before and after it."""
    us, them = int(pos[L.SIDE]), 1 - int(pos[L.SIDE])
    own, ek = int(pos[L.KING_SQ + us]), int(pos[L.KING_SQ + them])
    before = [int(x) for x in pos[L.BOARD : L.BOARD + 81]]
    to, frm, promo = move & 127, (move >> 7) & 127, bool(move & (1 << 14))
    drop = frm > L.DROP_BASE
    if drop:
        piece, mover, pt = frm - L.DROP_BASE + 16 * us, 20 + frm - L.DROP_BASE, 0
    else:
        pt = before[frm] & 15
        piece, mover = before[frm] | (L.PROMOTE if promo else 0), 14 + pt if promo else pt
    victim = before[to] & 15
    after = list(before)
    if not drop:
        after[frm] = 0
    after[to] = piece
    enemy = _attackers(after, to, them)
    friends = _attackers(after, to, us, skip=to)
    if victim:
        value = see(pos, M.SEE_VALUES, move, np.empty(40), np.empty(40, np.int64))
    elif enemy:
        least = min((ORDER_VALUE[after[s] & 15], after[s] & 15) for s in enemy)[1]
        value = -_swing(piece & 15) + (_swing(least) if friends else 0.0)
        value = min(0.0, value)
    else:
        value = 0.0
    direct = ek >= 0 and ek in _attacks(after, piece, to)
    discovered = ek >= 0 and bool(_attackers(after, ek, us, skip=to))
    threats = []
    for t in _attacks(after, piece, to):
        q = before[t]
        if not q or q >> 4 != them or q & 15 == L.KING:
            continue
        if _attackers(before, t, them) and _swing(q & 15) <= _swing(piece & 15):
            continue
        if not drop and t in _attacks(before, before[frm], frm):
            continue
        threats.append((_swing(q & 15), q & 15))
    escape = 0
    if not drop and _attackers(before, frm, them):
        cheaper = min(ORDER_VALUE[before[s] & 15] for s in _attackers(before, frm, them)) < ORDER_VALUE[pt]
        escape = pt + (14 if cheaper or not _attackers(before, frm, us) else 0)
    ply = int(pos[L.PLY])
    last = int(pos[L.HIST + L.HIST_STRIDE * (ply - 1) + L.H_MOVE]) & 127 if ply else -1
    held = int(pos[L.HAND : L.HAND + 16].sum())
    return {
        M.G_SQUARE: mover * 81 + (to if us == 0 else 80 - to),
        M.G_CAPTURE: victim,
        M.G_SEE: 3 * M.N_SEE * mover + M.N_SEE * (0 if victim else 2 if drop else 1) + M.see_class(value),
        M.G_CHECK: 0 if not (direct or discovered) else (mover if not discovered else 28 if not direct else 29),
        M.G_TO_OWN: mover * M.N_DIST + (DISTANCE[to, own] if own >= 0 else M.NO_KING),
        M.G_TO_ENEMY: mover * M.N_DIST + (DISTANCE[to, ek] if ek >= 0 else M.NO_KING),
        M.G_FROM_OWN: 0 if drop else pt * M.N_DIST + (DISTANCE[frm, own] if own >= 0 else M.NO_KING),
        M.G_FROM_ENEMY: 0 if drop else pt * M.N_DIST + (DISTANCE[frm, ek] if ek >= 0 else M.NO_KING),
        M.G_ESCAPE: escape,
        M.G_SUPPORT: 9 * mover + 3 * min(len(enemy), 2) + min(len(friends), 2),
        M.G_LAST: 9 * mover + (0 if last < 0 else 1 + min(DISTANCE[to, last], 3) + (4 if victim else 0)),
        M.G_THREAT: 30 * mover + (max(threats)[1] if threats else 0) + (15 if len(threats) >= 2 else 0),
        M.G_PHASE: 4 * mover + (0 if held == 0 else 1 if held <= 3 else 2 if held <= 7 else 3),
    }


def test_board_tables_match_the_pieces_attack_sets():
    count, low = np.empty((2, 81), np.int64), np.empty((2, 81), np.int64)
    first, prey = np.empty((8, 81), np.int64), np.empty(81)
    for b in _positions(11, 3, every=9):
        M.board_tables(b.pos, count, low, first, prey)
        board = [int(x) for x in b.pos[:81]]
        them = 1 - int(b.pos[L.SIDE])
        for sq in range(81):
            q = board[sq]
            assert prey[sq] == (_swing(q & 15) if q and q >> 4 == them and q & 15 != L.KING else 0.0)
            for d in range(8):
                assert first[d, sq] == first_piece(b.pos, sq, d)
            for c in (0, 1):
                who = _attackers(board, sq, c)
                assert count[c, sq] == len(who)
                assert low[c, sq] == min((16 * ORDER_VALUE[board[s] & 15] + (board[s] & 15) for s in who),
                                         default=M.NO_ATTACKER)  # fmt: skip


# discovered (and double) checks by a rook and a bishop behind a knight and a silver
DISCOVERED = ("4k4/9/9/9/4N4/9/9/9/4R3K b - 1", "8k/9/9/9/4S4/9/9/9/B7K b - 1")


@pytest.mark.parametrize("seed", [21, 22])
def test_features_match_an_independent_reading_of_the_board(seed):
    seen = set()
    for b in _positions(seed, 4) + [Board(s) for s in DISCOVERED]:
        moves = _search_moves(b.pos)
        rows, _ = _rows(b.pos, moves)
        for m, row in zip(moves, rows):
            want = _oracle(b.pos, int(m))
            got = {g: int(row[g]) for g in want}
            assert got == want, (b.sfen(), move_to_usi(m))
            classes = {g: want[g] for g in (M.G_CHECK, M.G_ESCAPE, M.G_CAPTURE)} | {M.G_THREAT: want[M.G_THREAT] % 30}
            seen |= {g for g, v in classes.items() if v}
            seen |= {"discovered"} if want[M.G_CHECK] >= 28 else set()
            seen |= {"hanging"} if want[M.G_ESCAPE] > 14 else set()
            seen |= {"fork"} if want[M.G_THREAT] % 30 > 15 else set()
    assert {M.G_CHECK, M.G_ESCAPE, M.G_THREAT, M.G_CAPTURE, "hanging", "fork", "discovered"} <= seen  # all occur


def test_the_tactical_flag_is_a_check_or_a_capture_that_does_not_lose_material():
    w = load_weights("handmade")
    assert np.array_equal(M.SEE_VALUES, w[:24])  # the hand-made evaluation's material terms
    gains, removed = np.empty(40), np.empty(40, np.int64)
    flagged = 0
    for b in _positions(31, 6, every=3) + [Board("4k4/4g4/9/9/9/9/9/4r4/4K4 b GS 1")]:
        pos = b.pos
        moves = _search_moves(pos)
        _, tactical = _rows(pos, moves)
        scores, flags = np.empty(len(moves)), np.empty(len(moves), np.int8)
        M.move_scores(pos, M.uniform_model(), moves, len(moves), scores, flags)
        assert np.array_equal(flags, tactical)
        for m, flag in zip(moves, tactical):
            m = int(m)
            capture = (m >> 7) & 127 < 81 and pos[L.BOARD + (m & 127)] != 0
            keep = capture and see(pos, w, m, gains, removed) >= 0.0
            do_move(pos, np.int32(m))
            keep = keep or in_check(pos)
            undo_move(pos)
            assert flag == keep, (b.sfen(), move_to_usi(m))
            flagged += int(flag)
    assert flagged > 100


def _probabilities(b: Board, model) -> dict:
    moves = _search_moves(b.pos)
    out = np.empty(len(moves))
    M.move_probabilities(b.pos, model, moves, len(moves), out)
    return {move_to_usi(m): p for m, p in zip(moves, out)}


@pytest.mark.parametrize(
    "sfen",
    [
        "4k4/9/4P4/9/9/9/9/9/9 b G2r2b3g4s4n4l17p 1",  # Black has no king (a mate problem)
        "4k4/4g4/9/9/9/9/9/9/4K4 w RBGSNLPrbgsnlp 1",
        "ln1gk2nl/1r1s1g3/p1pppp1pp/6p2/1p5P1/2P6/PPSPPPP1P/7R1/LN1GKGSNL b Bb 15",
        "4k4/9/9/9/9/9/9/4r4/4K4 b - 1",  # in check
    ],
)
def test_probabilities_sum_to_one_and_zero_weights_are_uniform(sfen):
    b = Board(sfen)
    p = _probabilities(b, M.uniform_model())
    assert len(p) == len(_search_moves(b.pos)) and np.allclose(list(p.values()), 1.0 / len(p))
    model = np.random.default_rng(2).normal(size=M.N_WEIGHTS)
    p = _probabilities(b, model)
    assert sum(p.values()) == pytest.approx(1.0) and min(p.values()) > 0.0
    assert np.array_equal(b.pos, Board(sfen).pos)  # the position is restored


def test_a_feature_weight_multiplies_the_odds_of_the_moves_that_have_it():
    b = Board("4k4/9/9/9/9/9/9/9/4K4 b P 1")
    model = M.uniform_model()
    model[M.OFFSETS[M.G_CHECK] + 21] = np.log(5.0)  # a checking pawn drop: five times as likely
    p = _probabilities(b, model)
    assert p["P*5b"] / p["P*5c"] == pytest.approx(5.0) and p["P*5c"] == pytest.approx(p["5i4h"])


def _mirror_usi(u: str) -> str:
    def sq(s):
        return f"{10 - int(s[0])}{'abcdefghi'[8 - 'abcdefghi'.index(s[1])]}"

    if u[1] == "*":
        return u[:2] + sq(u[2:])
    return sq(u[:2]) + sq(u[2:4]) + u[4:]


def test_probabilities_are_colour_symmetric():
    """The game played with colours swapped and the board turned 180 degrees gives every corresponding move the
    same probability, last-move features included."""
    model = np.random.default_rng(3).normal(size=M.N_WEIGHTS)
    mirrored_start = STARTPOS.replace(" b ", " w ")
    compared = 0
    for moves in random_games(41, 3):
        b, m = Board(), Board(mirrored_start)
        for i, u in enumerate(moves):
            if i % 5 == 0:
                p, q = _probabilities(b, model), _probabilities(m, model)
                assert len(p) == len(q)
                for move, prob in p.items():
                    assert q[_mirror_usi(move)] == pytest.approx(prob, rel=1e-9, abs=1e-15)
                compared += len(p)
            b.push_usi(u)
            m.push_usi(_mirror_usi(u))
    assert compared > 1000


# --- model files ----------------------------------------------------------------------------------------------------
def test_model_files_round_trip_and_bad_files_are_refused_naming_the_file(tmp_path):
    model = np.random.default_rng(4).normal(size=M.N_WEIGHTS)
    path = M.save_model(tmp_path / "m.npz", model, note="test")
    back, meta = M.read_model(path)
    assert np.array_equal(back, model.astype(np.float32)) and meta["note"] == "test"
    assert np.array_equal(M.load_model(path), back)
    (tmp_path / "corrupt.npz").write_bytes(b"not an archive at all")
    (tmp_path / "truncated.npz").write_bytes(path.read_bytes()[:300])
    write_archive(tmp_path / "other.npz", {"w": model}, "go-moves", M.FEATURE_VERSION, 1.0)
    write_archive(tmp_path / "version.npz", {"w": model}, M.FEATURE_SET, M.FEATURE_VERSION + 1, 1.0)
    write_archive(tmp_path / "size.npz", {"w": np.zeros(M.N_WEIGHTS + 3)}, M.FEATURE_SET, M.FEATURE_VERSION, 1.0)
    for name, problem in [
        ("corrupt", "not a readable"),
        ("truncated", "not a readable"),
        ("other", "feature set 'go-moves'"),
        ("version", "version"),
        ("size", "shape"),
        ("missing", "no such file"),
    ]:
        with pytest.raises(ValueError, match=f"{name}.npz.*{problem}"):
            M.load_model(tmp_path / f"{name}.npz")
    with pytest.raises(WeightFileError):
        M.load_model(tmp_path / "truncated.npz")
    with pytest.raises(ValueError, match="shape"):
        M.save_model(tmp_path / "x.npz", np.zeros(5))


def test_the_shipped_model_loads_and_the_bench_beats_a_uniform_guess(capsys):
    model = M.load_model()
    assert model.shape == (M.N_WEIGHTS,) and np.any(model != 0.0)
    out = io.StringIO()
    r = bench_moveprior(out=out)
    assert r["positions"] == 300 and r["moves_per_cpu_s"] > 0 and r["us_per_move"] > 0
    assert r["top1"] > 5 * r["uniform_top1"] and r["top5"] > 3 * r["uniform_top5"] and r["nll"] < r["uniform_nll"]
    assert out.getvalue().splitlines()[-1].startswith("positions=300 ")
    assert bench_main(["moveprior"]) == 0  # `usi-engine bench moveprior`
    assert capsys.readouterr().out.splitlines()[-1].startswith("positions=300 ")
