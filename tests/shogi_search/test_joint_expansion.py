"""Joint expansion: several threads evaluate the children of one node through its job (jobs.open_job)."""

import threading

import numpy as np
import pytest

from usi_engine.search import layout
from usi_engine.search.jobs import J_FINISH, J_STRIDE, child_done, claim_child, close_job, find_job, new_jobs, open_job
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions
from usi_engine.shogi import Board
from usi_engine.shogi.bench import bench_sfens, random_game_sfens
from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi.sfen import move_to_usi
from usi_engine.shogi_search.game import (
    ShogiAdapter,
    expand,
    expand_children,
    finish_children,
    finish_open,
    gen_moves,
    make_params,
)

SHARP = "ln1g3nl/1r1sgk3/p1pppsbpp/1p3pp2/7P1/2P1P4/PPBP1PP1P/2G1S2R1/LN2KGSNL b - 17"


@pytest.fixture(scope="module")
def adapter():
    return ShogiAdapter()


def test_claims_refuse_a_closed_job_and_a_job_reopened_for_another_node():
    job = new_jobs(2, 4, np.zeros(8, np.int64))[0]
    base = J_STRIDE  # the second thread's job
    assert claim_child(job, base, 7) == -1  # closed
    open_job(job, base, 7, 3)
    assert find_job(job, 7) == base and find_job(job, 8) == -1
    assert [claim_child(job, base, 7) for _ in range(4)] == [0, 1, 2, -1]
    for work in (5, 6, 7):
        child_done(job, base, work)
    assert close_job(job, base, 3) == 18  # returns once all three are reported, with their work
    assert claim_child(job, base, 7) == -1 and find_job(job, 7) == -1
    open_job(job, base, 9, 5)
    assert claim_child(job, base, 7) == -1  # a late joiner of node 7 gets nothing of node 9's job
    assert claim_child(job, base, 9) == 0


@pytest.mark.parametrize("expansion", ["exact", "lazy"])
def test_two_threads_on_one_job_give_the_single_thread_values(adapter, expansion):
    """Two Python threads run expand_children (nogil) on the same job from their own copies of the position:
    every child is evaluated exactly once and the values, flags and total work equal one thread's expand."""
    params = make_params(expansion=expansion, qsearch_see=True)
    board = Board(SHARP)
    moves = np.zeros(MAX_MOVES, np.int32)
    values = np.zeros(MAX_MOVES)
    flags = np.zeros(MAX_MOVES, np.int8)
    n, work = expand(board.pos.copy(), adapter.weights, params, np.ones(1, np.uint64), moves, values, flags)
    assert n > 30
    for _ in range(5):  # the interleaving differs run by run
        job, jmoves, jvalues, jflags, _ = new_jobs(2, MAX_MOVES, board.pos)
        assert gen_moves(board.pos, jmoves[0]) == n
        open_job(job, 0, 11, n)
        results: list = [None, None]

        def run(k, job=job, row=(jmoves[0], jvalues[0], jflags[0]), results=results):
            results[k] = expand_children(board.pos.copy(), adapter.weights, params, *row, job, 0, 11)

        threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert close_job(job, 0, n) == work and sum(results) == n
        assert np.array_equal(jmoves[0][:n], moves[:n])
        assert np.array_equal(jvalues[0][:n], values[:n]) and np.array_equal(jflags[0][:n], flags[:n])


def test_two_threads_in_the_window_round_keep_its_guarantees(adapter):
    """The window expansion's second round (finish_open, then finish_children claimed by two Python threads on
    one job): every child whose exact quiescence value is within the window of the best has exactly that value,
    every child left lazy truly is more than the window below the best and its stored value never makes it
    look worse than it is; every item is claimed once and the work is all reported. Exact values from the
    exact expansion; several positions and runs (the interleaving, hence which children get searched against
    an older best, differs)."""
    window = 400.0
    exact_params = make_params(qsearch_see=True)
    params = make_params(expansion="window", window=window, qsearch_see=True)
    rng = np.ones(1, np.uint64)
    lazy_seen = 0
    for sfen in [SHARP, *random_game_sfens(4, seed=7, min_ply=30, max_ply=90)]:
        board = Board(sfen)
        moves, values, flags = np.zeros(MAX_MOVES, np.int32), np.zeros(MAX_MOVES), np.zeros(MAX_MOVES, np.int8)
        n, _ = expand(board.pos.copy(), adapter.weights, exact_params, rng, moves, values, flags)
        truth = {int(m): v for m, v in zip(moves[:n], values[:n])}
        best = max(-v for v in truth.values())
        for _ in range(3):
            job, jmoves, jvalues, jflags, _ = new_jobs(2, MAX_MOVES, board.pos)
            row = jmoves[0], jvalues[0], jflags[0]
            assert gen_moves(board.pos, jmoves[0]) == n
            open_job(job, 0, 11, n)
            expand_children(board.pos.copy(), adapter.weights, params, *row, job, 0, 11)
            close_job(job, 0, n)
            m = finish_open(board.pos, adapter.weights, params, *row, n, job, 0)
            assert m in (0, n)
            tag = 11 | J_FINISH
            open_job(job, 0, tag, m)
            assert claim_child(job, 0, 11) == -1  # a late joiner of the first round gets nothing
            results: list = [0, 0]

            def run(k, pos=board.pos, job=job, row=row, tag=tag, results=results):
                results[k] = finish_children(pos.copy(), adapter.weights, params, *row, job, 0, tag)

            threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert sum(results) == m and close_job(job, 0, m) >= 0
            assert sorted(jmoves[0][:n].tolist()) == sorted(truth)  # the same children, reordered
            for move, value, flag in zip(jmoves[0][:n], jvalues[0][:n], jflags[0][:n]):
                exact = truth[int(move)]
                where = (sfen, move_to_usi(int(move)))
                if -exact >= best - window:
                    assert not flag & layout.FLAG_LAZY and value == pytest.approx(exact), where
                if flag & layout.FLAG_LAZY:
                    lazy_seen += 1
                    assert -exact < best - window and -value >= -exact - 1e-9, where
                elif not flag:
                    assert value == pytest.approx(exact), where
    assert lazy_seen > 0


def test_threads_join_each_others_expansions_and_keep_the_tree_sound(adapter):
    """In a two-thread search a thread that reaches a node another is expanding helps with its children
    (C_JOINED) instead of sampling elsewhere; without joint expansion none joins. Either way the search plays
    a legal move. The position's root expansion alone costs ~16,000 quiescence nodes, so the second thread
    finds it busy; fresh trees, several runs (thread start-up timing varies)."""
    board = Board(bench_sfens()[2])
    legal = set(board.legal_move_codes().tolist())
    for joint in (True, False):
        joined = 0
        for seed in range(3):
            s = Searcher(adapter, SearchOptions(threads=2, hash_mb=32, seed=seed, joint=joint, reuse=False))
            r = s.search(board.pos, Limits(nodes=200_000))
            joined += int(s.pool.ctl[layout.C_JOINED])
            assert r.best_move is not None and r.nodes >= 200_000
            assert r.best_move in legal
        assert (joined > 0) == joint, joined


def test_a_helper_thread_gives_the_one_thread_search_at_a_node_limit(adapter):
    """Shogi with the engine's default split of two threads (one sampler, one helper): the same nodes, samples,
    value and principal variation as one thread at the same node limit: the helper changes only the speed."""
    board = Board(bench_sfens()[0])
    one = Searcher(adapter, SearchOptions(threads=1, hash_mb=32, seed=4, reuse=False))
    two = Searcher(adapter, SearchOptions(threads=2, helpers=-1, hash_mb=32, seed=4, reuse=False))
    assert two.helper_count() == 1
    r1 = one.search(board.pos, Limits(nodes=150_000))
    r2 = two.search(board.pos, Limits(nodes=150_000))
    assert (r2.nodes, r2.samples, r2.value, r2.pv) == (r1.nodes, r1.samples, r1.value, r1.pv)


def test_an_idle_helper_returns_to_poll_and_a_stop_ends_it(adapter):
    """With no job open the helper kernel gives up after max_idle empty scans (the Searcher then sleeps
    between calls, so a helper never spins for long beside samplers that idle); with stop set it returns at
    once."""
    from usi_engine.search.dispatch import kernels

    k = kernels(adapter.game)
    board = Board(bench_sfens()[0])
    jobs = new_jobs(2, MAX_MOVES, board.pos)
    ctl = np.zeros(layout.CTL_SIZE, np.int64)
    assert k.run_helper(board.pos.copy(), ctl, adapter.weights, adapter.params, jobs, 1000) == 0
    ctl[layout.C_STOP] = 1
    assert k.run_helper(board.pos.copy(), ctl, adapter.weights, adapter.params, jobs, 1 << 60) == 0
