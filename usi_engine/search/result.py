"""The search's answer read off the pool: SearchResult (best move, value, PV, MultiPV lines, statistics) and
RootMove (one root move for analysis output), built by `search_result` for `info` reports and at the end."""

import time
from dataclasses import dataclass, field

import numpy as np

from usi_engine.search import layout
from usi_engine.search.pool import NodePool
from usi_engine.search.pv import LAZY_RANK_OFFSET, principal_variation
from usi_engine.search.settings import DEFAULT_VALUE_SCALE, SearchOptions
from usi_engine.search.values import MATE_THRESHOLD, is_proven


@dataclass
class SearchResult:
    """What a search returns, and what each `info` report carries: values from the root's side to move."""

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


def principal_line(pool: NodePool, node: int, max_depth: int) -> list[int]:
    """The moves of the principal variation from `node` (at most max_depth)."""
    out = np.zeros(max_depth, np.int32)
    seen = np.zeros(max_depth + 1, np.int64)
    n = principal_variation(pool.tree, np.int64(node), out, seen, pool.rave)
    return [int(m) for m in out[:n]]


class RootPriors:
    """RAVE: the prior H of the root's moves from the adapter's optional `priors(pos, moves)` (the same values
    the expansion gave them), computed once per search (one instance per search)."""

    def __init__(self, adapter):
        self.adapter = adapter
        self._cache: np.ndarray | None = None

    def __call__(self, pool: NodePool, pos, moves) -> np.ndarray | None:
        """The priors of `moves` at pos; None without RAVE or the adapter's hook."""
        if not pool.rave or not hasattr(self.adapter, 'priors'):
            return None
        if self._cache is None or len(self._cache) != len(moves):
            self._cache = self.adapter.priors(pos, moves)
        return self._cache


def search_result(
    pool: NodePool,
    opt: SearchOptions,
    adapter,
    pos,
    start: float,
    multipv: int,
    reused: int,
    priors: RootPriors,
) -> SearchResult:
    """The result of the search from the root `pos` begun at perf_counter time `start`, with `multipv` lines
    (at least one) and `reused` nodes kept from the last search."""
    t, ctl = pool.tree, pool.ctl
    value = float(t[layout.T_VALUE][0])
    pv = principal_line(pool, 0, opt.max_depth)
    lines, root = [], []
    if (t[layout.T_STATE][0] & layout.PHASE_MASK) == layout.EXPANDED:
        f, n = int(t[layout.T_FIRST][0]), int(t[layout.T_COUNT][0])
        children = t[layout.T_ECHILD][f : f + n]
        ev = t[layout.T_VALUE][children]
        rank = np.where(t[layout.T_FLAGS][children] & layout.FLAG_LAZY, -ev - LAZY_RANK_OFFSET, -ev)
        if pool.rave:
            real = t[layout.T_RN][f : f + n] - (t[layout.T_RC][f : f + n] if pool.prior_counts else 0.0)
            rank = np.where(ev <= -MATE_THRESHOLD, np.inf, np.where(ev >= MATE_THRESHOLD, -ev, real))
        prob = np.exp(-(ev - ev.min()) / max(opt.t_sel, 1e-9))  # eq. 1-2 at the root
        prob /= prob.sum()
        vscale = getattr(adapter, 'value_scale', DEFAULT_VALUE_SCALE)
        root_priors = priors(pool, pos, t[layout.T_EMOVE][f : f + n])
        for j in np.argsort(-rank, kind='stable')[: max(1, multipv)]:
            child = int(children[j])
            move = int(t[layout.T_EMOVE][f + j])
            mv = move_value(float(ev[j]))
            line = [move] + principal_line(pool, child, opt.max_depth)
            lines.append((move, mv, line))
            prior = None if root_priors is None else float(root_priors[j])
            root.append(
                RootMove(
                    move,
                    _visits(pool, opt, f + j, prob[j]),
                    _winrate(pool, opt, f + j, mv, vscale, prior),
                    float(prob[j]),
                    line,
                )
            )
    best = pv[0] if pv else None
    to_str = adapter.move_to_str
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
        hashfull=pool.hashfull(),
        time_ms=1000.0 * (time.perf_counter() - start),
        reused_nodes=reused,
        children=int(ctl[layout.C_CHILDREN]),
        root=root,
    )


def _prior_visits(pool: NodePool, opt: SearchOptions, e: int) -> float:
    """RAVE: the prior's virtual MC visits C(s,a) of edge e (eq. 49): the edge's own when the pool keeps
    per-child counts, else the shared prior_visits."""
    return float(pool.tree[layout.T_RC][e]) if pool.prior_counts else opt.prior_visits


def _visits(pool: NodePool, opt: SearchOptions, e: int, prob: float) -> int:
    """Visits of root edge e: the MC count without the prior's virtual visits (RAVE), the edge visits (UCT),
    or the softmax probability x samples (MCSS)."""
    t = pool.tree
    if pool.rave:
        return int(round(max(0.0, t[layout.T_RN][e] - _prior_visits(pool, opt, e))))
    if pool.uct:
        return int(t[layout.T_EVISITS][e])
    return int(round(prob * pool.ctl[layout.C_SAMPLES]))


def _winrate(pool: NodePool, opt: SearchOptions, e: int, move_val: float, vscale: float, prior=None) -> float:
    """RAVE: the edge's MC winrate without the prior's virtual visits (eq. 49's C visits of value H), or H
    itself before any real visit; else the value mapped to [0, 1]."""
    t = pool.tree
    if pool.rave and not is_proven(move_val):
        if prior is None:
            return float(t[layout.T_RW][e] / max(t[layout.T_RN][e], 1e-9))
        pn = _prior_visits(pool, opt, e)
        real = t[layout.T_RN][e] - pn
        if real < 0.5:
            return prior
        return float(min(1.0, max(0.0, (t[layout.T_RW][e] - pn * prior) / real)))
    return float(min(1.0, max(0.0, 0.5 + 0.5 * move_val / vscale)))
