"""Go on the shared search core: GoAdapter (tree-reuse paths, move text), expand_amaf (priors, traces),
MCSS / UCT / RAVE finding tactical moves, superko moves never in the tree, and the search benchmark."""

import numpy as np
import pytest
from test_rules import _triple_ko

from usi_engine.go import GoBoard, playout
from usi_engine.go import layout as L
from usi_engine.go.game import (
    MAX_MOVES,
    P_PLAYOUT_POLICY,
    P_RAVE_CHILDREN,
    RAVE_NONE,
    RAVE_POLICY,
    RAVE_TOP,
    RAVE_UNIFORM,
    GoAdapter,
    default_params,
    expand_amaf,
    leaf_playout,
)
from usi_engine.go.player import GoPlayer
from usi_engine.go.playout import seed_rng
from usi_engine.go.workspace import WS_ROWS
from usi_engine.gtp import analysis_line
from usi_engine.gtp_options import build_parser, player_settings
from usi_engine.search import layout
from usi_engine.search.result import RootMove, SearchResult
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions
from usi_engine.search.values import MATE


def board_from(rows, komi=0.5, to_move="b"):
    """GoBoard from text rows (top row first; X black, O white, . empty), `to_move` to play."""
    size = len(rows)
    b = GoBoard(size, komi)
    for y, row in enumerate(reversed(rows)):
        for x, ch in enumerate(row.replace(" ", "")):
            if ch in "XO":
                b.play("b" if ch == "X" else "w", b.vertex(L.point(size, x, y)))
    b.to_move = to_move
    b.pos[L.KO] = 0
    return b


def test_path_since_follows_the_game_and_refuses_other_games():
    b = GoBoard(9, 7.0)
    old = b.pos.copy()
    for v in ("e5", "c3", "pass"):
        b.play(b.to_move, v)
    moves = GoAdapter.path_since(old, b.pos)
    assert [GoAdapter(9).move_to_str(m) for m in moves] == ["E5", "C3", "pass"]
    assert GoAdapter.path_since(b.pos, b.pos) == []
    assert GoAdapter.path_since(b.pos, old) is None  # backwards
    other = GoBoard(9, 6.5)
    assert GoAdapter.path_since(other.pos, GoBoard(9, 7.0).pos) is None  # komi changed
    c = GoBoard(9, 7.0)
    start = c.pos.copy()
    c.play("b", "e5")
    c.play("b", "d5")  # same colour twice (GTP)
    assert GoAdapter.path_since(start, c.pos) is None


def test_expand_amaf_reports_priors_and_playout_traces():
    b = board_from(
        [". . . . .", ". . . . .", "O X O . .", ". O . . .", ". . . . ."], to_move="w"
    )  # the black stone B3 is in atari: B4 captures
    pos = b.pos.copy()
    n_max = MAX_MOVES
    moves, values = np.zeros(n_max, np.int32), np.zeros(n_max)
    flags, prior = np.zeros(n_max, np.int8), np.zeros(n_max)
    cap = int(3 * 25)
    trace, tstart = np.zeros(n_max * cap, np.int32), np.zeros(n_max + 1, np.int64)
    params = default_params(rave_playouts=0)  # a playout from every child
    n, work = expand_amaf(pos, np.zeros(1), params, seed_rng(5), moves, values, flags, prior, trace, tstart)
    assert np.array_equal(L.live_state(pos), L.live_state(b.pos))  # pos unchanged
    vertices = [b.vertex(int(m)) for m in moves[:n]]
    assert vertices == b.legal_moves()
    assert np.all(np.isin(values[:n], (-1000.0, 0.0, 1000.0)))
    assert np.all((prior[:n] >= 0) & (prior[:n] <= 1))
    assert prior[vertices.index("B4")] == playout.PRIOR_CAPTURE
    assert prior[vertices.index("pass")] == playout.PRIOR_PASS
    assert np.all(np.diff(tstart[: n + 1]) >= 0) and np.diff(tstart[: n + 1]).max() <= cap
    assert work >= tstart[n] > 0
    played = trace[: tstart[n]]
    assert np.all((played == layout.NO_MOVE) | ((played > 0) & (played < L.BOARD_CAP)))
    assert np.all(played != L.PASS)  # passes are NO_MOVE
    n, _ = expand_amaf(
        pos, np.zeros(1), default_params(rave_playouts=4), seed_rng(6), moves, values, flags, prior, trace, tstart
    )  # 4 random children + the capture
    simulated = (flags[:n] & layout.FLAG_NO_SIM) == 0
    assert 4 <= simulated.sum() <= 5 and simulated[vertices.index("B4")]
    assert np.all(np.diff(tstart[: n + 1])[~simulated] == 0)
    assert np.allclose(values[:n][~simulated], 1000.0 * (1.0 - 2.0 * prior[:n][~simulated]))


def _midgame(seed, size=9, plies=30):
    """A position after `plies` seeded playout-policy moves on an empty board (patterns on)."""
    b = GoBoard(size, 7.0)
    rng = seed_rng(seed)
    ws = np.empty((WS_ROWS, L.BOARD_CAP), np.int64)
    first = np.zeros(1, np.int64)
    policy = playout.playout_policy(True, False)
    for _ in range(plies):
        playout.first_moves(b.pos, ws, rng, policy, playout.NO_GAMMAS, first)
        if first[0] == L.PASS:
            break
        b.play(b.to_move, b.vertex(int(first[0])))
    return b


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_first_moves_are_the_first_moves_of_playouts(seed):
    """first_moves draws what a playout from the same position and rng state plays first, and leaves pos alone."""
    b = _midgame(seed)
    pos = b.pos.copy()
    ws = np.empty((WS_ROWS, L.BOARD_CAP), np.int64)
    policy = playout.playout_policy(True, True)
    for k in range(20):
        draw = np.zeros(1, np.int64)
        playout.first_moves(pos, ws, seed_rng(100 + k), policy, playout.NO_GAMMAS, draw)
        trace = np.zeros(300, np.int32)
        playout.run_playout(pos, ws, seed_rng(100 + k), 243, np.empty(0), np.empty(0), trace, policy)
        assert draw[0] == trace[0]
    assert np.array_equal(pos, b.pos)


def test_policy_children_follow_the_playout_policy():
    """With rave_children=RAVE_POLICY, expand_amaf simulates the tactical children and the children the policy's
    first-move draws pick: with one draw, exactly the child first_moves draws from the same rng state (nothing
    before the draw uses the rng). In a position where the policy answers the last move locally (a few candidate
    points), the simulated children are those few, where a uniform draw would spread over ~50."""
    b = _midgame(12, plies=33)
    pos = b.pos.copy()
    ws = np.empty((WS_ROWS, L.BOARD_CAP), np.int64)
    params = default_params(rave_playouts=1, playout_patterns=True, rave_children=RAVE_POLICY)
    policy = int(params[P_PLAYOUT_POLICY])
    support = np.zeros(400, np.int64)
    playout.first_moves(pos, ws, seed_rng(999), policy, playout.NO_GAMMAS, support)
    support = set(support.tolist())
    assert 2 <= len(support) <= 5  # the position's local answers
    n_max = MAX_MOVES
    moves, values = np.zeros(n_max, np.int32), np.zeros(n_max)
    flags, prior = np.zeros(n_max, np.int8), np.zeros(n_max)
    trace, tstart = np.zeros(n_max * 243, np.int32), np.zeros(n_max + 1, np.int64)
    hits = set()
    for k in range(200):
        n, _ = expand_amaf(pos, np.zeros(1), params, seed_rng(k + 1), moves, values, flags, prior, trace, tstart)
        simulated = set(np.flatnonzero((flags[:n] & layout.FLAG_NO_SIM) == 0))
        tactical = {i for i in range(n) if prior[i] in (playout.PRIOR_CAPTURE, playout.PRIOR_ESCAPE)}
        draw = np.zeros(1, np.int64)
        playout.first_moves(pos, ws, seed_rng(k + 1), policy, playout.NO_GAMMAS, draw)
        drawn = {i for i in range(n) if moves[i] == draw[0]}
        assert simulated == tactical | drawn
        hits |= {int(moves[i]) for i in simulated - tactical}
    assert n > 40 and hits == support - {int(moves[i]) for i in tactical}
    assert np.array_equal(L.live_state(pos), L.live_state(b.pos))


def test_policy_children_simulate_at_most_the_draws_plus_tactics():
    """RAVE_POLICY with 4 draws: between 1 and 4 + tactical children simulated (draws of one child collapse), and
    the simulated children carry playout traces, the others their prior."""
    b = board_from(
        [". . . . .", ". . . . .", "O X O . .", ". O . . .", ". . . . ."], to_move="w"
    )  # B4 captures the black stone in atari
    pos = b.pos.copy()
    n_max = MAX_MOVES
    moves, values = np.zeros(n_max, np.int32), np.zeros(n_max)
    flags, prior = np.zeros(n_max, np.int8), np.zeros(n_max)
    trace, tstart = np.zeros(n_max * 75, np.int32), np.zeros(n_max + 1, np.int64)
    params = default_params(rave_playouts=4, playout_patterns=True, rave_children=RAVE_POLICY)
    vertices = None
    for k in range(30):
        n, _ = expand_amaf(pos, np.zeros(1), params, seed_rng(k + 1), moves, values, flags, prior, trace, tstart)
        vertices = vertices or [b.vertex(int(m)) for m in moves[:n]]
        simulated = (flags[:n] & layout.FLAG_NO_SIM) == 0
        assert 1 <= simulated.sum() <= 5 and simulated[vertices.index("B4")]
        assert np.all(np.diff(tstart[: n + 1])[~simulated] == 0)
        assert np.allclose(values[:n][~simulated], 1000.0 * (1.0 - 2.0 * prior[:n][~simulated]))


def test_the_rave_children_option_reaches_the_kernel():
    """--rave-children policy sets P_RAVE_CHILDREN to RAVE_POLICY, none to RAVE_NONE; uniform (RAVE_UNIFORM) is the
    default. --expand-after E reaches the search's expand_visits (default 0: expand at the first visit)."""
    cases = (
        ([], RAVE_UNIFORM, 0),
        (["--rave-children", "policy"], RAVE_POLICY, 0),
        (["--rave-children", "none", "--expand-after", "8"], RAVE_NONE, 8),
        (["--rave-children", "top"], RAVE_TOP, 0),
    )
    for argv, want, expand in cases:
        player = GoPlayer(player_settings(build_parser().parse_args(["--hash", "1", *argv])))
        searcher = player._searcher(9)
        assert searcher.adapter.params[P_RAVE_CHILDREN] == want
        assert searcher.options.expand_visits == expand
    for bad in (["--rave-children", "best"], ["--expand-after", "-1"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(bad)


def _expansion(b, params, adapter=None, seed=1):
    """expand_amaf of b's position: (moves, values, flags, prior, counts) of its n children."""
    n_max = MAX_MOVES
    moves, values = np.zeros(n_max, np.int32), np.zeros(n_max)
    flags, prior = np.zeros(n_max, np.int8), np.zeros(n_max)
    trace, tstart = np.zeros(n_max * 243, np.int32), np.zeros(n_max + 1, np.int64)
    counts = np.full((2, n_max), -1.0)
    weights = np.zeros(1) if adapter is None else adapter.weights
    pos = b.pos.copy()
    n, _ = expand_amaf(pos, weights, params, seed_rng(seed), moves, values, flags, prior, trace, tstart, counts)
    assert np.array_equal(L.live_state(pos), L.live_state(b.pos))
    return moves[:n].copy(), values[:n].copy(), flags[:n].copy(), prior[:n].copy(), counts[:, :n].copy()


def test_children_in_prior_order_are_the_same_children_sorted():
    """order_prior: expand_amaf gives the same children with the same priors and prior counts, sorted by the prior
    H, highest first, equal priors in move order (the order progressive widening lets them in), with the shipped
    9x9 move prior in Pachi's form (per-child counts) and with the heuristic prior alone."""
    from usi_engine.go import moveprior
    from usi_engine.go.game import P_MOVES_EVEN, P_MOVES_WINS, P_PRIOR_COUNTS, P_PRIOR_MOVES, moves_form

    b = _midgame(3, plies=24)
    for learned in (True, False):
        kw = dict(rave_children=RAVE_NONE, playout_patterns=True, prior_patterns=True)
        plain, ordered = default_params(**kw), default_params(order_prior=True, **kw)
        adapter = GoAdapter(9, plain)
        if learned:
            adapter.set_move_model(moveprior.read_model(moveprior.shipped_model(9))[0])
            for p in (plain, ordered):
                p[P_PRIOR_MOVES], p[P_PRIOR_COUNTS] = 1.0, 1.0
                p[P_MOVES_EVEN], p[P_MOVES_WINS] = moves_form(9)
        m0, v0, f0, p0, c0 = _expansion(b, plain, adapter)
        m1, v1, f1, p1, c1 = _expansion(b, ordered, adapter)
        index = {int(m): i for i, m in enumerate(m0)}
        perm = np.array([index[int(m)] for m in m1])
        assert sorted(perm.tolist()) == list(range(len(m0)))  # the same children
        assert np.array_equal(p1, p0[perm]) and np.array_equal(v1, v0[perm]) and np.array_equal(f1, f0[perm])
        if learned:
            assert np.array_equal(c1, c0[:, perm]) and len(set(np.round(p1, 9))) > 10
        assert np.all(np.diff(p1) <= 0.0)  # highest first
        ties = np.diff(p1) == 0.0
        assert np.all(np.diff(perm)[ties] > 0)  # equal priors in move order


def test_top_children_are_simulated_with_the_tactical_ones():
    """RAVE_TOP: expand_amaf simulates the P_RAVE_PLAYOUTS children of the highest prior and every tactical child
    (capture, atari escape), whatever the children's order; the rest keep their prior as value."""
    b = board_from(
        [". . . . .", ". . . . .", "O X O . .", ". O . . .", ". . . . ."], to_move="w"
    )  # B4 captures the black stone in atari
    for order in (False, True):
        params = default_params(rave_playouts=2, rave_children=RAVE_TOP, prior_patterns=True, order_prior=order)
        heuristic = _expansion(b, default_params(rave_children=RAVE_NONE, prior_patterns=True))[3]
        moves, values, flags, prior, _ = _expansion(b, params)
        simulated = (flags & layout.FLAG_NO_SIM) == 0
        order_index = np.argsort(-prior, kind="mergesort")
        tactical = np.isin(prior, (playout.PRIOR_CAPTURE, playout.PRIOR_ESCAPE))
        want = tactical.copy()
        want[order_index[:2]] = True
        assert np.array_equal(simulated, want) and tactical.sum() == 1
        assert np.allclose(values[~simulated], 1000.0 * (1.0 - 2.0 * prior[~simulated]))
        assert sorted(prior.tolist()) == sorted(heuristic.tolist())


def test_the_widening_options_reach_the_search():
    """--widen W --widen-visits V --widen-growth G set the search's widen_k0, widen_a, widen_b and put the children in
    prior order (P_ORDER_PRIOR); by default widening is off and the children keep move order; bad values are refused.
    A 9x9 search with widening leaves real visits only on the root's first k(N) children."""
    from usi_engine.go.game import P_ORDER_PRIOR

    off = GoPlayer(player_settings(build_parser().parse_args(["--hash", "1"])))._searcher(9)
    assert off.options.widen_k0 == 0 and off.adapter.params[P_ORDER_PRIOR] == 0.0
    argv = ["--hash", "16", "--widen", "2", "--widen-visits", "10", "--widen-growth", "2", "--playouts", "3000"]
    player = GoPlayer(player_settings(build_parser().parse_args(argv)))
    searcher = player._searcher(9)
    opt = searcher.options
    assert (opt.widen_k0, opt.widen_a, opt.widen_b) == (2, 10.0, 2.0) and searcher.adapter.params[P_ORDER_PRIOR] == 1
    board = GoBoard(9, 7.0)
    board.play("b", "E5")
    searcher.search(board.pos.copy(), Limits(children=3000))
    t = searcher.pool.tree
    f, n = int(t[layout.T_FIRST][0]), int(t[layout.T_COUNT][0])
    real = t[layout.T_RN][f : f + n] - t[layout.T_RC][f : f + n]
    width = 2 + int(np.floor(np.log(1.0 + real.sum() / 10.0) / np.log(2.0)))
    assert 3 < width < n and real[:width].sum() > 0.9 * real.sum()
    assert np.all(real[width:] < 1.5)  # at most the expansion's own playout beyond the width
    for bad in (["--widen", "-1"], ["--widen-visits", "0"], ["--widen-growth", "1"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(bad)


def test_none_children_leave_every_child_to_its_prior():
    """RAVE_NONE: expand_amaf runs no playout, not even for the capture: every child is FLAG_NO_SIM, valued by its
    prior, with no trace."""
    b = board_from([". . . . .", ". . . . .", "O X O . .", ". O . . .", ". . . . ."], to_move="w")
    n_max = MAX_MOVES
    moves, values = np.zeros(n_max, np.int32), np.zeros(n_max)
    flags, prior = np.zeros(n_max, np.int8), np.zeros(n_max)
    trace, tstart = np.zeros(n_max * 75, np.int32), np.zeros(n_max + 1, np.int64)
    params = default_params(rave_children=RAVE_NONE)
    n, work = expand_amaf(b.pos.copy(), np.zeros(1), params, seed_rng(1), moves, values, flags, prior, trace, tstart)
    assert n > 10 and work == 0 and tstart[n] == 0
    assert np.all(flags[:n] & layout.FLAG_NO_SIM)
    assert np.allclose(values[:n], 1000.0 * (1.0 - 2.0 * prior[:n]))
    assert playout.PRIOR_CAPTURE in prior[:n]


def test_a_go_leaf_playout_is_a_playout_of_the_position():
    """game.leaf_playout plays the playout policy from pos itself (the same moves as run_playout with the same rng
    state; passes traced as NO_MOVE), values it from the side to move and leaves pos alone."""
    b = _midgame(5, plies=20)
    pos = b.pos.copy()
    params = default_params(playout_patterns=True)
    policy = int(params[P_PLAYOUT_POLICY])
    ws = np.empty((WS_ROWS, L.BOARD_CAP), np.int64)
    for k in range(10):
        trace = np.zeros(300, np.int32)
        value, tlen, work = leaf_playout(pos, np.zeros(1), params, seed_rng(k + 1), trace)
        want = np.zeros(300, np.int32)
        score, moves = playout.run_playout(pos, ws, seed_rng(k + 1), 243, np.empty(0), np.empty(0), want, policy)
        assert tlen == work == moves
        assert np.array_equal(trace[:tlen], np.where(want[:moves] == L.PASS, layout.NO_MOVE, want[:moves]))
        black = 1.0 if score > 0 else 0.0 if score < 0 else 0.5
        mover = black if pos[L.SIDE] == L.BLACK else 1.0 - black
        assert value == 1000.0 * (2.0 * mover - 1.0)
    assert np.array_equal(pos, b.pos)


CAPTURE = [
    ". . . . . . .",
    ". . . . . . .",
    "X X X X X X X",
    "O O O O O O X",
    "X X X X X O X",
    ". . . . X O X",
    ". . . . X . X",
]  # White's 8-stone block has one liberty (F1)


def test_rave_prefers_the_capture():
    b = board_from(CAPTURE, komi=0.5)
    s = Searcher(GoAdapter(7), SearchOptions(policy="rave", hash_mb=16, seed=3))
    r = s.search(b.pos, Limits(samples=40))
    assert r.best_move_str == "F1"
    assert r.root and r.root[0].move == r.best_move and 0.5 < r.root[0].winrate <= 1.0


@pytest.mark.parametrize("policy", ["softmax", "uct", "rave"])
@pytest.mark.parametrize("komi,winner", [(0.5, "b"), (40.5, "w")])
def test_every_policy_proves_the_two_pass_ending(policy, komi, winner):
    """White has passed; Black's pass ends the game with the exact Tromp-Taylor result, a proven value
    (Black leads by 32 points): with komi 0.5 Black passes and the root is a proven win; with komi 40.5 the
    pass loses, so it is never the answer."""
    b = board_from(CAPTURE, komi=komi)
    b.play("w", "pass")
    s = Searcher(
        GoAdapter(7, default_params(playouts=2)),
        SearchOptions(policy=policy, hash_mb=16, seed=3, t_sel=300, t_back=300, c_uct=300),
    )
    r = s.search(b.pos, Limits(samples=30))
    if winner == "b":
        assert r.best_move_str == "pass" and r.proven and r.value == MATE - 1
    else:
        assert r.best_move_str != "pass"
        t = s.pool.tree
        f, n = int(t[layout.T_FIRST][0]), int(t[layout.T_COUNT][0])
        passes = [int(t[layout.T_ECHILD][e]) for e in range(f, f + n) if t[layout.T_EMOVE][e] == L.PASS]
        assert t[layout.T_VALUE][passes[0]] == MATE  # White has won after the pass


def test_superko_moves_never_enter_the_tree():
    """After a triple-ko cycle (test_rules) White's last recapture would repeat the start board: it is no
    root child; the root's children are exactly the legal moves."""
    b, kos = _triple_ko("positional")
    for colour, vert in [("b", kos[0][1]), ("w", kos[1][0]), ("b", kos[2][1]), ("w", kos[0][0]), ("b", kos[1][1])]:
        b.play(colour, vert)
    legal = set(b.legal_moves())
    assert kos[2][0] not in legal
    s = Searcher(GoAdapter(b.size), SearchOptions(policy="rave", hash_mb=8, seed=1))
    s.search(b.pos, Limits(samples=30))
    t = s.pool.tree
    f, n = int(t[layout.T_FIRST][0]), int(t[layout.T_COUNT][0])
    assert {b.vertex(int(m)) for m in t[layout.T_EMOVE][f : f + n]} == legal


def visited_line(searcher, min_visits):
    """The root's most visited line under RAVE (edges' real MC simulations), as long as each edge has at least
    `min_visits`."""
    t, line, node = searcher.pool.tree, [], 0
    while (t[layout.T_STATE][node] & layout.PHASE_MASK) == layout.EXPANDED and t[layout.T_COUNT][node] > 0:
        f, n = int(t[layout.T_FIRST][node]), int(t[layout.T_COUNT][node])
        visits = t[layout.T_RN][f : f + n] - searcher.options.prior_visits
        e = f + int(np.argmax(visits))
        if visits[e - f] < min_visits:
            break
        line.append(int(t[layout.T_EMOVE][e]))
        node = int(t[layout.T_ECHILD][e])
    return line


@pytest.mark.parametrize("graph", [False, True])
def test_a_prune_keeps_the_line_the_search_visits_on_19x19(graph):
    """A prune ranks nodes by the share of the samples that reach them under the tree policy (RAVE, the GTP
    default: the edges' MC simulations). Ranked by the softmax of the values at T_sel instead, which is near
    uniform over 361 moves, every node a few plies deep looked improbable and the line the search had spent
    its samples on was cut."""
    s = Searcher(GoAdapter(19), SearchOptions(policy="rave", hash_mb=16, seed=1, t_sel=300.0, graph=graph))
    s.search(L.new_pos(19, 7.5), Limits(samples=300))
    line = visited_line(s, 8)
    assert len(line) >= 3
    kept, _ = s.pool.prune(s.options.t_sel, s.options.prior_visits, fraction=0.25)
    assert kept < s.pool.node_capacity * 0.25 + MAX_MOVES
    assert visited_line(s, 8) == line


def test_a_19x19_search_with_a_small_pool_uses_its_time():
    """The GTP default (RAVE, graph) on 19x19, where every expansion stores ~360 children: a pool that is
    full after ~70 expansions is pruned and the search goes on to its time limit."""
    s = Searcher(GoAdapter(19), SearchOptions(policy="rave", hash_mb=4, seed=1, t_sel=300.0))
    r = s.search(L.new_pos(19, 7.5), Limits(time_ms=1500))
    assert r.time_ms >= 1450 and s.prunes >= 1
    assert r.best_move is not None and r.root[0].visits >= 4


def test_search_bench_prints_a_key_value_line():
    from usi_engine.go.bench import measure_search

    pps, sps, line = measure_search(size=5, seconds=0.5, policy="rave")
    assert pps > 0 and 0 < sps < pps  # a sample simulates at least one child
    assert line.split()[-1].startswith("search_playouts_per_sec=")


def test_search_bench_compares_the_move_prior_with_the_search_without_it(capsys):
    from usi_engine.go.bench import main

    main(["--size", "7", "--seconds", "0.3", "--search", "--move-prior"])
    without, with_prior, ratio = capsys.readouterr().out.strip().splitlines()[-3:]
    assert "move_prior=0" in without.split() and "move_prior=1" in with_prior.split()
    assert ratio.startswith("move_prior_speed_ratio=") and float(ratio.split("=")[1]) > 0


def test_search_bench_compares_leaf_playouts_with_the_default_expansion(capsys):
    """--expand-after E: the second search plays leaf playouts (one per sample until an edge has E), so it runs
    more samples per playout than the default expansion, which simulates several children per sample."""
    from usi_engine.go.bench import main

    main(["--size", "7", "--seconds", "0.3", "--search", "--expand-after", "4"])
    without, with_leaf, ratio = capsys.readouterr().out.strip().splitlines()[-3:]
    assert "expand_after=0" in without.split() and "expand_after=4" in with_leaf.split()

    def field(line, key):
        return float(next(t for t in line.split() if t.startswith(key + "=")).split("=")[1])

    assert field(with_leaf, "samples") / field(with_leaf, "playouts") > field(without, "samples") / field(
        without, "playouts"
    )
    assert ratio.startswith("expand_after_sample_ratio=") and float(ratio.split("=")[1]) > 0


@pytest.mark.parametrize("name", ["ladders", "moggy", "sacrifice"])
def test_bench_times_a_playout_rule_against_the_playouts_without_it(capsys, name):
    """`--ladders-ratio 1`: the ladder check against the playouts without it; `--moggy-ratio 1`: Pachi's moggy
    patterns against MoGo's; `--sacrifice-ratio 1`: the killing sacrifices against the playouts without them."""
    from usi_engine.go.bench import main

    main(["--size", "9", "--seconds", "0.1", f"--{name}-ratio", "1"])
    off, on, ratio = capsys.readouterr().out.strip().splitlines()[-3:]
    assert f"{name}=0" in off.split() and f"{name}=1" in on.split()
    assert ratio.startswith(f"{name}_speed_ratio=") and 0 < float(ratio.split("=")[1]) < 5


def test_a_playout_limit_counts_each_search_afresh_under_tree_reuse():
    """Limits(children=N) (GTP --playouts) stops a search once N children were evaluated in it, also when the tree
    it reuses comes from a search that evaluated more than N (the count is the new search's, not the pool's; a
    watcher thread that read the pool's count before the new search reset it stopped searches at once)."""
    b = GoBoard(9, 7.0)
    s = Searcher(GoAdapter(9, default_params(playout_patterns=True)), SearchOptions(policy="rave", hash_mb=64, seed=2))
    first = s.search(b.pos, Limits(children=6000))
    assert 6000 <= first.children < 6000 + 400
    b.play("b", first.best_move_str)
    b.play("w", GoAdapter(9).move_to_str(first.pv[1]))
    second = s.search(b.pos, Limits(children=1500))
    assert second.reused_nodes > 0  # the subtree of the two moves was kept, with its playouts
    assert 1500 <= second.children < 1500 + 400


# A game of `--playout-patterns moggy` against Pachi (2026-11-30) whose 69th move, chosen by the graph search after
# tree reuse, was A5: a move that repeats an earlier position (positional superko).
SUPERKO_GAME = (
    "fd ef gf gg hg fg dd hf he ge gd ff cf hd hc ie bg ec ed cb dc db eb bd bb cc ba be bc cd bf de ce fb fc ea gb "
    "ab fa ac da ca ae aa bb ch dh dg df ee cg bh eg eh dg fh di af ba ah ag ei bi ic ib hh ad af"
)


def test_the_move_played_is_the_best_legal_one_under_positional_superko():
    """A search whose best move is forbidden by positional superko on the game's history (a transposed node's
    children come from another path): the player plays the best legal root move instead; a pass ranked first stays
    first, and a board where only the pass is left gives the pass. lz-analyze leaves the forbidden move out."""
    b = GoBoard(9, 7.0)
    for i, sgf in enumerate(SUPERKO_GAME.split()):
        b.play("bw"[i % 2], "ABCDEFGHJ"[ord(sgf[0]) - 97] + str(9 - (ord(sgf[1]) - 97)))
    a5, a6 = b.parse_vertex("A5"), b.parse_vertex("A6")
    assert not b.is_legal("b", "A5") and b.is_legal("b", "A6")

    def result(*moves):
        root = [RootMove(m, 10, 0.5, 0.1, []) for m in moves]
        return SearchResult(moves[0], None, 0.0, False, root=root)

    assert GoPlayer.legal_choices(b, L.BLACK, result(a5, a6, L.PASS)) == [a6, L.PASS]
    assert GoPlayer.legal_choices(b, L.BLACK, result(L.PASS, a5, a6)) == [L.PASS, a6]
    assert GoPlayer.legal_choices(b, L.BLACK, result(a5)) == [L.PASS]
    line = analysis_line(b, L.BLACK, result(a5, a6, L.PASS))
    assert line.startswith("info move A6 ") and " order 1 " in line and "info move pass " in line and "A5" not in line


def test_a_move_counts_its_time_from_the_request():
    """The seconds of a move count from choose_move's call: time spent waiting for the kernels (or on the
    dead-stone estimate after a pass) comes out of the search's share instead of being added to it."""
    import threading
    import time

    player = GoPlayer(player_settings(build_parser().parse_args(["--hash", "16", "--size", "9"])))
    player.warm_up()
    board = GoBoard(9, 7.0)
    player.ready.clear()
    threading.Timer(0.8, player.ready.set).start()
    t0 = time.monotonic()
    move = player.choose_move(board, L.BLACK, 1.0)
    elapsed = time.monotonic() - t0
    assert move is not None and move != L.PASS
    assert 0.8 <= elapsed < 1.5, elapsed  # 1.0 s in all, not the 0.8 s wait + a 1.0 s search


def test_the_rave_bias_goes_by_board_size_unless_given():
    """--rave-bias unset: b = 0.03 below 15x15 and 0.016 from it, in the float parameters every search thread is given
    (one searcher serving both sizes under shared prior counts); set, the same b on every board."""
    from usi_engine.search.settings import float_params

    def bias(player: GoPlayer, size: int) -> float:
        searcher = player._searcher(size)
        return float(float_params(searcher.options, 0, 1, False, 1.0)[layout.FP_RAVE_BIAS])

    argv = ["--hash", "1", "--prior-counts", "shared"]
    player = GoPlayer(player_settings(build_parser().parse_args(argv)))
    assert player._searcher(9) is player._searcher(19)
    assert [bias(player, n) for n in (9, 13, 15, 19, 9)] == [0.03, 0.03, 0.016, 0.016, 0.03]
    default = GoPlayer(player_settings(build_parser().parse_args(["--hash", "1"])))
    assert (bias(default, 9), bias(default, 19)) == (0.03, 0.016)
    given = GoPlayer(player_settings(build_parser().parse_args(["--hash", "1", "--rave-bias", "0.009"])))
    assert (bias(given, 9), bias(given, 19)) == (0.009, 0.009)
