"""What a search is asked for and how it reaches the kernels: SearchOptions (the search's settings), Limits
(when a search ends) and the per-thread parameter vectors of run_samples built from them (layout.FP_*, IP_*).
"""

from dataclasses import dataclass

import numpy as np

from usi_engine.search import layout

POLICIES = {'softmax': layout.POLICY_SOFTMAX, 'uct': layout.POLICY_UCT, 'rave': layout.POLICY_RAVE}
DEFAULT_VALUE_SCALE = 1000.0  # |E| of a sure win when the adapter gives no value_scale


@dataclass
class SearchOptions:
    """The search's settings (the engines map their options onto these; docs/search.md)."""

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
    prior_counts: bool = False  # RAVE: each fresh edge takes its own virtual visits from the game (expand_amaf)
    expand_visits: int = 0  # RAVE: expand a leaf once its edge has this many real MC visits, playing one playout from
    # the leaf itself (the game's leaf_playout) on each visit before; 0: expand at the first visit
    amaf_distance: float = 0.0  # RAVE: AMAF credit weights from 1 + d after a node down to 1 (rave.amaf_weight)
    graph: bool = True  # share transpositions through the key table
    reuse: bool = True  # keep the subtree reached by the moves played since the last search
    seed: int = 0
    max_depth: int = 256  # cap on the descent length (also capped by the pos history capacity)
    prune: bool = True  # a full pool frees its improbable part (NodePool.prune) and the search goes on
    joint: bool = True  # threads join each other's expansions (jobs.open_job; games with expand_children)
    helpers: int = 0  # threads that only evaluate the others' expansions (core run_helper); -1 = automatic
    widen_k0: int = 0  # progressive widening (games with order_children; RAVE: of the children in the game's order):
    # children entered at expansion; 0 = off
    widen_a: float = 4.0  # ... a node holds k0 + floor(log_b(1 + N/a)) children after N samples (widening.widen_target)
    widen_b: float = 1.6
    prior_beta: float = 0.0  # progressive bias under widening: a child weighs p^beta more (selection.select_softmax)


@dataclass
class Limits:
    """When a search ends: at the first limit reached, or on Searcher.stop() (none set, or `infinite`)."""

    time_ms: float | None = None
    nodes: int | None = None  # positions evaluated
    samples: int | None = None
    children: int | None = None  # children the game really evaluated (Go: playouts; the C_CHILDREN count)
    depth: int | None = None  # PV length
    infinite: bool = False  # ignore every limit; run until stop()
    stop_on_proven: bool = True  # end early once the root value is proven


def check_options(opt: SearchOptions) -> None:
    """Raise ValueError for settings no search can run with."""
    if opt.policy not in POLICIES:
        raise ValueError(f"unknown policy {opt.policy!r}; use one of {', '.join(POLICIES)}")
    if opt.threads < 1 or opt.hash_mb <= 0:
        raise ValueError("threads must be >= 1 and hash_mb > 0")
    if opt.widen_k0 < 0 or opt.widen_a <= 0 or opt.widen_b <= 1:
        raise ValueError("progressive widening needs widen_k0 >= 0, widen_a > 0 and widen_b > 1")
    if not opt.prior_beta >= 0:
        raise ValueError("the progressive bias needs prior_beta >= 0")
    if opt.expand_visits < 0:
        raise ValueError("expand_visits must be >= 0")
    if not opt.amaf_distance >= 0:
        raise ValueError("amaf_distance must be >= 0")


def float_params(opt: SearchOptions, index: int, samplers: int, widen: bool, value_scale: float) -> np.ndarray:
    """run_samples' float parameters (layout.FP_*) of sampling thread `index` of `samplers`; `widen`: the pool
    holds progressive widening's arrays."""
    # thread i's selection temperature: t_sel * spread**(2i/(N-1) - 1), from t_sel/spread to t_sel*spread
    factor = opt.t_sel_spread ** (2.0 * index / (samplers - 1) - 1.0) if samplers > 1 else 1.0
    fp = np.zeros(layout.FP_SIZE, np.float64)
    fp[layout.FP_TSEL] = opt.t_sel * factor
    fp[layout.FP_TBACK] = opt.t_back
    fp[layout.FP_CUCT] = opt.c_rave if opt.policy == 'rave' else opt.c_uct
    fp[layout.FP_VSCALE] = value_scale
    fp[layout.FP_RAVE_BIAS] = opt.rave_bias
    fp[layout.FP_PRIOR_N] = opt.prior_visits
    fp[layout.FP_PRIOR_AMAF] = opt.prior_amaf
    fp[layout.FP_FORCING] = opt.forcing_bonus
    fp[layout.FP_ANNEAL_N] = opt.anneal_visits
    fp[layout.FP_TSEL_MIN] = opt.t_sel_min
    fp[layout.FP_BACK_ANNEAL_N] = opt.back_anneal_visits
    fp[layout.FP_TBACK_MIN] = opt.t_back_min
    # progressive widening: under RAVE a selection over the first children (rave.select_rave), needing no arrays
    fp[layout.FP_WIDEN_K0] = opt.widen_k0 if widen or opt.policy == 'rave' else 0
    fp[layout.FP_WIDEN_A] = opt.widen_a
    fp[layout.FP_WIDEN_B] = opt.widen_b
    fp[layout.FP_PRIOR_BETA] = opt.prior_beta if widen else 0.0
    fp[layout.FP_EXPAND_N] = opt.expand_visits if opt.policy == 'rave' else 0
    fp[layout.FP_AMAF_DISTANCE] = opt.amaf_distance
    return fp


def int_params(opt: SearchOptions, index: int, samplers: int, depth: int) -> np.ndarray:
    """run_samples' integer parameters (layout.IP_*) of sampling thread `index` of `samplers`, descents capped
    at `depth` plies."""
    ip = np.zeros(layout.IP_SIZE, np.int64)
    ip[layout.IP_POLICY] = POLICIES[opt.policy]
    ip[layout.IP_GRAPH] = 1 if opt.graph else 0
    ip[layout.IP_MAXDEPTH] = depth
    ip[layout.IP_THREAD] = index
    ip[layout.IP_JOINT] = 1 if opt.joint and opt.policy != 'rave' and samplers > 1 else 0
    ip[layout.IP_PUBLISH] = 1 if samplers < opt.threads else 0  # helper threads wait for published jobs
    return ip
