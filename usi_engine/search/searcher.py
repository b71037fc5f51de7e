"""Python orchestration of the MCSS core: the threads of a search, its limits, pauses and tree reuse.

`Searcher(adapter, options).search(pos, limits, on_info)` runs N Python threads, each inside one nogil
numba call (core `run_samples`) over the shared pool; the calling thread polls the clock and the limits
and sets the shared stop word. `stop()` may be called from any thread (USI `stop`, `ponderhit` handling,
GTP interrupts). The pool is pool.NodePool, the settings and their kernel parameters settings.py, the
answer result.search_result. The adapter is the game's Python face:
  game (the module of the game's kernels, handed to dispatch.kernels), max_moves, weights, params (float64
  arrays handed to expand), copy(pos), move_to_str(move), max_depth(pos) (plies the pos history can still hold),
  path_since(old_pos, new_pos) -> list of moves from old to new in the same game, or None;
  optional for the RAVE policy: value_scale (|E| of a sure win, default 1000) and amaf_capacity(pos)
  (trace entries one expand_amaf call may write, default 0); optional root_verifier (None or a callable
  (pos, move, time_limit_s, stop_event) -> (exact value of the child after `move` from its side to move, or None;
  work in nodes)): a prover the search asks about its best root move whenever that move changes (the
  workers pause meanwhile) and once more before it returns; a value found is stored as the child's
  proven result (FLAG_TERMINAL), so the root's softmax and the best move see it (shogi: the mate guard).
"""

import threading
import time

import numpy as np

from usi_engine.search import dispatch, layout
from usi_engine.search.backup import backup_node
from usi_engine.search.jobs import new_jobs
from usi_engine.search.pool import NodePool
from usi_engine.search.pv import best_edge, child_of
from usi_engine.search.result import RootPriors, SearchResult, principal_line, search_result
from usi_engine.search.rng import seed_state
from usi_engine.search.samples import new_scratch
from usi_engine.search.settings import (
    DEFAULT_VALUE_SCALE,
    POLICIES,
    Limits,
    SearchOptions,
    check_options,
    float_params,
    int_params,
)
from usi_engine.search.values import is_proven

POLL_SECONDS = 0.001
DEPTH_POLL_SECONDS = 0.01
KERNEL_BATCH = 1 << 40  # samples per kernel call: it returns on stop anyway
HELPER_IDLE_SCANS = 20000  # a helper kernel returns after this many empty job scans in a row (~10-100 ms)
STALL_SAMPLES = 20000  # samples without any expansion after which a search is stalled
VERIFY_BURST_SECONDS = 0.01  # a pause goes on to the next best root move after a proof within this time
FINAL_VERIFY_MOVES = 4  # after the search: best root moves the root_verifier may still be asked about ...
FINAL_VERIFY_SECONDS = 0.02  # ... within this time in all


class Searcher:
    """MCSS (or UCT) search over one game's kernels; see the module docstring."""

    def __init__(self, adapter, options: SearchOptions | None = None):
        self.adapter = adapter
        self.options = options or SearchOptions()
        check_options(self.options)
        self.kernels = dispatch.kernels(adapter.game)
        self._priors = RootPriors(adapter)  # RAVE: the root moves' priors, once per search
        self.pool: NodePool | None = None  # built by the first search (_prepare)
        self._last_pos = None
        self._last_params = None
        self._stop = threading.Event()
        self.prunes = 0  # pool prunes in the last search
        self._rngs: list[np.ndarray] = []  # per-thread random states of the current search
        self._jobs = new_jobs(1, 1, np.zeros(1, np.int64))  # the threads' joint-expansion jobs
        self.verified: dict[int, float | None] = {}  # root moves asked of the root_verifier in the last search

    # --- public API ---------------------------------------------------------------------------------
    def stop(self):
        """End the running search (any thread); search() then returns its result."""
        self._stop.set()
        if self.pool is not None:
            self.pool.ctl[layout.C_STOP] = 1

    def clear(self):
        """Forget the tree (new game)."""
        self._last_pos = None

    def search(self, pos, limits: Limits | None = None, on_info=None, multipv=1, info_interval=1.0):
        """Search `pos` until a limit or stop(); returns a SearchResult. on_info(result) is called about
        every info_interval seconds with the current statistics."""
        limits = limits or Limits()
        start = time.perf_counter()
        self._stop.clear()
        over, value = self.kernels.game.root_status(pos, self.adapter.params)
        if over:
            return SearchResult(None, None, float(value), is_proven(value))
        reused = self._prepare(pos)
        self._priors = RootPriors(self.adapter)
        self.prunes = 0
        self.verified = {}
        verifier = getattr(self.adapter, 'root_verifier', None)
        assert self.pool is not None  # made by _prepare
        ctl = self.pool.ctl
        infinite = limits.infinite
        ctl[layout.C_NODE_LIMIT] = layout.NO_LIMIT if infinite or limits.nodes is None else int(limits.nodes)
        ctl[layout.C_SAMPLE_LIMIT] = layout.NO_LIMIT if infinite or limits.samples is None else int(limits.samples)
        ctl[layout.C_STOP] = 1 if self._stop.is_set() else 0
        self._errors: list[Exception] = []
        # one random stream per thread for the whole search: workers restarted after a pause (prune,
        # root_verifier) continue their stream instead of replaying it
        self._rngs = [seed_state(self.options.seed, i) for i in range(self.options.threads)]
        self._jobs = new_jobs(self.options.threads, self.adapter.max_moves, pos)
        workers = self._start_workers(pos)
        deadline = None if infinite or limits.time_ms is None else start + limits.time_ms / 1000.0
        next_info = start + info_interval
        next_depth = start
        last_expansions, stall_base = -1, 0
        while any(w.is_alive() for w in workers):
            time.sleep(POLL_SECONDS)
            now = time.perf_counter()
            if self._stop.is_set() or (deadline is not None and now >= deadline):
                ctl[layout.C_STOP] = 1
            elif not infinite and limits.children is not None and ctl[layout.C_CHILDREN] >= limits.children:
                ctl[layout.C_STOP] = 1
            # one reading of the flag per poll: a worker may set it between two readings, and a full pool seen
            # by the stop test but not by the prune test would end the search early
            memfull = bool(ctl[layout.C_MEMFULL])
            progress = ctl[layout.C_EXPANSIONS] + ctl[layout.C_REFINED]
            if progress != last_expansions:
                last_expansions, stall_base = progress, ctl[layout.C_SAMPLES]
            elif memfull and self.options.prune and not ctl[layout.C_STOP]:
                workers = self._prune(workers, pos)
                last_expansions = -1
            elif not infinite and (memfull or ctl[layout.C_SAMPLES] - stall_base >= STALL_SAMPLES):
                ctl[layout.C_STOP] = 1  # nothing left to expand (pool full, or only terminals reachable)
            if now >= next_depth:
                next_depth = now + DEPTH_POLL_SECONDS
                if not infinite and (
                    (limits.depth is not None and self._pv_length() >= limits.depth)
                    or (limits.stop_on_proven and self._root_proven())
                ):
                    ctl[layout.C_STOP] = 1
                if verifier is not None and not ctl[layout.C_STOP]:
                    workers = self._verify_best(workers, pos, verifier, deadline)
            if on_info is not None and now >= next_info:
                next_info = now + info_interval
                on_info(self._result(start, multipv, reused, pos))
            if ctl[layout.C_STOP]:
                for w in workers:
                    w.join()
        if self._errors:
            raise self._errors[0]
        if verifier is not None:
            end = time.perf_counter() + FINAL_VERIFY_SECONDS
            for _ in range(FINAL_VERIFY_MOVES):
                if not self._verify_edge(pos, verifier, max(0.0, end - time.perf_counter())):
                    break  # nothing new to ask, or the best move stands
        return self._result(start, multipv, reused, pos)

    # --- internals ----------------------------------------------------------------------------------
    def _widening(self) -> bool:
        """Progressive widening is on: asked for, and the game orders its moves (order_children), not RAVE."""
        opt = self.options
        return opt.widen_k0 > 0 and opt.policy != 'rave' and hasattr(self.kernels.game, 'order_children')

    def helper_count(self) -> int:
        """Threads that only evaluate the sampling threads' expansions: `helpers`, at least one thread left to
        sample; none for a game without joint expansion or the RAVE policy. Automatic (-1): all but one, or none
        under progressive widening, whose expansions are too small to share (a helper added at most 1.17x the
        samples there, a second sampler 2.0-2.3x; docs/search.md "Threads")."""
        opt = self.options
        if self.kernels.run_helper is None or opt.policy == 'rave' or opt.threads < 2:
            return 0
        if opt.helpers < 0:
            return 0 if self._widening() else opt.threads - 1
        return min(opt.helpers, opt.threads - 1)

    def _start_workers(self, pos):
        samplers = self.options.threads - self.helper_count()
        workers = [
            threading.Thread(
                target=self._worker if i < samplers else self._helper, args=(i, pos, samplers), daemon=True
            )
            for i in range(self.options.threads)
        ]
        for w in workers:
            w.start()
        return workers

    def _prune(self, workers, pos):
        """Pause the workers, free the improbable part of the full pool (NodePool.prune), resume."""
        ctl = self.pool.ctl
        ctl[layout.C_STOP] = 1
        for w in workers:
            w.join()
        self.pool.prune(self.options.t_sel, self.options.prior_visits)
        self.prunes += 1
        if self._stop.is_set():
            return workers
        ctl[layout.C_STOP] = 0
        return self._start_workers(pos)

    def _verify_best(self, workers, pos, verifier, deadline):
        """Ask the root_verifier about the best root move if it has not been asked yet, with the workers
        paused; resume them unless the search is over meanwhile."""
        e = best_edge(self.pool.tree, np.int64(0), self.pool.rave)
        if e < 0 or int(self.pool.tree[layout.T_EMOVE][e]) in self.verified:
            return workers
        ctl = self.pool.ctl
        ctl[layout.C_STOP] = 1
        for w in workers:
            w.join()
        burst_end = time.perf_counter() + VERIFY_BURST_SECONDS
        while True:  # a refuted move makes another the best: ask on while proofs come quickly
            left = None if deadline is None else max(0.0, deadline - time.perf_counter())
            if not self._verify_edge(pos, verifier, left) or time.perf_counter() >= burst_end:
                break
            if ctl[layout.C_WORK] >= ctl[layout.C_NODE_LIMIT]:
                break
        if self._stop.is_set() or (deadline is not None and time.perf_counter() >= deadline):
            return workers
        if ctl[layout.C_WORK] >= ctl[layout.C_NODE_LIMIT] or ctl[layout.C_SAMPLES] >= ctl[layout.C_SAMPLE_LIMIT]:
            return workers
        ctl[layout.C_STOP] = 0
        return self._start_workers(pos)

    def _verify_edge(self, pos, verifier, time_limit_s):
        """With the workers stopped: ask the root_verifier about the best root move (once per search); a
        value found becomes the child's proven result and the root is backed up. Returns True if a value was
        stored now (the best move may have changed), False if the move had been asked before, had its exact
        value already, or got no proof."""
        t, ctl = self.pool.tree, self.pool.ctl
        e = best_edge(t, np.int64(0), self.pool.rave)
        if e < 0:
            return False
        move, child = int(t[layout.T_EMOVE][e]), int(t[layout.T_ECHILD][e])
        if move in self.verified:
            return False
        if is_proven(t[layout.T_VALUE][child]):
            self.verified[move] = None  # the search has its exact value already
            return False
        value, work = verifier(pos, move, time_limit_s, self._stop)
        ctl[layout.C_WORK] += work
        self.verified[move] = value
        if value is None:
            return False
        t[layout.T_FLAGS][child] |= layout.FLAG_TERMINAL
        t[layout.T_VALUE][child] = value
        opt = self.options
        policy = POLICIES[opt.policy]
        backup_node(t, np.int64(0), opt.t_back, opt.back_anneal_visits, opt.t_back_min, policy, self._value_scale())
        return True

    def _prepare(self, pos):
        """Reuse the subtree reached from the last root by the moves played since, or start afresh.
        Returns the number of nodes kept."""
        opt = self.options
        uct, rave = opt.policy == 'uct', opt.policy == 'rave'
        if (
            self.pool is None
            or self.pool.graph != opt.graph
            or self.pool.uct != uct
            or self.pool.rave != rave
            or self.pool.hash_mb != opt.hash_mb
            or self.pool.widen != self._widening()
            or self.pool.prior_counts != (rave and opt.prior_counts)
        ):
            # the root's children must always fit, whatever the budget, so there is always a move to play
            self.pool = NodePool(
                opt.hash_mb,
                opt.graph,
                uct,
                min_nodes=2 * self.adapter.max_moves + 2,
                rave=rave,
                widen=self._widening(),
                prior_counts=opt.prior_counts,
            )
            self._last_pos = None
        kept = 0
        # a tree's values hold under the game params it was searched with (draw value, move limit, rules)
        if opt.reuse and self._last_pos is not None and np.array_equal(self.adapter.params, self._last_params):
            path = self.adapter.path_since(self._last_pos, pos)
            if path is not None:
                node = 0
                for move in path:
                    node = child_of(self.pool.tree, np.int64(node), np.int32(move))
                    if node < 0:
                        break
                # a terminal flag is a judgement on the old path (e.g. a repetition counted at its second
                # occurrence); as the real root the position must be searched afresh
                if node >= 0 and not self.pool.tree[layout.T_FLAGS][node] & layout.FLAG_TERMINAL:
                    kept = self.pool.reroot(node, len(path))
        if kept == 0:
            self.pool.reset(self.kernels.game.pos_key(pos))
        ctl = self.pool.ctl
        for i in (
            layout.C_SAMPLES,
            layout.C_WORK,
            layout.C_SELDEPTH,
            layout.C_COLLISIONS,
            layout.C_CYCLES,
            layout.C_EXPANSIONS,
            layout.C_CHILDREN,
            layout.C_REFINED,
        ):
            ctl[i] = 0
        self._last_pos = self.adapter.copy(pos)
        self._last_params = self.adapter.params.copy()
        return kept

    def _helper(self, index, root_pos, samplers):
        adapter = self.adapter
        try:
            pos, ctl = adapter.copy(root_pos), self.pool.ctl
            while True:  # the kernel returns on stop, or after a long idle spell (then poll at leisure)
                self.kernels.run_helper(pos, ctl, adapter.weights, adapter.params, self._jobs, HELPER_IDLE_SCANS)
                if ctl[layout.C_STOP]:
                    break
                time.sleep(POLL_SECONDS)
        except Exception as exc:  # surface kernel errors in search()
            self._errors.append(exc)
            self.pool.ctl[layout.C_STOP] = 1

    def _worker(self, index, root_pos, samplers):
        opt, adapter = self.options, self.adapter
        try:
            pos = adapter.copy(root_pos)
            fp = float_params(opt, index, samplers, self.pool.widen, self._value_scale())
            depth = max(1, min(opt.max_depth, adapter.max_depth(pos)))
            ip = int_params(opt, index, samplers, depth)
            rave = opt.policy == 'rave'
            trace = adapter.amaf_capacity(pos) if rave and hasattr(adapter, 'amaf_capacity') else 0
            scratch = new_scratch(adapter.max_moves, depth, trace, rave, self._jobs)
            rng = self._rngs[index]
            ctl = self.pool.ctl
            while True:
                # called at least once, even when the search is already over (a deadline that passed while
                # the root was prepared): a warm-up search must compile the kernel, not skip it
                self.kernels.run_samples(
                    pos, self.pool.tree, ctl, adapter.weights, adapter.params, rng, fp, ip, scratch, KERNEL_BATCH
                )
                if ctl[layout.C_STOP]:
                    break
                time.sleep(POLL_SECONDS)  # root proven: idle until stopped
        except Exception as exc:  # surface kernel errors in search()
            self._errors.append(exc)
            self.pool.ctl[layout.C_STOP] = 1

    def _value_scale(self) -> float:
        """|E| of a sure win in the game's value units (the adapter's optional value_scale)."""
        return getattr(self.adapter, 'value_scale', DEFAULT_VALUE_SCALE)

    def _root_proven(self):
        t = self.pool.tree
        return (t[layout.T_STATE][0] & layout.PHASE_MASK) == layout.EXPANDED and is_proven(t[layout.T_VALUE][0])

    def _pv_length(self):
        return len(principal_line(self.pool, 0, self.options.max_depth))

    def _result(self, start, multipv, reused, pos) -> SearchResult:
        assert self.pool is not None  # made by _prepare
        return search_result(self.pool, self.options, self.adapter, pos, start, multipv, reused, self._priors)
