"""Fitting the shogi move prior (learn/shogi_moves.py): CSA and USI record reading, the likelihood's gradient, the
ranking figures, recovery of a planted model on real positions, and the command end to end on CSA files the test
writes."""

import zipfile

import numpy as np
import pytest

from learn.__main__ import main as learn_main
from learn.match.records import ShogiRecord, write_csa
from learn.movefit import position_nll
from learn.shogi_moves import (
    Data,
    Game,
    _resolve,
    extract,
    fit,
    fit_temperature,
    parse_csa,
    parse_positions,
    parse_usi_lines,
    rank_figures,
    read_games,
    row_scores,
)
from tests.shogi.random_games import random_games
from usi_engine.shogi.position import do_move
from usi_engine.shogi.sfen import STARTPOS, move_to_usi, parse_sfen, usi_to_move
from usi_engine.shogi_search import moveprior as M


def _replayed(game: Game) -> list:
    """The USI moves of a parsed game, promotions resolved on the board as the fitting resolves them."""
    pos = parse_sfen(game.start, history_capacity=len(game.moves) + 4)
    out = []
    for code in game.moves:
        move = _resolve(pos, code)
        out.append(move_to_usi(move))
        do_move(pos, np.int32(move))
    return out


CSA_TEXT = """V2.2
N+alpha
N-beta
'black_rate:alpha:3100.5
'white_rate:beta:2900
$START_TIME:2020/01/01 10:00:00
PI
+
+7776FU,T3
-3334FU
T2
+8822UM
'** a comment, not a move
-3122GI
+0055KA
%TORYO
/
N+gamma
N-delta
PI82HI22KA
-
-5142OU
+7776FU
%CHUDAN
/
P1-KY *  *  *  *  *  *  * -OU
P2 *  *  *  *  *  *  *  *  *
P3 *  *  *  *  *  *  *  * +TO
P4 *  *  *  *  *  *  *  *  *
P5 *  *  *  *  *  *  *  *  *
P6 *  *  *  *  *  *  *  *  *
P7 *  *  *  *  *  *  *  *  *
P8 *  *  *  *  *  *  *  *  *
P9 *  *  *  *  *  *  *  * +OU
P+00KI00FU
P-00AL
+
+0012KI
%TSUMI
"""


def test_csa_records_parse_start_positions_moves_rates_and_endings():
    games = parse_csa(CSA_TEXT)
    assert len(games) == 3
    first, handicap, problem = games
    assert first.start == STARTPOS and first.rates == [3100.5, 2900.0]
    assert _replayed(first) == ["7g7f", "3c3d", "8h2b+", "3a2b", "B*5e"]
    assert handicap.start == "lnsgkgsnl/9/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL w - 1"
    assert _replayed(handicap) == ["5a4b", "7g7f"] and handicap.rates == []
    board, side, hands, _ = problem.start.split()
    assert board == "l7k/9/8+P/9/9/9/9/9/8K" and side == "b"
    assert hands == "GP2r2b3g4s4n3l16p"  # 00AL: every piece left goes to White's hand
    assert _replayed(problem) == ["G*1b"]


def test_csa_written_by_the_match_runner_reads_back_move_for_move(tmp_path):
    for moves in random_games(61, 4):
        text = write_csa(ShogiRecord("a", "b", None, moves, [1] * len(moves), "b", "resign"))
        (game,) = parse_csa(text)
        assert _replayed(game) == moves


def test_game_files_are_filtered_by_rating_and_length_and_read_from_zips_and_usi_lines(tmp_path):
    long_game, short_game = random_games(62, 1, max_plies=60)[0], random_games(63, 1, max_plies=12)[0]
    assert len(long_game) >= 20

    def csa(moves, rates=""):
        text = write_csa(ShogiRecord("a", "b", None, moves, [0] * len(moves), "b", "resign"))
        return text.replace("PI\n", rates + "PI\n")

    (tmp_path / "strong.csa").write_text(csa(long_game, "'black_rate:a:3000\n'white_rate:b:2600\n"))
    (tmp_path / "weak.csa").write_text(csa(long_game, "'black_rate:a:3000\n'white_rate:b:1800\n"))
    (tmp_path / "short.csa").write_text(csa(short_game))
    with zipfile.ZipFile(tmp_path / "more.zip", "w") as z:
        z.writestr("x/1.csa", csa(long_game))
        z.writestr("x/games.txt", "id\tresult=1\tstartpos moves " + " ".join(long_game) + "\nnot a game\n")
    games, dropped = read_games([tmp_path], min_rate=2500, min_plies=20, limit=100)
    assert len(games) == 3 and dropped == 2
    assert all(_replayed(g) == long_game for g in games)
    assert len(read_games([tmp_path], min_rate=2500, min_plies=20, limit=2)[0]) == 2


def test_usi_lines_and_labelled_positions_parse():
    sfen = "ln1gk2nl/1r1s1g3/p1pppp1pp/6p2/1p5P1/2P6/PPSPPPP1P/7R1/LN1GKGSNL b Bb 15"
    (g,) = parse_usi_lines(f"position sfen {sfen} moves 2e2d\n# comment\nstartpos moves 7g7x\n")
    assert g.start == sfen and [move_to_usi(m) for m in g.moves] == ["2e2d"]
    text = f"{sfen}\t2e2d\nsfen {sfen} moves 2e2d\t3d2d\nstartpos\t7g7f\nstartpos\nbad sfen\t7g7f\n"
    labelled = parse_positions(text)
    assert [(g.start, [move_to_usi(m) for m in g.moves], g.label) for g in labelled] == [
        (sfen, ["2e2d"], True),
        (sfen, ["2e2d", "3d2d"], True),
        (STARTPOS, ["7g7f"], True),
    ]


def test_the_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 12, size=(7, 3)).astype(np.int16)
    w = rng.normal(size=12)
    use = np.array([True, False, True])
    grad = np.zeros(12)
    s = np.empty(8)
    nll = position_nll(rows, 0, 7, 4, w, use, s, grad, 1.0)
    scores = w[rows[:, 0]] + w[rows[:, 2]]
    assert nll == pytest.approx(np.log(np.exp(scores).sum()) - scores[4])
    for i in range(12):
        e = np.zeros(12)
        e[i] = 1e-6
        up = position_nll(rows, 0, 7, 4, w + e, use, s, np.zeros(0), 0.0)
        down = position_nll(rows, 0, 7, 4, w - e, use, s, np.zeros(0), 0.0)
        assert grad[i] == pytest.approx((up - down) / 2e-6, abs=1e-6)


def test_rank_figures_count_ties_as_broken_at_random():
    values = np.array([1.0, 1.0, 0.0, 3.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0])
    starts = np.array([0, 3, 10])
    played = np.array([0, 2])  # a move tied for first of three; a move tied for 2nd..7th behind one better
    nll, top1, top5, top10 = rank_figures(values, starts, played, 1.0)
    assert top1 == pytest.approx((0.5 + 0.0) / 2)
    assert top5 == pytest.approx((1.0 + 4 / 6) / 2) and top10 == pytest.approx(1.0)
    want = (np.log(2 * np.e + 1) - 1) + (np.log(np.exp(3) + 6 * np.exp(2)) - 2)
    assert nll == pytest.approx(want / 2)


def _planted(data: Data, w: np.ndarray, rng: np.random.Generator) -> Data:
    """The positions of `data` with the move played drawn from the softmax of a planted model."""
    scores = row_scores(data.rows, w, np.ones(M.N_GROUPS, np.bool_))
    played = np.empty_like(data.played)
    for t in range(data.positions):
        s = scores[data.starts[t] : data.starts[t + 1]]
        p = np.exp(s - s.max())
        played[t] = rng.choice(len(s), p=p / p.sum())
    return Data(data.rows, data.starts, played, data.keys, data.static)


def test_fitting_recovers_a_planted_model_on_real_positions():
    """Moves drawn from a known model over the search moves of real positions: the fit of the planted groups
    predicts held-out draws nearly as well as the truth (the excess -log P of ~370 weights fitted to ~5,000
    positions is about d / 2N = 0.04), and ranks moves as it does."""
    rng = np.random.default_rng(7)
    games = [Game(STARTPOS, [usi_to_move(u) for u in moves]) for moves in random_games(71, 40)]
    planted = np.zeros(M.N_WEIGHTS)
    use = np.zeros(M.N_GROUPS, np.bool_)
    for g in (M.G_CAPTURE, M.G_CHECK, M.G_ESCAPE, M.G_FROM_OWN, M.G_FROM_ENEMY):
        planted[M.OFFSETS[g] : M.OFFSETS[g + 1]] = rng.normal(0.0, 1.0, M.GROUP_SIZES[g])
        use[g] = True
    train = _planted(extract(games[:32], 1.0, rng), planted, rng)
    test = _planted(extract(games[32:], 1.0, rng), planted, rng)
    assert train.positions > 4000
    w, curve = fit(train, test, epochs=12, batch=64, lr=0.05, l2=1e-5, seed=1, use=use, log=lambda _: None)
    truth = rank_figures(row_scores(test.rows, planted, use), test.starts, test.played, 1.0)
    uniform = rank_figures(np.zeros(len(test.rows)), test.starts, test.played, 1.0)
    assert truth[0] < uniform[0] - 0.5 and curve[-1][1] < truth[0] + 0.08
    fitted, true = row_scores(test.rows, w, use), row_scores(test.rows, planted, use)
    centred = [np.concatenate([s[a:b] - s[a:b].mean() for a, b in zip(test.starts[:-1], test.starts[1:])])
               for s in (fitted, true)]  # fmt: skip
    assert np.corrcoef(*centred)[0, 1] > 0.9


def test_baseline_temperature_is_fitted_by_likelihood():
    rng = np.random.default_rng(8)
    counts = rng.integers(5, 40, size=3000)
    starts = np.concatenate([[0], np.cumsum(counts)])
    values = rng.normal(0.0, 100.0, starts[-1])
    played = np.empty(len(counts), np.int64)
    for t, (a, n) in enumerate(zip(starts, counts)):
        p = np.exp(values[a : a + n] / 50.0)
        played[t] = rng.choice(n, p=p / p.sum())
    data = Data(np.zeros((0, M.N_GROUPS), np.int16), starts, played, values, values)
    assert 1.0 / fit_temperature(values, data) == pytest.approx(50.0, rel=0.15)


def _write_csa_games(folder, count: int, seed: int) -> None:
    for i, moves in enumerate(random_games(seed, count, max_plies=70)):
        text = write_csa(ShogiRecord("a", "b", None, moves, [0] * len(moves), "b", "resign"))
        (folder / f"g{i:02d}.csa").write_text(text.replace("PI\n", "'black_rate:a:3200\n'white_rate:b:3100\nPI\n"))


def test_the_command_fits_writes_a_model_and_reports_baselines(tmp_path, capsys):
    games = tmp_path / "games"
    games.mkdir()
    _write_csa_games(games, 24, 81)
    out, fixture = tmp_path / "m.npz", tmp_path / "fixture.txt"
    argv = ["shogi-moves", str(out), "--games", str(games), "--test-games", "8", "--epochs", "2", "--sample", "1.0"]
    assert learn_main(argv + ["--min-plies", "20", "--ablate", "--write-test-positions", str(fixture)]) == 0
    text = capsys.readouterr().out
    assert "24 games (0 filtered out)" in text and "epoch 2:" in text
    for name in ("uniform", "MVV-LVA", "static evaluation", "move prior", "without threat"):
        assert name in text
    model, meta = M.read_model(out)
    assert meta["games"] == 24 and meta["test_units"] == 8 and np.any(model != 0.0)
    assert meta["test"]["move prior"][2] > meta["test"]["uniform"][2]  # top-1 above a uniform guess
    assert set(meta["ablation"]) == set(M.GROUP_NAMES)
    lines = fixture.read_text().splitlines()
    assert 100 < len(lines) <= 300 and all(M.parse_labelled(line) for line in lines)
    # teacher-labelled positions alone: the test positions are drawn from them
    argv_positions = ["shogi-moves", str(out), "--positions", str(fixture), "--test-games", "20", "--epochs", "1"]
    assert learn_main(argv_positions) == 0
    assert f"0 games (0 filtered out), {len(lines)} labelled positions" in capsys.readouterr().out
    assert learn_main(argv[:4] + ["--test-games", "24"]) == 2  # every game would be a test game


def test_the_eval_command_reports_priors_on_held_out_positions(tmp_path, capsys):
    """`shogi-moves-eval` on the bench's fixture: the shipped prior's figures are those `bench moveprior` measures
    there, and an all-zero prior scores exactly as the uniform guess."""
    from learn.shogi_moves import read_positions
    from learn.shogi_moves_eval import evaluate
    from usi_engine.shogi_search import moveprior_bench as B

    uniform = tmp_path / "uniform.npz"
    M.save_model(uniform, M.uniform_model())
    assert learn_main(["shogi-moves-eval", str(M.SHIPPED_MODEL), str(uniform), "--positions", str(B.FIXTURE)]) == 0
    text = capsys.readouterr().out
    assert "0 games (0 filtered out), 300 labelled positions" in text and "top-5" in text
    data = extract(read_positions([B.FIXTURE]), 1.0, np.random.default_rng(0))
    figures = evaluate({"shipped": M.load_model(), "zero": M.uniform_model()}, data)
    positions, moves, counts, played = B.load_fixture()
    scores, tactical = np.zeros(moves.shape), np.zeros(moves.shape, np.int8)
    B._score_all(positions, moves, counts, M.load_model(), 1, scores, tactical)
    nll, top1, top5 = B.accuracy(scores, counts, played)
    assert data.positions == len(counts)
    assert figures["shipped"][1:4] == pytest.approx((nll, top1, top5))
    assert figures["zero"][1:] == pytest.approx(figures["uniform"][1:]) and figures["shipped"][2] > 0.25
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a model")
    assert learn_main(["shogi-moves-eval", str(bad), "--positions", str(B.FIXTURE)]) == 2
    assert "bad.npz" in capsys.readouterr().err
