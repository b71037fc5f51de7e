"""The node pool: the preallocated structure-of-arrays tree (layout.T_*) sized to a memory budget, the shared
control array, and the Python-side reshaping of the tree between and during searches: reroot (tree reuse)
and prune (a full pool frees its improbable part). docs/search.md, "Node pool" and "Memory full and pruning"."""

import math

import numpy as np

from usi_engine.search import layout
from usi_engine.search.nodes import init_root
from usi_engine.search.reuse import collect_probable
from usi_engine.search.table import rebuild_table

NODE_BYTES = 8 + 8 + 4 + 8 + 8 + 1 + 2  # value, first, count, key, state, flags, depth
EDGE_BYTES = 4 + 4  # move, child
WIDEN_EDGE_BYTES = 4  # per edge under progressive widening: the move's log prior (progressive bias)
VISIT_BYTES = 8  # edge visits (UCT policy only)
RAVE_BYTES = 4 * 8  # MC count/wins and AMAF count/wins per edge (RAVE policy only)
PRIOR_COUNT_BYTES = 8  # the prior's virtual MC visits per edge (RAVE with per-child prior counts only)
TABLE_BYTES = 16  # graph table slot: key, node
WIDEN_BYTES = 4 + 8  # per node under progressive widening: moves reserved, entered children claimed
GRAPH_EDGES_PER_NODE = 2.0  # in graph mode edges outnumber nodes (shared children)
WIDEN_EDGES_PER_NODE = 6.0  # progressive widening reserves every move's edge but makes nodes for a few
PRUNE_KEEP = 0.5  # share of the pool a prune keeps (NodePool.prune)


class NodePool:
    """The preallocated structure-of-arrays pool (layout.T_* tuple) and the shared control array."""

    def __init__(self, hash_mb, graph, uct, min_nodes=4, rave=False, widen=False, prior_counts=False):
        budget = int(hash_mb * 2**20)
        prior_counts = rave and prior_counts
        edge_bytes = EDGE_BYTES + (VISIT_BYTES if uct else 0) + (RAVE_BYTES if rave else 0)
        edge_bytes += PRIOR_COUNT_BYTES if prior_counts else 0
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
        self.widen, self.prior_counts = widen, prior_counts
        self.tree = layout.new_tree(n, e, slots, uct, rave, widen, prior_counts)
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
        if self.prior_counts:
            t[layout.T_RC][:kept_edges] = t[layout.T_RC][eorder]
        ctl[layout.C_NODES], ctl[layout.C_EDGES] = kept, kept_edges
        ctl[layout.C_WASTED_EDGES] = ctl[layout.C_MEMFULL] = 0
        ctl[layout.C_ROOT] = 0
        if self.graph:
            rebuild_table(t, ctl, np.int64(kept))
        else:
            ctl[layout.C_TABLE] = ctl[layout.C_PRIVATE] = 0
        return kept
