"""Python orchestration of the MCSS core: node pool, threads, limits, tree reuse, result and `info` stats.

`Searcher(adapter, options).search(pos, limits, on_info)` runs N Python threads, each inside one nogil
numba call (core `run_samples`) over the shared pool; the calling thread polls the clock and the limits
and sets the shared stop word. `stop()` may be called from any thread (USI `stop`, `ponderhit` handling,
GTP interrupts). The adapter is the game's Python face:
  game (name in games.GAMES), max_moves, weights, params (float64 arrays handed to expand),
  copy(pos), move_to_str(move), max_depth(pos) (plies the pos history can still hold),
  path_since(old_pos, new_pos) -> list of moves from old to new in the same game, or None;
  optional for the RAVE policy: value_scale (|E| of a sure win, default 1000) and amaf_capacity(pos)
  (trace entries one expand_amaf call may write, default 0); optional root_verifier (None or a callable
  (pos, move, time_limit_s, stop_event) -> (exact value of the child after `move` from its side to move, or None;
  work in nodes)): a prover the search asks about its best root move whenever that move changes (the
  workers pause meanwhile) and once more before it returns; a value found is stored as the child's
  proven result (FLAG_TERMINAL), so the root's softmax and the best move see it (shogi: the mate guard).
"""

import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from usi_engine.search import games, layout
from usi_engine.search.backup import backup_node
from usi_engine.search.jobs import new_jobs
from usi_engine.search.nodes import init_root
from usi_engine.search.pv import LAZY_RANK_OFFSET, best_edge, child_of, principal_variation
from usi_engine.search.reuse import collect_probable
from usi_engine.search.rng import seed_state
from usi_engine.search.table import rebuild_table
from usi_engine.search.values import MATE_THRESHOLD, is_proven

NODE_BYTES = 8 + 8 + 4 + 8 + 8 + 1 + 2  # value, first, count, key, state, flags, depth
EDGE_BYTES = 4 + 4  # move, child
WIDEN_EDGE_BYTES = 4  # per edge under progressive widening: the move's log prior (progressive bias)
VISIT_BYTES = 8  # edge visits (UCT policy only)
RAVE_BYTES = 4 * 8  # MC count/wins and AMAF count/wins per edge (RAVE policy only)
TABLE_BYTES = 16  # graph table slot: key, node
WIDEN_BYTES = 4 + 8  # per node under progressive widening: moves reserved, entered children claimed
GRAPH_EDGES_PER_NODE = 2.0  # in graph mode edges outnumber nodes (shared children)
WIDEN_EDGES_PER_NODE = 6.0  # progressive widening reserves every move's edge but makes nodes for a few
POLL_SECONDS = 0.001
DEPTH_POLL_SECONDS = 0.01
KERNEL_BATCH = 1 << 40  # samples per kernel call: it returns on stop anyway
HELPER_IDLE_SCANS = 20000  # a helper kernel returns after this many empty job scans in a row (~10-100 ms)
STALL_SAMPLES = 20000  # samples without any expansion after which a search is stalled
POLICIES = {'softmax': layout.POLICY_SOFTMAX, 'uct': layout.POLICY_UCT, 'rave': layout.POLICY_RAVE}
DEFAULT_VALUE_SCALE = 1000.0
PRUNE_KEEP = 0.5  # share of the pool a prune keeps (NodePool.prune)
VERIFY_BURST_SECONDS = 0.01  # a pause goes on to the next best root move after a proof within this time
FINAL_VERIFY_MOVES = 4  # after the search: best root moves the root_verifier may still be asked about ...
FINAL_VERIFY_SECONDS = 0.02  # ... within this time in all


@dataclass
class SearchOptions:
    threads: int = 1
    hash_mb: float = 64.0
    t_sel: float = 92.0  # selection temperature (value units; shogi centipawns)
    t_back: float = 92.0  # backup temperature; <= 0 means minimax backup
    forcing_bonus: float = 0.0  # selection prior of children the game flags forcing (selection.select_softmax)
    t_sel_spread: float = 1.0  # thread i uses t_sel * spread**(2i/(N-1) - 1): from t_sel/spread to t_sel*spread
    anneal_visits: float = 0.0  # > 0: T_sel / sqrt(1 + N(v)/anneal_visits), N(v) samples (backup.annealed_temperature)
    t_sel_min: float = 0.0  # floor of the annealed selection temperature
    back_anneal_visits: float = 0.0  # > 0: T_back / sqrt(1 + N(v)/back_anneal_visits) in the backup of v
    t_back_min: float = 0.0  # floor of the annealed backup temperature
    policy: str = 'softmax'  # 'softmax' (MCSS), 'uct' (UCT_H; with t_back <= 0 UCTMAX_H) or 'rave' (MC-RAVE)
    c_uct: float = 100.0  # UCB exploration constant in value units
    c_rave: float = 0.0  # RAVE: UCB constant on outcomes in [0, 1] (seed 000 §5.2: 0 was best)
    rave_bias: float = 0.016  # RAVE: bias b of eq. 47 (b^2 = 1/4000 ~ the hand schedule's k = 1000)
    prior_visits: float = 10.0  # RAVE: virtual MC visits of the game's prior H(s,a) (eq. 49)
    prior_amaf: float = 20.0  # RAVE: virtual AMAF visits of the prior (eq. 51)
    graph: bool = True  # share transpositions through the key table
    reuse: bool = True  # keep the subtree reached by the moves played since the last search
    seed: int = 0
    max_depth: int = 256  # cap on the descent length (also capped by the pos history capacity)
    prune: bool = True  # a full pool frees its improbable part (NodePool.prune) and the search goes on
    joint: bool = True  # threads join each other's expansions (jobs.open_job; games with expand_children)
    helpers: int = 0  # threads that only evaluate the others' expansions (core run_helper); -1 = automatic
    widen_k0: int = 0  # progressive widening (games with order_children): children entered at expansion; 0 = off
    widen_a: float = 4.0  # ... a node holds k0 + floor(log_b(1 + N/a)) children after N samples (widening.widen_target)
    widen_b: float = 1.6
    prior_beta: float = 0.0  # progressive bias under widening: a child weighs p^beta more (selection.select_softmax)


@dataclass
class Limits:
    time_ms: float | None = None
    nodes: int | None = None  # positions evaluated
    samples: int | None = None
    depth: int | None = None  # PV length
    infinite: bool = False  # ignore every limit; run until stop()
    stop_on_proven: bool = True  # end early once the root value is proven


@dataclass
class SearchResult:
    best_move: int | None
    best_move_str: str | None
    value: float  # E(root), from the side to move at the root
    proven: bool
    pv: list = field(default_factory=list)
    pv_str: list = field(default_factory=list)
    multipv: list = field(default_factory=list)  # [(move, move_value(E(child)), pv moves)], best first
    nodes: int = 0
    samples: int = 0
    depth: int = 0
    seldepth: int = 0
    hashfull: int = 0
    time_ms: float = 0.0
    reused_nodes: int = 0
    children: int = 0  # children evaluated, FLAG_NO_SIM ones excluded (Go: playouts)
    root: list = field(default_factory=list)  # [RootMove] in multipv order (analysis output)


@dataclass
class RootMove:
    """One root move for analysis (GTP lz-analyze): visits = MC count (RAVE), edge visits (UCT) or
    softmax probability x samples (MCSS); winrate in [0, 1] for the root's side; prob = pi(c|root)."""

    move: int
    visits: int
    winrate: float
    prob: float
    pv: list


def move_value(child_value):
    """Value of a root move from the root's side: -E(child), with a proven result one ply further away."""
    if child_value <= -MATE_THRESHOLD:
        return -child_value - 1.0
    if child_value >= MATE_THRESHOLD:
        return -child_value + 1.0
    return -child_value


class NodePool:
    """The preallocated structure-of-arrays pool (layout.T_* tuple) and the shared control array."""

    def __init__(self, hash_mb, graph, uct, min_nodes=4, rave=False, widen=False):
        budget = int(hash_mb * 2**20)
        edge_bytes = EDGE_BYTES + (VISIT_BYTES if uct else 0) + (RAVE_BYTES if rave else 0)
        edge_bytes += WIDEN_EDGE_BYTES if widen else 0
        node_bytes = NODE_BYTES + (WIDEN_BYTES if widen else 0)
        ratio = WIDEN_EDGES_PER_NODE if widen else GRAPH_EDGES_PER_NODE if graph else 1.0
        n = max(min_nodes, int(budget // (node_bytes + ratio * edge_bytes + (2.5 * TABLE_BYTES if graph else 0))))
        while True:
            slots = 1 << max(2, math.ceil(math.log2(1.25 * n))) if graph else 1
            e = max(4, int(ratio * n))
            total = n * node_bytes + e * edge_bytes + slots * TABLE_BYTES
            if total <= budget or n <= min_nodes:
                break
            n = max(min_nodes, int(n * 0.95))
        self.hash_mb, self.graph, self.uct, self.rave, self.bytes = hash_mb, graph, uct, rave, total
        self.widen = widen
        self.tree = layout.new_tree(n, e, slots, uct, rave, widen)
        self.ctl = np.zeros(layout.CTL_SIZE, np.int64)
        self.ctl[layout.C_NODE_LIMIT] = layout.NO_LIMIT
        self.ctl[layout.C_SAMPLE_LIMIT] = layout.NO_LIMIT

    @property
    def node_capacity(self):
        return self.tree[layout.T_VALUE].shape[0]

    @property
    def edge_capacity(self):
        return self.tree[layout.T_EMOVE].shape[0]

    def hashfull(self):
        """Per mille of the pool in use (the fuller of nodes and edges)."""
        used = max(self.ctl[layout.C_NODES] / self.node_capacity, self.ctl[layout.C_EDGES] / self.edge_capacity)
        return min(1000, int(1000 * used))

    def reset(self, root_key):
        init_root(self.tree, self.ctl, np.int64(root_key), self.graph)

    def reroot(self, node, plies):
        """Keep only the part reachable from `node`, moved to the front of the pool with `node` as node 0
        (breadth-first order; unreachable nodes are freed). Returns the number of nodes kept."""
        return self._compact(node, plies, self._allow_all())

    @property
    def policy(self):
        """The core's policy code whose statistics the pool holds (layout.POLICY_*)."""
        return layout.POLICY_RAVE if self.rave else layout.POLICY_UCT if self.uct else layout.POLICY_SOFTMAX

    def prune(self, t_sel, prior_visits=0.0, fraction=PRUNE_KEEP):
        """Free the improbable part of the tree while a search runs (the pool is full): expanded nodes are
        ranked by reach (product of the selection probabilities along the path from the root,
        reuse.collect_probable: the softmax at `t_sel`, or the visit shares of UCT and RAVE, RAVE's
        `prior_visits` virtual visits left out; ties in breadth-first order), the first ones whose children
        fit in `fraction` of the smaller of the node and edge pools keep them, and the others become
        unexpanded leaves that keep their backed-up value. Returns (nodes kept, reach of the last node that
        kept its children; inf if none did)."""
        (_, order, _), _, reach, keep, counts = self._walk(0, self._allow_all(), t_sel, prior_visits)
        expanded = keep.astype(bool)
        r, c, old = reach[expanded], counts[expanded], order[expanded]
        rank = np.argsort(-r, kind='stable')
        budget = fraction * min(self.node_capacity, self.edge_capacity)
        cut = int(np.count_nonzero(np.cumsum(c[rank]) <= budget))
        allow = np.zeros(int(self.ctl[layout.C_NODES]), np.int8)
        allow[old[rank[:cut]]] = 1
        eps = np.inf if cut == 0 else float(r[rank[cut - 1]])
        return self._compact(0, 0, allow), eps

    def _allow_all(self):
        return np.ones(int(self.ctl[layout.C_NODES]), np.int8)

    def _walk(self, node, allow, t_sel=1.0, prior_visits=0.0):
        """reuse.collect_probable from `node` over the used part of the pool: ((nmap, order, edge order),
        nodes kept, reach, keep, edges of each kept node (its moves not entered yet included))."""
        t, ctl = self.tree, self.ctl
        used = int(ctl[layout.C_NODES])
        nmap = np.empty(used, np.int64)
        order = np.empty(used, np.int64)
        eorder = np.empty(max(1, int(ctl[layout.C_EDGES])), np.int64)
        reach = np.empty(used, np.float64)
        keep = np.empty(used, np.int8)
        kept, kept_edges = collect_probable(
            t,
            np.int64(node),
            np.int64(self.policy),
            float(t_sel),
            float(prior_visits),
            allow,
            nmap,
            order,
            eorder,
            reach,
            keep,
        )
        edges = t[layout.T_NMOVES] if self.widen else t[layout.T_COUNT]
        counts = np.where(keep[:kept].astype(bool), edges[order[:kept]], 0)
        return (nmap, order[:kept], eorder[:kept_edges]), kept, reach[:kept], keep[:kept], counts

    def _compact(self, node, plies, allow):
        """Move what collect_probable keeps to the front of the pool (node becomes node 0; only nodes with
        allow[old index] != 0 keep their children), remap the edges, rebuild the graph table; nodes that keep
        no children become unexpanded, the others keep their sample counts. Returns the nodes kept."""
        t, ctl = self.tree, self.ctl
        (nmap, order, eorder), kept, _, keep, counts = self._walk(node, allow)
        kept_edges = len(eorder)
        for i in (layout.T_VALUE, layout.T_KEY, layout.T_FLAGS):
            t[i][:kept] = t[i][order]
        t[layout.T_DEPTH][:kept] = np.maximum(t[layout.T_DEPTH][order] - plies, 0)
        expanded = keep.astype(bool)
        # an expanded node keeps its sample count (the sequence bits: the annealed temperatures read it)
        visits = t[layout.T_STATE][order] & ~np.int64(layout.PHASE_MASK)
        t[layout.T_STATE][:kept] = np.where(expanded, visits | layout.EXPANDED, layout.UNEXPANDED)
        t[layout.T_FIRST][:kept] = np.where(expanded, np.cumsum(counts) - counts, -1)
        t[layout.T_COUNT][:kept] = np.where(expanded, t[layout.T_COUNT][order], 0)
        if self.widen:
            t[layout.T_NMOVES][:kept] = counts
            t[layout.T_WIDE][:kept] = t[layout.T_COUNT][:kept]
        t[layout.T_EMOVE][:kept_edges] = t[layout.T_EMOVE][eorder]
        if self.widen:
            t[layout.T_EBIAS][:kept_edges] = t[layout.T_EBIAS][eorder]
        child = t[layout.T_ECHILD][eorder]
        t[layout.T_ECHILD][:kept_edges] = np.where(child >= 0, nmap[child], -1)
        if self.uct:
            t[layout.T_EVISITS][:kept_edges] = t[layout.T_EVISITS][eorder]
        if self.rave:
            for i in (layout.T_RN, layout.T_RW, layout.T_AN, layout.T_AW):
                t[i][:kept_edges] = t[i][eorder]
        ctl[layout.C_NODES], ctl[layout.C_EDGES] = kept, kept_edges
        ctl[layout.C_WASTED_EDGES] = ctl[layout.C_MEMFULL] = 0
        ctl[layout.C_ROOT] = 0
        if self.graph:
            rebuild_table(t, ctl, np.int64(kept))
        else:
            ctl[layout.C_TABLE] = ctl[layout.C_PRIVATE] = 0
        return kept


class Searcher:
    """MCSS (or UCT) search over one game's kernels; see the module docstring."""

    def __init__(self, adapter, options: SearchOptions | None = None):
        self.adapter = adapter
        self.options = options or SearchOptions()
        if self.options.policy not in POLICIES:
            raise ValueError(f"unknown policy {self.options.policy!r}; use one of {', '.join(POLICIES)}")
        if self.options.threads < 1 or self.options.hash_mb <= 0:
            raise ValueError("threads must be >= 1 and hash_mb > 0")
        if self.options.widen_k0 < 0 or self.options.widen_a <= 0 or self.options.widen_b <= 1:
            raise ValueError("progressive widening needs widen_k0 >= 0, widen_a > 0 and widen_b > 1")
        if not self.options.prior_beta >= 0:
            raise ValueError("the progressive bias needs prior_beta >= 0")
        self.kernels = games.kernels(adapter.game)
        self._priors_cache: np.ndarray | None = None  # RAVE: the root moves' priors (_root_priors)
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
        self._priors_cache = None
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
            progress = ctl[layout.C_EXPANSIONS] + ctl[layout.C_REFINED]
            if progress != last_expansions:
                last_expansions, stall_base = progress, ctl[layout.C_SAMPLES]
            elif ctl[layout.C_MEMFULL] and self.options.prune and not ctl[layout.C_STOP]:
                workers = self._prune(workers, pos)
                last_expansions = -1
            elif not infinite and (ctl[layout.C_MEMFULL] or ctl[layout.C_SAMPLES] - stall_base >= STALL_SAMPLES):
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
        vscale = getattr(self.adapter, 'value_scale', DEFAULT_VALUE_SCALE)
        backup_node(t, np.int64(0), opt.t_back, opt.back_anneal_visits, opt.t_back_min, POLICIES[opt.policy], vscale)
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
        ):
            # the root's children must always fit, whatever the budget, so there is always a move to play
            self.pool = NodePool(
                opt.hash_mb,
                opt.graph,
                uct,
                min_nodes=2 * self.adapter.max_moves + 2,
                rave=rave,
                widen=self._widening(),
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
            n = samplers
            factor = opt.t_sel_spread ** (2.0 * index / (n - 1) - 1.0) if n > 1 else 1.0
            fp = np.zeros(layout.FP_SIZE, np.float64)
            fp[layout.FP_TSEL] = opt.t_sel * factor
            fp[layout.FP_TBACK] = opt.t_back
            fp[layout.FP_CUCT] = opt.c_rave if opt.policy == 'rave' else opt.c_uct
            fp[layout.FP_VSCALE] = getattr(adapter, 'value_scale', DEFAULT_VALUE_SCALE)
            fp[layout.FP_RAVE_BIAS] = opt.rave_bias
            fp[layout.FP_PRIOR_N] = opt.prior_visits
            fp[layout.FP_PRIOR_AMAF] = opt.prior_amaf
            fp[layout.FP_FORCING] = opt.forcing_bonus
            fp[layout.FP_ANNEAL_N] = opt.anneal_visits
            fp[layout.FP_TSEL_MIN] = opt.t_sel_min
            fp[layout.FP_BACK_ANNEAL_N] = opt.back_anneal_visits
            fp[layout.FP_TBACK_MIN] = opt.t_back_min
            fp[layout.FP_WIDEN_K0] = opt.widen_k0 if self.pool.widen else 0
            fp[layout.FP_WIDEN_A] = opt.widen_a
            fp[layout.FP_WIDEN_B] = opt.widen_b
            fp[layout.FP_PRIOR_BETA] = opt.prior_beta if self.pool.widen else 0.0
            ip = np.zeros(layout.IP_SIZE, np.int64)
            ip[layout.IP_POLICY] = POLICIES[opt.policy]
            ip[layout.IP_GRAPH] = 1 if opt.graph else 0
            depth = max(1, min(opt.max_depth, adapter.max_depth(pos)))
            ip[layout.IP_MAXDEPTH] = depth
            ip[layout.IP_THREAD] = index
            ip[layout.IP_JOINT] = 1 if opt.joint and opt.policy != 'rave' and n > 1 else 0
            ip[layout.IP_PUBLISH] = 1 if samplers < opt.threads else 0
            m = adapter.max_moves
            rave = opt.policy == 'rave'
            trace = adapter.amaf_capacity(pos) if rave and hasattr(adapter, 'amaf_capacity') else 0
            slots = 1 << max(2, math.ceil(math.log2(2 * m))) if rave else 1
            hscratch = (
                np.zeros(slots, np.int64),
                np.zeros(slots, np.int64),
                np.zeros(slots, np.int64),
                np.zeros(slots, np.int64),
                np.zeros(2, np.int64),
            )
            scratch = (
                np.zeros(depth + 1, np.int64),
                np.zeros(m, np.int32),
                np.zeros(m, np.float64),
                np.zeros(m, np.int8),
                np.zeros(m, np.int64),
                np.zeros(m, np.float64),
                np.zeros(depth + 1, np.int64),
                np.zeros(m, np.float64),
                np.zeros(max(1, trace), np.int32),
                np.zeros(m + 1, np.int64),
                hscratch,
                self._jobs,
            )
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

    def _root_proven(self):
        t = self.pool.tree
        return (t[layout.T_STATE][0] & layout.PHASE_MASK) == layout.EXPANDED and is_proven(t[layout.T_VALUE][0])

    def _pv(self, node):
        out = np.zeros(self.options.max_depth, np.int32)
        seen = np.zeros(self.options.max_depth + 1, np.int64)
        n = principal_variation(self.pool.tree, np.int64(node), out, seen, self.pool.rave)
        return [int(m) for m in out[:n]]

    def _pv_length(self):
        return len(self._pv(0))

    def _result(self, start, multipv, reused, pos):
        t, ctl = self.pool.tree, self.pool.ctl
        value = float(t[layout.T_VALUE][0])
        pv = self._pv(0)
        lines, root = [], []
        if (t[layout.T_STATE][0] & layout.PHASE_MASK) == layout.EXPANDED:
            f, n = int(t[layout.T_FIRST][0]), int(t[layout.T_COUNT][0])
            children = t[layout.T_ECHILD][f : f + n]
            ev = t[layout.T_VALUE][children]
            rank = np.where(t[layout.T_FLAGS][children] & layout.FLAG_LAZY, -ev - LAZY_RANK_OFFSET, -ev)
            if self.pool.rave:
                rank = np.where(
                    ev <= -MATE_THRESHOLD, np.inf, np.where(ev >= MATE_THRESHOLD, -ev, t[layout.T_RN][f : f + n])
                )
            prob = np.exp(-(ev - ev.min()) / max(self.options.t_sel, 1e-9))
            prob /= prob.sum()
            vscale = getattr(self.adapter, 'value_scale', DEFAULT_VALUE_SCALE)
            priors = self._root_priors(pos, t[layout.T_EMOVE][f : f + n])
            for j in np.argsort(-rank, kind='stable')[: max(1, multipv)]:
                child = int(children[j])
                move = int(t[layout.T_EMOVE][f + j])
                mv = move_value(float(ev[j]))
                line = [move] + self._pv(child)
                lines.append((move, mv, line))
                root.append(
                    RootMove(
                        move,
                        self._visits(f + j, prob[j]),
                        self._winrate(f + j, mv, vscale, None if priors is None else float(priors[j])),
                        float(prob[j]),
                        line,
                    )
                )
        best = pv[0] if pv else None
        to_str = self.adapter.move_to_str
        return SearchResult(
            best_move=best,
            best_move_str=None if best is None else to_str(best),
            value=value,
            proven=is_proven(value) and bool(pv),
            pv=pv,
            pv_str=[to_str(m) for m in pv],
            multipv=lines,
            nodes=int(ctl[layout.C_WORK]),
            samples=int(ctl[layout.C_SAMPLES]),
            depth=len(pv),
            seldepth=int(ctl[layout.C_SELDEPTH]),
            hashfull=self.pool.hashfull(),
            time_ms=1000.0 * (time.perf_counter() - start),
            reused_nodes=reused,
            children=int(ctl[layout.C_CHILDREN]),
            root=root,
        )

    def _visits(self, e, prob):
        t = self.pool.tree
        if self.pool.rave:
            return int(round(max(0.0, t[layout.T_RN][e] - self.options.prior_visits)))
        if self.pool.uct:
            return int(t[layout.T_EVISITS][e])
        return int(round(prob * self.pool.ctl[layout.C_SAMPLES]))

    def _root_priors(self, pos, moves):
        """RAVE: the prior H of the root's moves from the adapter's optional `priors(pos, moves)` (the same values
        the expansion gave them), computed once per search; None without RAVE or the hook."""
        if not self.pool.rave or not hasattr(self.adapter, 'priors'):
            return None
        if self._priors_cache is None or len(self._priors_cache) != len(moves):
            self._priors_cache = self.adapter.priors(pos, moves)
        return self._priors_cache

    def _winrate(self, e, move_val, vscale, prior=None):
        """RAVE: the edge's MC winrate without the prior's virtual visits (eq. 49's C visits of value H), or H
        itself before any real visit; else the value mapped to [0, 1]."""
        t = self.pool.tree
        if self.pool.rave and not is_proven(move_val):
            if prior is None:
                return float(t[layout.T_RW][e] / max(t[layout.T_RN][e], 1e-9))
            pn = self.options.prior_visits
            real = t[layout.T_RN][e] - pn
            if real < 0.5:
                return prior
            return float(min(1.0, max(0.0, (t[layout.T_RW][e] - pn * prior) / real)))
        return float(min(1.0, max(0.0, 0.5 + 0.5 * move_val / vscale)))
