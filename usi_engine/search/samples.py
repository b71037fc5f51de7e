"""The sample loop: build_kernels builds, per game, the one kernel that calls a game (run_samples, seed 001
§3.1 steps 1-4; one variant per feature set, SampleKernel) and the helper threads' kernel (run_helper); the
game-free steps they take are the module-level kernels of the other modules of this package (see
docs/search.md, "Dispatch and caching"); new_scratch makes a sampling thread's working arrays."""

import math
import threading
from typing import Any, Callable

import numpy as np
from numba import njit

from usi_engine.search import standins
from usi_engine.search.atomics import atomic_add, atomic_cas, atomic_load, atomic_max, atomic_store, cpu_yield
from usi_engine.search.backup import annealed_temperature, backup_path, node_value
from usi_engine.search.jobs import J_FINISH, J_INDEX, J_N, J_SHIFT, J_STRIDE, J_WORD, close_job, find_job, open_job
from usi_engine.search.layout import (
    C_CHILDREN,
    C_COLLISIONS,
    C_CYCLES,
    C_EXPANSIONS,
    C_JOINED,
    C_MEMFULL,
    C_NODE_LIMIT,
    C_REFINED,
    C_ROOT,
    C_SAMPLES,
    C_SAMPLE_LIMIT,
    C_SELDEPTH,
    C_STOP,
    C_WORK,
    EXPANDED,
    EXPANDING,
    FLAG_LAZY,
    FLAG_NO_SIM,
    FLAG_TERMINAL,
    FP_AMAF_DISTANCE,
    FP_BACK_ANNEAL_N,
    FP_EXPAND_N,
    FP_PRIOR_AMAF,
    FP_PRIOR_N,
    FP_TBACK,
    FP_TBACK_MIN,
    FP_VSCALE,
    FP_WIDEN_K0,
    IP_GRAPH,
    IP_JOINT,
    IP_MAXDEPTH,
    IP_POLICY,
    IP_PUBLISH,
    IP_THREAD,
    PHASE_MASK,
    POLICY_RAVE,
    POLICY_UCT,
    T_COUNT,
    T_ECHILD,
    T_EMOVE,
    T_EVISITS,
    T_FIRST,
    T_FLAGS,
    T_KEY,
    T_NMOVES,
    T_RC,
    T_RN,
    T_STATE,
    T_VALUE,
    UNEXPANDED,
)
from usi_engine.search.nodes import attach_children, new_child
from usi_engine.search.rave import prior_visits_of, rave_init_edges, rave_update, rave_update_end, rave_update_leaf
from usi_engine.search.selection import select_edge
from usi_engine.search.values import is_proven
from usi_engine.search.widening import align_prior, widen_claim, widen_publish


@njit(cache=True, nogil=True)
def on_path(path_nodes, d, node):
    for i in range(d + 1):
        if path_nodes[i] == node:
            return True
    return False


@njit(cache=True, nogil=True)
def claim_sample(ctl):
    """Take one sample ticket; False once stop is set, the sample limit or the node limit is reached."""
    if atomic_load(ctl, C_STOP) != 0:
        return False
    if atomic_load(ctl, C_WORK) >= atomic_load(ctl, C_NODE_LIMIT):
        atomic_store(ctl, C_STOP, 1)
        return False
    limit = atomic_load(ctl, C_SAMPLE_LIMIT)
    while True:
        old = atomic_load(ctl, C_SAMPLES)
        if old >= limit:
            atomic_store(ctl, C_STOP, 1)
            return False
        if atomic_cas(ctl, C_SAMPLES, old, old + 1) == old:
            return True


@njit(cache=True, nogil=True)
def leaf_played(tree, ctl, path_nodes, path_edges, d, top, value, trace, tlen, work, vscale, distance, hscratch):
    """Account one playout from path_nodes[d] (the game's leaf_playout: value from the leaf's side to move, moves
    trace[:tlen]): its statistics by rave_update_leaf with AMAF credit up to path node `top`, its work, and one
    child evaluated (C_CHILDREN: a Go playout)."""
    rave_update_leaf(tree, path_nodes, path_edges, d, top, value, trace, tlen, vscale, distance, hscratch)
    atomic_add(ctl, C_WORK, work)
    atomic_add(ctl, C_CHILDREN, 1)


@njit(cache=True, nogil=True)
def evaluated_children(cflags, n):
    """Children the game really evaluated (all but FLAG_NO_SIM ones): Go's playouts, the C_CHILDREN count."""
    k = 0
    for i in range(n):
        if (cflags[i] & FLAG_NO_SIM) == 0:
            k += 1
    return k


def new_scratch(max_moves: int, depth: int, trace: int, rave: bool, jobs: tuple) -> tuple:
    """One sampling thread's working arrays, the `scratch` argument of run_samples (in the order it unpacks
    them): a path of `depth` plies, a node's `max_moves` children (under RAVE with the prior's virtual MC and
    AMAF visits of each, rave_init_edges), `trace` AMAF trace entries, RAVE's hash scratch (slots for twice the
    moves) and the threads' shared joint-expansion `jobs`."""
    m = max_moves
    slots = 1 << max(2, math.ceil(math.log2(2 * m))) if rave else 1
    hscratch = (
        np.zeros(slots, np.int64),
        np.zeros(slots, np.int64),
        np.zeros(slots, np.int64),
        np.zeros(slots, np.int64),
        np.zeros(2, np.int64),
    )
    return (
        np.zeros(depth + 1, np.int64),
        np.zeros(m, np.int32),
        np.zeros(m, np.float64),
        np.zeros(m, np.int8),
        np.zeros(m, np.int64),
        np.zeros(m, np.float64),
        np.zeros(depth + 1, np.int64),
        np.zeros(m, np.float64),
        np.zeros((2, m if rave else 1), np.float64),
        np.zeros(max(1, trace), np.int32),
        np.zeros(m + 1, np.int64),
        hscratch,
        jobs,
    )


class SampleKernel:
    """run_samples of one game: called like the kernel, it runs the variant built for the call's feature set
    (the RAVE policy, progressive widening; see build_kernels), made at its first use and then compiled or
    loaded from numba's cache, so a search compiles only the features its options use."""

    def __init__(self, build: Callable[[bool, bool], Any]):
        self._build = build
        self._variants: dict[tuple[bool, bool], Any] = {}
        self._lock = threading.Lock()

    def variant(self, rave: bool, widen: bool) -> Any:
        """The run_samples kernel with the RAVE policy's steps (`rave`) and progressive widening (`widen`)."""
        with self._lock:
            if (rave, widen) not in self._variants:
                self._variants[rave, widen] = self._build(rave, widen)
            return self._variants[rave, widen]

    def __call__(self, pos, tree, ctl, weights, gparams, rng, fp, ip, scratch, max_samples):
        """run_samples' call: the variant of the policy in `ip` and the widening in `fp`; samples completed."""
        rave = bool(ip[IP_POLICY] == POLICY_RAVE)
        kernel = self.variant(rave, not rave and bool(fp[FP_WIDEN_K0] > 0.0))
        return kernel(pos, tree, ctl, weights, gparams, rng, fp, ip, scratch, max_samples)


def build_kernels(game, stamp):
    """Build the game-calling kernel(s) of the core for one game module: (SampleKernel, run_helper).

    The closure captures only the module object (pickled by name) and an integer `stamp` (hash of the game's
    and the core's sources): numba caches it per game, and a changed source changes the stamp, which makes
    a new cache entry instead of silently reusing stale machine code (numba tracks only the closure's own
    file). Game functions are reached as `game.expand(...)` etc.: direct calls to module-level kernels.
    The RAVE policy calls `expand_amaf` (the optional contract kernel that also reports the playouts) on
    `amaf`: the game when it has one, else the stand-in of module `standins` (likewise the other optional
    kernels: a game with joint expansion and no finishing round has no finish_open / finish_children).

    run_samples is built once per feature set: the closure constants RAVE (the policy's AMAF steps), WIDEN
    (progressive widening) and PLAIN (the game's plain `expand`: RAVE, or a game without joint expansion)
    guard their code with `if CONSTANT and ...`, which numba prunes before typing. A variant without a
    feature never compiles its kernels (for shogi without widening: the move prior and the widened child's
    value; without RAVE: the AMAF updates and the plain expansion); the others are also cache keys."""
    from numba import njit as _njit

    amaf = game if hasattr(game, 'expand_amaf') else standins
    leafplay = game if hasattr(game, 'leaf_playout') else standins  # RAVE's playouts from a leaf (FP_EXPAND_N)
    refine = game if hasattr(game, 'leaf_value') else standins
    joinable = hasattr(game, 'expand_children')
    joiner = game if joinable else standins
    finisher = game if hasattr(game, 'finish_open') else standins  # a joint expansion's optional second round
    widener = game if hasattr(game, 'order_children') else standins

    def build(rave: bool, widen_on: bool):
        RAVE = rave
        WIDEN = widen_on and joinable
        PLAIN = rave or not joinable

        @_njit(cache=True, nogil=True)
        def run_samples(pos, tree, ctl, weights, gparams, rng, fp, ip, scratch, max_samples):
            """Run up to max_samples MCSS samples (seed 001 §3.1 steps 1-4) from ctl[C_ROOT] on this thread's
            pos copy (at the root position on entry and on return). Returns the number of samples completed.
            Polls ctl between samples; stops early when the root is proven."""
            source_stamp = stamp  # noqa: F841  (keeps the stamp in the closure cells = the cache key)
            (
                path_nodes,
                moves,
                values,
                cflags,
                keys,
                wbuf,
                path_edges,
                prior,
                pcounts,
                trace,
                tstart,
                hscratch,
                jobs,
            ) = scratch
            job, jmoves, jvalues, jflags, jpos = jobs
            me = ip[IP_THREAD]
            publish = joinable and ip[IP_PUBLISH] != 0
            my_job = me * J_STRIDE
            joint = joinable and ip[IP_JOINT] != 0
            value = tree[T_VALUE]
            state = tree[T_STATE]
            flags = tree[T_FLAGS]
            emove = tree[T_EMOVE]
            echild = tree[T_ECHILD]
            evisits = tree[T_EVISITS]
            policy = ip[IP_POLICY]
            graph = ip[IP_GRAPH] != 0
            max_depth = min(ip[IP_MAXDEPTH], path_nodes.shape[0] - 1)
            t_back = fp[FP_TBACK]
            vscale = fp[FP_VSCALE]
            amaf_distance = fp[FP_AMAF_DISTANCE]
            widen = joinable and tree[T_NMOVES].shape[0] > 1 and fp[FP_WIDEN_K0] > 0.0 and policy != POLICY_RAVE
            own_counts = tree[T_RC].shape[0] > 1  # RAVE with per-child prior counts (rave_init_edges)
            expand_n = fp[FP_EXPAND_N] if RAVE and policy == POLICY_RAVE else 0.0
            root = ctl[C_ROOT]
            done = 0
            collisions = 0
            cycles = 0
            joined = 0
            while done < max_samples:
                if is_proven(value[root]) and (atomic_load(state, root) & PHASE_MASK) == EXPANDED:
                    break
                if not claim_sample(ctl):
                    break
                while True:  # one sample; a collision restarts it under the same ticket
                    node = root
                    d = 0
                    path_nodes[0] = root
                    collided = False
                    expanded_leaf = False
                    widened = False
                    played = False  # a leaf playout (FP_EXPAND_N) updated the path's statistics
                    while True:
                        st = atomic_load(state, node) & PHASE_MASK
                        if st == EXPANDED:
                            if tree[T_COUNT][node] == 0 or is_proven(value[node]) or d >= max_depth:
                                break
                            i = widen_claim(tree, node, node == root, fp) if WIDEN and widen else -1
                            if WIDEN and i >= 0:  # progressive widening: this sample enters node's next move
                                wmove = emove[tree[T_FIRST][node] + i]
                                wvalue, wflags, wwork = widener.child_value(pos, weights, gparams, wmove, value[node])
                                atomic_add(ctl, C_WORK, wwork)
                                atomic_add(ctl, C_CHILDREN, 1)
                                game.do_move(pos, wmove)
                                wkey = game.pos_key(pos)
                                game.undo_move(pos)
                                wchild = new_child(tree, ctl, wkey, wvalue, wflags, graph, d + 1)
                                widened = widen_publish(tree, ctl, node, i, wchild)
                                break
                            e = select_edge(tree, node, policy, fp, rng, wbuf, joint)
                            if e < 0:
                                collided = True  # every probable child is being expanded by another thread
                                break
                            child = echild[e]
                            if policy == POLICY_UCT:
                                atomic_add(evisits, e, 1)  # before the cycle test, so UCT moves on
                            if graph and on_path(path_nodes, d, child):
                                cycles += 1  # a repetition on this path: end the sample here
                                break
                            game.do_move(pos, emove[e])
                            path_edges[d] = e
                            d += 1
                            path_nodes[d] = child
                            node = child
                            continue
                        if flags[node] & FLAG_TERMINAL:
                            break
                        if RAVE and expand_n > 0.0 and d > 0:
                            e = path_edges[d - 1]
                            if tree[T_RN][e] - prior_visits_of(tree, e, fp[FP_PRIOR_N]) < expand_n:
                                # not yet expanded: one playout from the leaf itself (MoGo's, Pachi's trees)
                                lv, tlen, lwork = leafplay.leaf_playout(pos, weights, gparams, rng, trace)
                                if tlen >= 0:  # (a game without leaf playouts expands instead)
                                    leaf_played(
                                        tree,
                                        ctl,
                                        path_nodes,
                                        path_edges,
                                        d,
                                        d - 1,
                                        lv,
                                        trace,
                                        tlen,
                                        lwork,
                                        vscale,
                                        amaf_distance,
                                        hscratch,
                                    )
                                    played = True
                                    break
                        lazy = flags[node] & FLAG_LAZY
                        if not lazy and atomic_load(ctl, C_MEMFULL) != 0:
                            break
                        claimed = st != EXPANDING and atomic_cas(state, node, UNEXPANDED, EXPANDING) == UNEXPANDED
                        if joint and not claimed:
                            # another thread is expanding (or refining) node: help with its children, wait for
                            # the node to be published, then go on from it as one thread would have
                            base = find_job(job, node)
                            if base >= 0:
                                r = base // J_STRIDE
                                joined += joiner.expand_children(
                                    pos, weights, gparams, jmoves[r], jvalues[r], jflags[r], job, base, node
                                )
                            base = find_job(job, node | J_FINISH)  # its finishing round (finish_open)
                            if base >= 0:
                                r = base // J_STRIDE
                                joined += finisher.finish_children(
                                    pos, weights, gparams, jmoves[r], jvalues[r], jflags[r], job, base, node | J_FINISH
                                )
                            while (atomic_load(state, node) & PHASE_MASK) == EXPANDING:
                                if atomic_load(ctl, C_STOP) != 0:
                                    break
                                cpu_yield()
                            if (atomic_load(state, node) & PHASE_MASK) == EXPANDING:
                                collided = True
                                break
                            continue
                        if not claimed:
                            collided = True
                            break
                        if lazy and flags[node] & FLAG_LAZY:  # re-read under the claim: refine exactly once
                            v, work = refine.leaf_value(pos, weights, gparams)
                            atomic_add(ctl, C_WORK, work)
                            value[node] = v
                            flags[node] &= ~FLAG_LAZY
                            atomic_store(state, node, UNEXPANDED)
                            atomic_add(ctl, C_REFINED, 1)
                            expanded_leaf = True
                            break
                        n = -1
                        n_moves = -1  # the moves of node; more than the n children only under progressive widening
                        em, ev, ef = moves, values, cflags
                        if RAVE and policy == POLICY_RAVE:
                            if own_counts:  # the shared pair, for the children the game gives no counts of their own
                                pcounts[0, :] = fp[FP_PRIOR_N]
                                pcounts[1, :] = fp[FP_PRIOR_AMAF]
                            n, work = amaf.expand_amaf(
                                pos, weights, gparams, rng, moves, values, cflags, prior, trace, tstart, pcounts
                            )
                        elif joinable:  # through this thread's job, which others may join (open_job)
                            em, ev, ef = jmoves[me], jvalues[me], jflags[me]
                            n_moves = game.gen_moves(pos, em)
                            n = n_moves
                            if WIDEN and widen:  # the most probable moves enter now, the rest in order (root: all)
                                k0 = n_moves if node == root else np.int64(fp[FP_WIDEN_K0])
                                n = widener.order_children(pos, weights, gparams, em, n_moves, k0, prior)
                                moves[:n] = em[:n]  # finish_open may sort the entered moves: align_prior
                            if publish:
                                jpos[me][:] = pos  # written before open_job's release store of the word
                            open_job(job, my_job, node, n)
                            joiner.expand_children(pos, weights, gparams, em, ev, ef, job, my_job, node)
                            work = close_job(job, my_job, n)
                            m = finisher.finish_open(pos, weights, gparams, em, ev, ef, n, job, my_job)
                            if m > 0:  # the finishing round, joined like the first (finish_open)
                                open_job(job, my_job, node | J_FINISH, m)
                                finisher.finish_children(
                                    pos, weights, gparams, em, ev, ef, job, my_job, node | J_FINISH
                                )
                                work += close_job(job, my_job, m)
                        if PLAIN and n < 0:
                            n, work = game.expand(pos, weights, gparams, rng, moves, values, cflags)
                            prior[:n] = 0.5
                            tstart[: n + 1] = 0
                        if n_moves < 0:
                            n_moves = n
                        atomic_add(ctl, C_WORK, work)
                        evaluated = evaluated_children(ef, n)
                        atomic_add(ctl, C_CHILDREN, evaluated)
                        if graph:
                            for i in range(n):
                                game.do_move(pos, em[i])
                                keys[i] = game.pos_key(pos)
                                game.undo_move(pos)
                        if WIDEN and widen:
                            align_prior(em, n, n_moves, moves, prior, values)
                        if not attach_children(tree, ctl, node, n, n_moves, em, ev, ef, keys, graph, d + 1, values):
                            atomic_store(ctl, C_MEMFULL, 1)
                            atomic_store(state, node, UNEXPANDED)
                            break
                        if not graph:
                            tree[T_KEY][node] = game.pos_key(pos)
                        if n_moves == 0:
                            flags[node] |= FLAG_TERMINAL  # no legal move although the game did not flag it
                        else:
                            if RAVE and policy == POLICY_RAVE:
                                rave_init_edges(tree, node, n, ev, ef, prior, pcounts, fp)
                                if expand_n > 0.0 and evaluated == 0:  # no child ran a playout: the leaf does
                                    lv, tlen, lwork = leafplay.leaf_playout(pos, weights, gparams, rng, trace)
                                    if tlen >= 0:
                                        leaf_played(
                                            tree,
                                            ctl,
                                            path_nodes,
                                            path_edges,
                                            d,
                                            d,
                                            lv,
                                            trace,
                                            tlen,
                                            lwork,
                                            vscale,
                                            amaf_distance,
                                            hscratch,
                                        )
                                        played = True
                                rave_update(
                                    tree,
                                    path_nodes,
                                    path_edges,
                                    d,
                                    em,
                                    ev,
                                    ef,
                                    n,
                                    trace,
                                    tstart,
                                    vscale,
                                    amaf_distance,
                                    hscratch,
                                )
                            t_node = annealed_temperature(
                                state[node] >> 2, t_back, fp[FP_BACK_ANNEAL_N], fp[FP_TBACK_MIN]
                            )
                            value[node] = node_value(tree, node, policy, t_node, vscale)
                        atomic_store(state, node, EXPANDED)
                        atomic_add(ctl, C_EXPANSIONS, 1)
                        expanded_leaf = True
                        break
                    if not collided:
                        atomic_max(ctl, C_SELDEPTH, d + 1 if expanded_leaf or widened else d)
                        if RAVE and policy == POLICY_RAVE and not expanded_leaf and not played:
                            rave_update_end(tree, path_edges, d, value[path_nodes[d]], vscale)
                        # a widening sample ends at the node that gained a child: it is recomputed first
                        backup_path(tree, path_nodes, d + 1 if widened else d, fp, policy)
                    for _ in range(d):
                        game.undo_move(pos)
                    if not collided:
                        break
                    collisions += 1
                    if atomic_load(ctl, C_STOP) != 0:
                        break
                done += 1
            atomic_add(ctl, C_COLLISIONS, collisions)
            atomic_add(ctl, C_JOINED, joined)
            atomic_add(ctl, C_CYCLES, cycles)
            return done

        return run_samples

    @_njit(cache=True, nogil=True)
    def run_helper(pos, ctl, weights, gparams, jobs, max_idle):
        """A helper thread: until stop, evaluate children of the expansions the sampling threads publish
        (run_samples with IP_PUBLISH), never sampling itself. One sampler plus helpers search exactly the
        tree one thread would (same draws, same values), faster. pos is this thread's scratch position.
        Returns the children evaluated, also early after max_idle scans in a row found nothing to do (the
        caller then sleeps: samplers that idle, e.g. on a proven root, must not keep a core spinning)."""
        source_stamp = stamp  # noqa: F841  (keeps the stamp in the closure cells = the cache key)
        job, jmoves, jvalues, jflags, jpos = jobs
        joined = 0
        idle_scans = 0
        while atomic_load(ctl, C_STOP) == 0 and idle_scans < max_idle:
            idle = True
            for base in range(0, job.shape[0], J_STRIDE):
                w = atomic_load(job, base + J_WORD)
                node = w >> J_SHIFT
                if node < 0 or (w & J_INDEX) >= atomic_load(job, base + J_N):
                    continue
                r = base // J_STRIDE
                pos[:] = jpos[r]
                if (atomic_add(job, base + J_WORD, 0) >> J_SHIFT) != node:
                    continue  # closed (maybe reopened) while copying: the copy may be torn
                row = jmoves[r], jvalues[r], jflags[r]
                if node & J_FINISH:  # `node` is the round's tag: a finishing round (finish_open)
                    joined += finisher.finish_children(pos, weights, gparams, row[0], row[1], row[2], job, base, node)
                else:
                    joined += joiner.expand_children(pos, weights, gparams, row[0], row[1], row[2], job, base, node)
                idle = False
            if idle:
                idle_scans += 1
                cpu_yield()
            else:
                idle_scans = 0
        atomic_add(ctl, C_JOINED, joined)
        return joined

    return SampleKernel(build), run_helper
