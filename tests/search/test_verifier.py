"""The Searcher's root_verifier contract: a prover asked about the best root move (synthetic games)."""

import numpy as np
import pytest
from search_helpers import backup_error

from usi_engine.search import layout
from usi_engine.search import synthetic as syn
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions
from usi_engine.search.values import MATE

# Root 0 has two moves: to 1 (A) and to 2 (B). A's replies end in positions worth 300 and 250 to the root's
# side, B's single reply in 60, so without help the search prefers A (about +270 against +60).
GAME = [
    (0, False, [1, 2]),
    (-200, False, [3, 4]),
    (-50, False, [5]),
    (300, True, []),
    (250, True, []),
    (60, True, []),
]


class Verifier:
    """A scripted prover: `answers[move]` is the proven value of the child from its side to move (None: no
    proof); every call costs `work` nodes. Records each call with the sample count at the time."""

    def __init__(self, searcher_ref, answers=None, work=0):
        self.ref, self.answers, self.work = searcher_ref, answers or {}, work
        self.calls: list[tuple[int, int]] = []

    def __call__(self, pos, move, time_limit_s, stop_event):
        self.calls.append((int(move), int(self.ref[0].pool.ctl[layout.C_SAMPLES])))
        return self.answers.get(int(move)), self.work


def searcher_with(answers=None, work=0, **kw):
    adapter = syn.SyntheticAdapter()
    ref: list[Searcher] = []
    adapter.root_verifier = Verifier(ref, answers, work)
    kw.setdefault('hash_mb', 4)
    s = Searcher(adapter, SearchOptions(**kw))
    ref.append(s)
    return s, adapter.root_verifier


@pytest.mark.parametrize('graph', [False, True])
def test_a_refuted_best_move_is_not_played(graph):
    pos = syn.explicit_pos(GAME)
    plain = Searcher(syn.SyntheticAdapter(), SearchOptions(hash_mb=4, graph=graph, seed=2))
    assert plain.search(pos, Limits(samples=40)).best_move == 1
    # the prover knows that after A the opponent mates in three plies
    s, verifier = searcher_with({1: MATE - 3}, work=500, graph=graph, seed=2)
    r = s.search(pos, Limits(samples=40))
    assert r.best_move == 2 and r.value == pytest.approx(60.0)
    asked = [move for move, _ in verifier.calls]
    assert sorted(asked) == [1, 2] and len(set(asked)) == len(asked)  # each move asked once
    assert s.verified == {1: MATE - 3, 2: None}
    t = s.pool.tree
    f = t[layout.T_FIRST][0]
    child_a = next(int(t[layout.T_ECHILD][e]) for e in range(f, f + 2) if t[layout.T_EMOVE][e] == 1)
    assert t[layout.T_VALUE][child_a] == MATE - 3 and t[layout.T_FLAGS][child_a] & layout.FLAG_TERMINAL
    assert r.nodes >= 2 * 500  # the prover's work is part of the search's nodes
    assert backup_error(s)[0] == 0.0  # every other node still equals the recompute from its children


def test_a_proven_win_stays_the_best_move():
    """A prover's value that confirms the move (the opponent is mated) keeps it and proves the root."""
    pos = syn.explicit_pos(GAME)
    s, _ = searcher_with({1: -(MATE - 2)}, seed=2)
    r = s.search(pos, Limits(samples=40))
    assert r.best_move == 1 and r.value == MATE - 3 and r.proven


def test_a_silent_verifier_changes_nothing_but_the_nodes():
    """With a prover that never proves anything, a seeded one-thread search builds the same tree as without
    one, although its workers are paused and restarted for every question: each thread keeps one random
    stream for the whole search. The prover's work is added to the nodes."""
    pos = syn.make_pos(seed=21, bmin=3, bmax=12, term_depth=30, value_range=600, leaf_cost=200)
    plain = Searcher(syn.SyntheticAdapter(), SearchOptions(hash_mb=64, seed=5, t_sel=80.0))
    base = plain.search(pos, Limits(samples=20000))
    s, verifier = searcher_with(work=7, hash_mb=64, seed=5, t_sel=80.0)
    r = s.search(pos, Limits(samples=20000))
    during = [n for _, n in verifier.calls if n < 20000]
    assert during, "the search should have asked while it ran (the test needs a search longer than 10 ms)"
    assert (r.value, r.pv, r.samples) == (base.value, base.pv, base.samples)
    n = int(s.pool.ctl[layout.C_NODES])
    assert np.array_equal(s.pool.tree[layout.T_VALUE][:n], plain.pool.tree[layout.T_VALUE][:n])
    assert r.nodes == base.nodes + 7 * len(verifier.calls)


def test_the_prover_work_counts_against_the_node_limit():
    pos = syn.make_pos(seed=21, bmin=3, bmax=12, term_depth=30, value_range=600)
    s, verifier = searcher_with(work=10**6, hash_mb=64, seed=5)
    r = s.search(pos, Limits(nodes=10**6))
    assert r.nodes >= 10**6 and len(verifier.calls) <= 1 + 4  # the first question spends the budget
