"""Per-child prior counts in RAVE (seed 000 eq. 48-51 with C(s,a), C~(s,a) per move; docs/go.md "Per-child prior
counts"): the core's fresh edges take the counts they are given, Go's expand_amaf gives the counts and values of
the formula in docs/go.md (checked against the heuristic values and the model's probabilities read separately),
the counts are never negative, mirrored moves of a symmetric position get the same prior, the search keeps each
edge's own virtual visits out of its answer, and with every rule factor 1 and no move model the per-child search
is the shared one, bit for bit."""

import numpy as np
import pytest

from usi_engine.go import GoBoard
from usi_engine.go import layout as L
from usi_engine.go import moveprior as M
from usi_engine.go import playout as PO
from usi_engine.go.game import (
    MOVES_EVEN,
    MOVES_EVEN_SMALL,
    MOVES_WINS,
    MOVES_WINS_SMALL,
    P_MOVES_AMAF,
    P_MOVES_EVEN,
    P_MOVES_WINS,
    P_PRIOR_BASE_N,
    P_PRIOR_COUNTS,
    GoAdapter,
    default_params,
    expand_amaf,
)
from usi_engine.go.player import GoPlayer
from usi_engine.go.playout import move_priors, seed_rng
from usi_engine.go.workspace import new_workspace
from usi_engine.gtp_options import build_parser, player_settings
from usi_engine.search import layout
from usi_engine.search.rave import rave_init_edges, rave_outcome
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions, float_params
from usi_engine.search.values import MATE_THRESHOLD

# the rules' values (playout.PRIOR_*), each with its RULE_* index: an independent way to name a move's rule
RULE_OF_VALUE = {
    PO.PRIOR_EVEN: PO.RULE_EVEN,
    PO.PRIOR_EYE: PO.RULE_EYE,
    PO.PRIOR_CAPTURE: PO.RULE_CAPTURE,
    PO.PRIOR_ESCAPE: PO.RULE_ESCAPE,
    PO.PRIOR_SELF_ATARI: PO.RULE_SELF_ATARI,  # = PRIOR_LADDERED: the ladder rule stays off here
    PO.PRIOR_PATTERN: PO.RULE_PATTERN,
    PO.PRIOR_NEAR_LAST: PO.RULE_NEAR_LAST,
    PO.PRIOR_EMPTY_EDGE: PO.RULE_EMPTY_EDGE,
    PO.PRIOR_PASS: PO.RULE_PASS,
    PO.PRIOR_OPEN_THIRD: PO.RULE_OPEN_THIRD,
    PO.PRIOR_OPEN_FIRST: PO.RULE_OPEN_FIRST,
    PO.PRIOR_OPEN_CORNER: PO.RULE_OPEN_CORNER,
}
FACTORS = 0.5 + 0.25 * np.arange(PO.N_RULES)  # a different count factor for every rule
BASE = (30.0, 45.0)
PACHI_19 = (MOVES_EVEN, MOVES_WINS, 1.0)  # the move prior's form by default: Pachi's 19x19 constants, AMAF too
PACHI_SMALL_MC = (MOVES_EVEN_SMALL, MOVES_WINS_SMALL, 0.0)  # its small-board constants, in the MC statistics only


def _board(moves, size=19) -> GoBoard:
    b = GoBoard(size, 7.5)
    for v in moves:
        b.play(b.to_move, v)
    return b


OPENING = ["Q16", "D4", "C16", "Q4", "E17", "D16", "D17", "R10", "C17", "C15", "O3", "F3"]
# a fight with ataris, a capture, an escape and eye-like points
FIGHT = ["D4", "E4", "D5", "E5", "D6", "E6", "C7", "D7", "C6", "E7", "Q16", "B7", "B6", "R4", "A7", "B8"]


def _expand(b: GoBoard, adapter: GoAdapter, counts: np.ndarray | None):
    """(moves, prior, flags) of expand_amaf at b, its counts in `counts` (None: left out)."""
    cap = adapter.amaf_capacity(b.pos)
    moves, values = np.empty(L.BOARD_CAP + 1, np.int32), np.empty(L.BOARD_CAP + 1)
    flags, prior = np.empty(L.BOARD_CAP + 1, np.int8), np.empty(L.BOARD_CAP + 1)
    trace, tstart = np.empty(cap, np.int32), np.empty(L.BOARD_CAP + 2, np.int64)
    args = (b.pos, adapter.weights, adapter.params, seed_rng(3), moves, values, flags, prior, trace, tstart)
    n, _ = expand_amaf(*args) if counts is None else expand_amaf(*args, counts)
    return moves[:n], prior[:n], flags[:n]


def _expected(b: GoBoard, moves: np.ndarray, model, b_share: float, form=PACHI_19):
    """(C, C~, H) of docs/go.md "Per-child prior counts", from the heuristic values and the model's probabilities;
    form: the move prior's (even visits, won visits per sqrt(P), AMAF share)."""
    even, wins, amaf = form
    n = len(moves)
    h = np.empty(n)
    move_priors(b.pos, new_workspace(), moves, n, h, True, False)
    factor = np.array([FACTORS[RULE_OF_VALUE[v]] for v in h])
    c, ca, value = factor * BASE[0], factor * BASE[1], h.copy()
    if model is not None and b_share > 0:
        p = np.empty(n)
        M.move_probabilities(b.pos, new_workspace(), model, moves, n, p)
        share = min(b_share, 1.0)
        v = even + wins * np.sqrt(p)
        w = 0.5 * even + wins * np.sqrt(p)
        veto = (moves == L.PASS) | (h == PO.PRIOR_EYE) | (h == PO.PRIOR_SELF_ATARI)
        new_c = (1 - share) * c + share * v
        value = np.where(veto, h, ((1 - share) * c * h + share * w) / new_c)
        c, ca = np.where(veto, c, new_c), np.where(veto, ca, (1 - share) * ca + share * amaf * v)
    return c, ca, value


def _adapter(
    size: int, prior_moves: float, per_child: bool = True, factors=FACTORS, base=BASE, form=PACHI_19
) -> GoAdapter:
    params = default_params(
        prior_patterns=True,
        prior_moves=prior_moves,
        prior_counts=per_child,
        prior_base=base,
        rule_counts=factors,
        moves_experience_form=form,
    )
    adapter = GoAdapter(size, params)
    if size >= PO.LARGE_BOARD:
        adapter.set_move_model(M.read_model(M.shipped_model(19))[0])
    return adapter


def test_the_core_gives_fresh_edges_their_own_counts_as_eq_48_to_51():
    """rave_init_edges: N = C(s,a) (+1 and the outcome for a simulated child), W = C H, N~ = C~, W~ = C~ H, and T_RC
    = C; a pool without per-child counts gives every edge the shared pair and ignores the counts."""
    rng = np.random.default_rng(4)
    n = 7
    prior, values = rng.random(n), rng.uniform(-1000, 1000, n)
    cflags = np.array([0, layout.FLAG_NO_SIM, 0, 0, layout.FLAG_NO_SIM, 0, 0], np.int8)
    counts = np.vstack([rng.uniform(0, 300, n), rng.uniform(0, 300, n)])
    fp = float_params(SearchOptions(policy="rave", prior_visits=10.0, prior_amaf=20.0), 0, 1, False, 1000.0)
    sim = (cflags & layout.FLAG_NO_SIM) == 0
    z = np.array([rave_outcome(v, 1000.0) for v in values])
    for own in (True, False):
        tree = layout.new_tree(2, 16, rave=True, prior_counts=own)
        tree[layout.T_FIRST][0] = 3
        rave_init_edges(tree, 0, n, values, cflags, prior, counts, fp)
        c, ca = (counts[0], counts[1]) if own else (np.full(n, 10.0), np.full(n, 20.0))
        e = slice(3, 3 + n)
        assert np.array_equal(tree[layout.T_RN][e], c + sim)
        assert np.array_equal(tree[layout.T_RW][e], c * prior + np.where(sim, z, 0.0))
        assert np.array_equal(tree[layout.T_AN][e], ca) and np.array_equal(tree[layout.T_AW][e], ca * prior)
        if own:
            assert np.array_equal(tree[layout.T_RC][e], c)
        else:
            assert tree[layout.T_RC].shape == (1,)


@pytest.mark.parametrize("position", [OPENING, FIGHT])
@pytest.mark.parametrize("b_share", [1.0, 0.5, 0.0, 2.0])
@pytest.mark.parametrize("form", [PACHI_19, PACHI_SMALL_MC, (7, 50, 0.5)])
def test_expand_amaf_gives_the_counts_and_values_of_the_formula(position, b_share, form):
    """19x19 with the shipped move prior: C, C~ and H of every child as docs/go.md writes them (rule factors of
    their own, a share b of the move prior, b > 1 taken as 1, the move prior's form: Pachi's 19x19 and small-board
    constants, the latter in the MC statistics only, and another); never negative; the value without the counts
    argument is the same."""
    b = _board(position)
    adapter = _adapter(19, b_share, form=form)
    counts = np.full((2, L.BOARD_CAP + 1), -1.0)
    moves, prior, _ = _expand(b, adapter, counts)
    n = len(moves)
    c, ca, value = _expected(b, moves, adapter.move_model, b_share, form)
    assert np.allclose(counts[0, :n], c, rtol=1e-12) and np.allclose(counts[1, :n], ca, rtol=1e-12)
    assert np.allclose(prior, value, rtol=1e-12, atol=1e-15)
    assert (counts[:, :n] >= 0).all() and np.isfinite(counts[:, :n]).all()
    assert (counts[:, n:] == -1.0).all()
    assert np.array_equal(_expand(b, adapter, None)[1], prior)
    assert np.array_equal(adapter.priors(b.pos, moves), prior)
    if b_share == 0:  # the heuristic alone: several rules, each its own count
        assert len({RULE_OF_VALUE[v] for v in value}) >= 3 and len(np.unique(counts[0, :n])) >= 3
    if b_share >= 1:  # only the vetoes keep the heuristic's count; every other move its own 20 + 300 sqrt(P)
        assert len(np.unique(counts[0, :n])) > 50


def test_shared_counts_leave_out_counts_alone():
    """With P_PRIOR_COUNTS off expand_amaf writes no counts, and its values are the shared scheme's."""
    b = _board(FIGHT)
    counts = np.full((2, L.BOARD_CAP + 1), -1.0)
    shared = _adapter(19, 1.0, per_child=False)
    assert shared.params[P_PRIOR_COUNTS] == 0.0
    _, prior, _ = _expand(b, shared, counts)
    assert (counts == -1.0).all()
    _, per_child, _ = _expand(b, _adapter(19, 1.0), counts)
    assert np.array_equal(prior, per_child)  # at b = 1 only the weights differ


def _mirror(p: int, size: int) -> int:
    """The point reflected left-right (x -> size - 1 - x); a pass stays."""
    if p == L.PASS:
        return p
    w = size + 1
    return (p // w) * w + size - 1 - p % w


@pytest.mark.parametrize("size", [19, 9])
def test_mirrored_moves_of_a_symmetric_position_get_the_same_prior(size):
    """A position symmetric left-right (the last two moves on the axis): a move and its mirror image get the same
    counts and value, exactly."""
    k = size - 1
    b = GoBoard(size, 7.5)
    col = "ABCDEFGHJKLMNOPQRST"
    # Black, White, Black, White, ...: each stone's mirror image has its colour; the last two moves on the axis
    points = [(3, 3), (3, k - 3), (k - 3, 3), (k - 3, k - 3), (2, 4), (1, k - 2), (k - 2, 4), (k - 1, k - 2)]
    for x, y in points + [(k // 2, k // 2), (k // 2, 2)]:
        b.play(b.to_move, f"{col[x]}{y + 1}")
    adapter = _adapter(size, 1.0 if size >= PO.LARGE_BOARD else 0.0)
    counts = np.zeros((2, L.BOARD_CAP + 1))
    moves, prior, _ = _expand(b, adapter, counts)
    index = {int(m): i for i, m in enumerate(moves)}
    assert len(index) > 40 and len(np.unique(counts[0, : len(moves)])) >= 3
    for i, m in enumerate(moves):
        j = index[_mirror(int(m), size)]
        assert prior[j] == prior[i] and counts[0, j] == counts[0, i] and counts[1, j] == counts[1, i]


def test_the_search_keeps_each_edges_own_counts_out_of_its_answer():
    """A 19x19 search with per-child counts: after the root's expansion each root edge holds C(s,a) virtual MC visits
    of value H (T_RN, T_RW, T_RC) and C~(s,a) AMAF visits (T_AN, T_AW) besides its own playout and the AMAF credit,
    as expand_amaf gave them; after a search the reported visits and winrates leave each edge's C out, and the best
    move has the most real visits."""
    b = _board(OPENING)
    adapter = _adapter(19, 1.0, factors=None, base=(50.0, 50.0))
    counts = np.zeros((2, L.BOARD_CAP + 1))
    moves, prior, _ = _expand(b, adapter, counts)
    s = Searcher(adapter, SearchOptions(policy="rave", hash_mb=16, seed=1, prior_counts=True))
    s.search(b.pos, Limits(samples=1))  # the root's expansion: its edges as rave_init_edges left them
    t = s.pool.tree
    f, k = int(t[layout.T_FIRST][0]), int(t[layout.T_COUNT][0])
    assert k == len(moves) and np.array_equal(t[layout.T_EMOVE][f : f + k], moves)
    c, ca = counts[0, :k], counts[1, :k]
    assert np.array_equal(t[layout.T_RC][f : f + k], c)
    sims = t[layout.T_RN][f : f + k] - c
    assert set(np.unique(sims)) <= {0.0, 1.0} and sims.sum() >= 4  # the children that ran a playout
    z = np.array([rave_outcome(v, 1000.0) for v in t[layout.T_VALUE][t[layout.T_ECHILD][f : f + k]]])
    assert np.allclose(t[layout.T_RW][f : f + k], c * prior + sims * z, rtol=1e-14, atol=0)
    amaf = t[layout.T_AN][f : f + k] - ca  # the expansion's playouts credit the root's AMAF statistics
    assert (amaf >= 0).all() and amaf.sum() > 0
    wins = t[layout.T_AW][f : f + k] - ca * prior
    assert (wins >= -1e-9).all() and (wins <= amaf + 1e-9).all()
    s.clear()
    r = s.search(b.pos, Limits(samples=400), multipv=400)
    t = s.pool.tree
    f = int(t[layout.T_FIRST][0])
    c = t[layout.T_RC][f : f + k]
    assert np.array_equal(c, counts[0, :k])
    real = t[layout.T_RN][f : f + k] - c
    assert (real >= 0).all() and real.sum() > 300
    by_move = {rm.move: rm for rm in r.root}
    proven = np.abs(t[layout.T_VALUE][t[layout.T_ECHILD][f : f + k]]) >= MATE_THRESHOLD
    assert not proven.any()  # an opening: the answer is the visits, not a proof
    for j, m in enumerate(moves):
        rm = by_move[int(m)]
        assert rm.visits == round(real[j])
        if real[j] >= 0.5:
            assert rm.winrate == pytest.approx((t[layout.T_RW][f + j] - c[j] * prior[j]) / real[j])
        else:
            assert rm.winrate == prior[j]
    assert r.best_move == int(moves[np.argmax(real)])


def test_unit_factors_without_a_move_model_search_exactly_as_shared_counts():
    """9x9: per-child counts with every rule factor 1 (the default) give every edge the shared pair, so the seeded
    tree is the shared search's, bit for bit."""
    b = _board(["E5", "C3", "G7", "E3"], size=9)
    trees = []
    for per_child in (False, True):
        adapter = GoAdapter(9, default_params(prior_patterns=True, playout_patterns=True, prior_counts=per_child))
        opts = SearchOptions(policy="rave", hash_mb=32, seed=7, prior_counts=per_child, graph=True)
        s = Searcher(adapter, opts)
        r = s.search(b.pos, Limits(samples=600))
        used = int(s.pool.ctl[layout.C_EDGES])
        t = s.pool.tree
        trees.append((r.best_move, [t[i][:used].copy() for i in (layout.T_RN, layout.T_RW, layout.T_AN, layout.T_AW)]))
        if per_child:
            assert (t[layout.T_RC][:used] == 10.0).all()
    (move0, stats0), (move1, stats1) = trees
    assert move0 == move1 and all(np.array_equal(x, y) for x, y in zip(stats0, stats1))


def test_the_gtp_option_sets_the_game_and_the_core():
    """--prior-counts per-move: the game's per-child counts on, the pool keeping them, and the heuristic's base
    counts by board size (the move prior brings its own, so 50 and not 400 on 19x19); the default, auto, is shared on
    large boards and per-move below 15x15, a new searcher each time the form changes."""
    default = GoPlayer(player_settings(build_parser().parse_args(["--hash", "1"])))
    assert default.settings.prior_counts == "auto" and default._searcher(19).options.prior_counts is False
    nine = default._searcher(9)
    assert nine.options.prior_counts and nine.adapter.params[P_PRIOR_COUNTS] == 1.0
    assert default._searcher(13).options.prior_counts and default._searcher(13) is default._searcher(9)
    assert default._searcher(15).options.prior_counts is False and default._searcher(15) is not nine
    argv = ["--hash", "1", "--prior-counts", "per-move", "--prior-moves-amaf", "0"]
    player = GoPlayer(player_settings(build_parser().parse_args(argv)))
    for size, base, form in ((19, 50.0, (MOVES_EVEN, MOVES_WINS)), (9, 10.0, (MOVES_EVEN_SMALL, MOVES_WINS_SMALL))):
        s = player._searcher(size)
        assert s.options.prior_counts and s.adapter.params[P_PRIOR_COUNTS] == 1.0
        assert s.options.prior_visits == base and s.adapter.params[P_PRIOR_BASE_N] == base
        # Pachi's constants by board size; --prior-moves-amaf 0: the move prior's visits in the MC statistics only
        assert (s.adapter.params[P_MOVES_EVEN], s.adapter.params[P_MOVES_WINS]) == form
        assert s.adapter.params[P_MOVES_AMAF] == 0.0
    assert default._searcher(9).adapter.params[P_MOVES_AMAF] == 0.0  # Pachi's form is the default share
    shared = GoPlayer(player_settings(build_parser().parse_args(["--hash", "1", "--prior-counts", "shared"])))
    assert shared._searcher(9).options.prior_counts is False
