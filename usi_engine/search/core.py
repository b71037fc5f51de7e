"""Game-agnostic MCSS core: node pool layout, selection, backup, allocation, graph table, PV, reuse.

Everything here is a module-level ``@njit(cache=True, nogil=True)`` kernel over plain numpy arrays; the
one kernel that calls a game (``run_samples``) is built per game by ``build_kernels`` (see docs/search.md,
"Dispatch and caching").

Pool (structure of arrays, preallocated; ``tree`` is a tuple of them, indices T_*):
  nodes  value f64 (negamax E, from the node's side to move), first i64 (first edge), count i32 (edges),
         key i64 (position key), state i64 (low 2 bits UNEXPANDED / EXPANDING / EXPANDED, upper bits a backup
         sequence counter), flags i8 (FLAG_TERMINAL), depth i16 (plies below the search root at creation)
  edges  move i32, child i32 (node index), visits i64 (only for the UCT policy; length 1 otherwise),
         MC-RAVE statistics rn, rw, an, aw f64 (only for the RAVE policy; length 1 otherwise): MC count
         N(s,a) and summed outcome, AMAF count N~(s,a) and summed outcome (seed 000 eq. 13-17), outcomes
         in [0, 1] from the mover's side, virtual prior visits included (eq. 48-51)
  table  key i64, node i64 (open addressing, graph mode only; node -1 empty, -2 being written)
  widening (progressive widening only; length 1 otherwise): moves i32 per node, the edges reserved at its
         expansion (all its moves, the ones not yet entered after the `count` entered ones, child -1), and
         wide i64 per node, the entered children plus one while a thread is entering the next (widen_claim)
A node is *proven* when |value| >= MATE_THRESHOLD; that is derived from the value, not stored.
``ctl`` is one shared int64 array of control words and counters (indices C_*); hot counters sit on their
own cache lines.
"""

import numpy as np
from numba import njit

from usi_engine.search.atomics import atomic_add, atomic_cas, atomic_load, atomic_store, cpu_yield
from usi_engine.search.rng import mix64, next_unit
from usi_engine.search.values import MATE_THRESHOLD, is_proven

# --- node state (low two bits of state[]) and flags ---------------------------------------------
UNEXPANDED, EXPANDING, EXPANDED = 0, 1, 2
PHASE_MASK = 3
SEQ_STEP = 4  # added to state[] by every child update (see backup_node)
FLAG_TERMINAL = 1  # the game marked the position terminal: its value is exact
FLAG_NO_SIM = 2  # expand_amaf: the child's value is a guess (its prior), no playout ran from it
FLAG_LAZY = 4  # the value is the game's cheap estimate; leaf_value refines it when first reached
FLAG_FORCING = 8  # the move to this child is forcing (shogi: a check): selection adds FP_FORCING to its value

# --- tree tuple indices ---------------------------------------------------------------------------
T_VALUE, T_FIRST, T_COUNT, T_KEY, T_STATE, T_FLAGS, T_DEPTH = 0, 1, 2, 3, 4, 5, 6
T_EMOVE, T_ECHILD, T_EVISITS, T_TKEY, T_TNODE = 7, 8, 9, 10, 11
T_RN, T_RW, T_AN, T_AW = 12, 13, 14, 15
T_NMOVES, T_WIDE = 16, 17
T_EBIAS = 18  # per edge under progressive widening: log p of the move by the game's prior (order_children)

# --- ctl indices ------------------------------------------------------------------------------------
C_STOP, C_NODE_LIMIT, C_SAMPLE_LIMIT, C_ROOT, C_MEMFULL = 0, 1, 2, 3, 4
C_SAMPLES = 8  # samples started (claimed against C_SAMPLE_LIMIT)
C_WORK = 16  # positions evaluated (the games' `work`), the `nodes` statistic
C_NODES = 24  # node slots used
C_EDGES = 32  # edge slots used
C_TABLE, C_PRIVATE, C_CHILDREN, C_WASTED_EDGES = 40, 41, 42, 43
C_SELDEPTH, C_COLLISIONS, C_CYCLES, C_EXPANSIONS = 44, 45, 46, 47
C_REFINED = 48  # lazy leaves refined by the game's leaf_value
C_JOINED = 49  # children evaluated by a thread that joined another thread's expansion
CTL_SIZE = 56

# --- float / int parameter vectors of run_samples ---------------------------------------------------
FP_TSEL, FP_TBACK, FP_CUCT, FP_VSCALE, FP_RAVE_BIAS, FP_PRIOR_N, FP_PRIOR_AMAF, FP_FORCING = 0, 1, 2, 3, 4, 5, 6, 7
FP_ANNEAL_N, FP_TSEL_MIN = 8, 9  # visit-annealed selection temperature (annealed_temperature)
FP_BACK_ANNEAL_N, FP_TBACK_MIN = 10, 11  # visit-annealed backup temperature (backup_node)
FP_WIDEN_K0, FP_WIDEN_A, FP_WIDEN_B = 12, 13, 14  # progressive widening (widen_target); k0 = 0: off
FP_PRIOR_BETA = 15  # progressive bias: selection weighs a child by p^beta (select_softmax); 0 = off
FP_SIZE = 16
IP_POLICY, IP_GRAPH, IP_MAXDEPTH, IP_THREAD, IP_JOINT, IP_PUBLISH = 0, 1, 2, 3, 4, 5
IP_SIZE = 6
POLICY_SOFTMAX, POLICY_UCT, POLICY_RAVE = 0, 1, 2
NO_MOVE = -1  # a trace entry that is no move (a pass in a Go playout): keeps the parity

TABLE_EMPTY, TABLE_BUSY = -1, -2

# --- joint expansion jobs (one per thread; see open_job) -------------------------------------------
J_WORD, J_N, J_DONE, J_WORK = 0, 1, 2, 3  # word = tag << J_SHIFT | next item; items; finished; their work
J_AUX = 4  # a float the game's finishing round shares between its threads (set_job_aux, job_aux_max)
J_STRIDE = 8  # one cache line per job
J_SHIFT = 20  # children per node < 2^20
J_INDEX = (1 << J_SHIFT) - 1
J_CLOSED = -1  # the word of a job no thread may join (its node part is -1)
J_FINISH = 1 << 42  # tag = node | J_FINISH: the job's second, finishing round (finish_open); node < 2^42
_LOW63 = (1 << 63) - 1
LAZY_RANK_OFFSET = 1.0e6  # edge_rank: lazy estimates rank below every refined value
NO_LIMIT = np.iinfo(np.int64).max
_INF = np.inf


def new_tree(n_nodes, n_edges, table_slots=1, uct=False, rave=False, widen=False):
    """The one constructor of the pool's tree tuple (indices T_*): every pool has the same array types, so
    numba compiles each tree kernel once. Per-edge visit counts only for UCT, RAVE statistics only for
    RAVE and the per-node widening arrays and per-edge log priors only for progressive widening (length 1
    otherwise); table_slots a power of two (graph mode) or 1."""
    er = n_edges if rave else 1
    wn = n_nodes if widen else 1
    we = n_edges if widen else 1
    return (
        np.zeros(n_nodes, np.float64),
        np.full(n_nodes, -1, np.int64),
        np.zeros(n_nodes, np.int32),
        np.zeros(n_nodes, np.int64),
        np.zeros(n_nodes, np.int64),
        np.zeros(n_nodes, np.int8),
        np.zeros(n_nodes, np.int16),
        np.zeros(n_edges, np.int32),
        np.full(n_edges, -1, np.int32),
        np.zeros(n_edges if uct else 1, np.int64),
        np.zeros(table_slots, np.int64),
        np.full(table_slots, TABLE_EMPTY, np.int64),
        np.zeros(er),
        np.zeros(er),
        np.zeros(er),
        np.zeros(er),
        np.zeros(wn, np.int32),
        np.zeros(wn, np.int64),
        np.zeros(we, np.float32),
    )


def new_jobs(threads, max_moves, pos):
    """The joint-expansion jobs of `threads` threads (open_job): (words int64[threads * J_STRIDE], moves
    int32[threads, max_moves], values float64[threads, max_moves], flags int8[threads, max_moves], positions
    [threads, len(pos)] of pos's dtype: the node's position, published for helper threads); every job
    closed."""
    words = np.zeros(threads * J_STRIDE, np.int64)
    words[J_WORD::J_STRIDE] = J_CLOSED
    return (
        words,
        np.zeros((threads, max_moves), np.int32),
        np.zeros((threads, max_moves), np.float64),
        np.zeros((threads, max_moves), np.int8),
        np.zeros((threads, pos.shape[0]), pos.dtype),
    )


@njit(cache=True, nogil=True)
def open_job(job, base, node, n):
    """Open the job at job[base:] for the n children of `node`, whose moves the owner has written to its
    job's move row: from now on any thread that reaches `node` may claim children (claim_child), evaluate
    them into the job's value/flag rows and report each with child_done. The owner claims like everyone and
    alone accounts the job's work (close_job), so a node limit sees the same counts whoever evaluated."""
    atomic_store(job, base + J_N, n)
    atomic_store(job, base + J_DONE, 0)
    atomic_store(job, base + J_WORK, 0)
    atomic_store(job, base + J_WORD, node << J_SHIFT)


@njit(cache=True, nogil=True)
def claim_child(job, base, node):
    """The index of an unclaimed child of `node` in the job at job[base:], now claimed by the caller; -1 when
    none is left or the job is no longer `node`'s. One CAS on the word that holds both the node and the next
    index, so a claim can never land in a job that was closed and reopened for another node meanwhile."""
    while True:
        w = atomic_load(job, base + J_WORD)
        i = w & J_INDEX
        if (w >> J_SHIFT) != node or i >= atomic_load(job, base + J_N):
            return -1
        if atomic_cas(job, base + J_WORD, w, w + 1) == w:
            return i


@njit(cache=True, nogil=True)
def child_done(job, base, work):
    """Report one claimed child evaluated with `work` positions (its value and flags stored before this full
    barrier)."""
    atomic_add(job, base + J_WORK, work)
    atomic_add(job, base + J_DONE, 1)


@njit(cache=True, nogil=True)
def close_job(job, base, n):
    """The owner's end of a job: wait until all n children are evaluated (the last ones may be another
    thread's), close it to joiners (and helpers: the job's position may be rewritten after this) and return
    the work of all its children."""
    while atomic_load(job, base + J_DONE) < n:
        cpu_yield()
    atomic_store(job, base + J_WORD, J_CLOSED)
    return atomic_load(job, base + J_WORK)


@njit(cache=True, nogil=True)
def _ordered_bits(x):
    """An int64 whose order is the order of the float64 x (its bits, the non-sign ones flipped if negative)."""
    a = np.empty(1, np.float64)
    a[0] = x
    b = a.view(np.int64)[0]
    return b ^ _LOW63 if b < 0 else b


@njit(cache=True, nogil=True)
def _from_ordered_bits(b):
    a = np.empty(1, np.int64)
    a[0] = b ^ _LOW63 if b < 0 else b
    return a.view(np.float64)[0]


@njit(cache=True, nogil=True)
def set_job_aux(job, base, x):
    """Set the job's shared float (before the round that uses it is opened: open_job publishes it)."""
    atomic_store(job, base + J_AUX, _ordered_bits(x))


@njit(cache=True, nogil=True)
def job_aux(job, base):
    """The job's shared float now."""
    return _from_ordered_bits(atomic_load(job, base + J_AUX))


@njit(cache=True, nogil=True)
def job_aux_max(job, base, x):
    """Raise the job's shared float to x if x is larger (atomic)."""
    atomic_max(job, base + J_AUX, _ordered_bits(x))


@njit(cache=True, nogil=True)
def find_job(job, node):
    """The base of the open job of `node`, or -1."""
    for base in range(0, job.shape[0], J_STRIDE):
        if (atomic_load(job, base + J_WORD) >> J_SHIFT) == node:
            return base
    return -1


@njit(cache=True, nogil=True)
def proven_value(tree, v):
    """(proven, E(v), min child E) from v's children's proven results alone: a child that is a proven loss
    for its side to move wins v (MATE - distance: one point per ply, quickest mate); if every child is a
    proven win for its side, v is lost (longest resistance)."""
    value = tree[T_VALUE]
    echild = tree[T_ECHILD]
    f = tree[T_FIRST][v]
    n = tree[T_COUNT][v]
    min_e = _INF
    all_won = True
    for i in range(n):
        e = value[echild[f + i]]
        if e < min_e:
            min_e = e
        if e < MATE_THRESHOLD:
            all_won = False
    if min_e <= -MATE_THRESHOLD:
        return True, -min_e - 1.0, min_e
    if all_won and full_width(tree, v):
        return True, -min_e + 1.0, min_e
    return False, 0.0, min_e


@njit(cache=True, nogil=True)
def reserved_edges(tree, v):
    """The edges v reserved at its expansion: all its moves under progressive widening, else its children."""
    nm = tree[T_NMOVES]
    return nm[v] if nm.shape[0] > 1 else tree[T_COUNT][v]


@njit(cache=True, nogil=True)
def full_width(tree, v):
    """True when every move of v has entered as a child (always, without progressive widening)."""
    nm = tree[T_NMOVES]
    return nm.shape[0] <= 1 or tree[T_COUNT][v] >= nm[v]


@njit(cache=True, nogil=True)
def clamp_heuristic(r):
    """A heuristic value clamped below MATE_THRESHOLD so it never masquerades as proven."""
    limit = MATE_THRESHOLD - 1.0
    if r > limit:
        return limit
    if r < -limit:
        return -limit
    return r


@njit(cache=True, nogil=True)
def backup_value(tree, v, t_back):
    """E(v) recomputed from v's children (seed 001 eq. 3, negamax): E(v) = sum_c pi_b(c|v) * (-E(c)),
    pi_b(c|v) = exp(-E(c)/T_back)/Z, max-shifted. T_back <= 0 gives minimax (UCTMAX_H backup).
    Proven results first (proven_value); a heuristic result is clamped (clamp_heuristic)."""
    proven, r, min_e = proven_value(tree, v)
    if proven:
        return r
    if t_back <= 0.0:
        return clamp_heuristic(-min_e)
    value = tree[T_VALUE]
    echild = tree[T_ECHILD]
    f = tree[T_FIRST][v]
    z = 0.0
    s = 0.0
    for i in range(tree[T_COUNT][v]):
        e = value[echild[f + i]]
        w = np.exp(-(e - min_e) / t_back)
        z += w
        s -= w * e
    return clamp_heuristic(s / z)


@njit(cache=True, nogil=True)
def rave_value(tree, v, vscale):
    """E(v) under the RAVE policy: proven results as in backup_value, else the mean simulation outcome q
    over v's edges (MC counts, priors included) on the value scale, vscale * (2q - 1)."""
    proven, r, _ = proven_value(tree, v)
    if proven:
        return r
    f = tree[T_FIRST][v]
    wins = 0.0
    count = 0.0
    for e in range(f, f + tree[T_COUNT][v]):
        wins += tree[T_RW][e]
        count += tree[T_RN][e]
    if count <= 0.0:
        return tree[T_VALUE][v]
    return clamp_heuristic(vscale * (2.0 * wins / count - 1.0))


@njit(cache=True, nogil=True)
def node_value(tree, v, policy, t_back, vscale):
    """E(v) recomputed from its children under the policy's backup rule."""
    if policy == POLICY_RAVE:
        return rave_value(tree, v, vscale)
    return backup_value(tree, v, t_back)


@njit(cache=True, nogil=True)
def backup_node(tree, v, t_back, anneal_n, t_min, policy, vscale):
    """Store E(v) = node_value at the backup temperature annealed by v's visits (annealed_temperature),
    retrying until no child changed meanwhile.

    Writers of a child bump the parent's sequence (state += SEQ_STEP) after the child's value store; a
    backup that saw the sequence change recomputes. So the last value stored for v is always computed
    from the final child values of its path-mates (and at the temperature of its final visit count): the
    tree stays consistent under concurrent threads."""
    state = tree[T_STATE]
    while True:
        s0 = atomic_load(state, v)
        t = annealed_temperature(s0 >> 2, t_back, anneal_n, t_min)
        tree[T_VALUE][v] = node_value(tree, v, policy, t, vscale)
        if atomic_add(state, v, 0) == s0:  # seq_cst read-modify-write: also orders the store above
            return


@njit(cache=True, nogil=True)
def annealed_temperature(visits, t, anneal_n, t_min):
    """A temperature annealed by a node's visits: t, or with anneal_n > 0 t / sqrt(1 + N/anneal_n), not below
    t_min, where N = the samples backed up through the node since its expansion (its sequence count,
    state >> 2). Selection: a node the search keeps returning to samples its best children more sharply, so
    samples turn into depth along the lines that decide the value; a rarely visited node keeps the paper's
    breadth. Backup: the softmax expectation of a well-explored node moves from the mean of its plausible
    children towards their best (eq. 3 at a lower T), so its value converges to the minimax value as the
    samples grow instead of keeping a bias of the order of T times the log of the number of near-equal
    children; a rarely visited node keeps the paper's averaging of noisy estimates. t <= 0 stays 0
    (minimax backup)."""
    if anneal_n <= 0.0 or t <= 0.0:
        return t
    a = t / np.sqrt(1.0 + visits / anneal_n)
    return a if a > t_min else t_min


@njit(cache=True, nogil=True)
def select_softmax(tree, v, t_sel, bonus, rng, wbuf, skip_busy=True, beta=0.0):
    """Sample an edge of v by pi(c|v) = exp(-E(c)/T_sel)/Z (seed 001 eq. 1-2), max-shifted. A child flagged
    FLAG_FORCING is selected as if E(c) were `bonus` lower (a prior on forcing moves; 0 = the paper's
    policy). Progressive bias (beta > 0, a pool with T_EBIAS): the logits are -E(c)/T_sel + beta log p(c),
    p the game's move prior (pi ~ p^beta exp(-E/T_sel); Chaslot et al. 2008 add their prior to the
    selection value in the same spirit). Backups and the best move use the plain values.

    skip_busy (threads that cannot join each other's expansions): children that another thread is expanding
    right now are left out and the rest renormalised: a thread
    that would follow another onto the node it is expanding samples a sibling instead of restarting from
    the root again and again (a spin that, on a line the softmax nearly always picks, burnt a whole core:
    tens of millions of restarts in a 3,000-sample search, the second thread adding nothing). The sibling
    may be improbable; its sample still refines a value the backup weighs, where a restart refines
    nothing. -1 (a collision: the sample restarts) only when no other child has any weight. One thread
    never meets a busy child, so its draws are unchanged. With joint expansions (run_samples) a busy child is
    drawn like any other: the thread joins its expansion, as a single thread would have waited for it."""
    value = tree[T_VALUE]
    flags = tree[T_FLAGS]
    state = tree[T_STATE]
    echild = tree[T_ECHILD]
    f = tree[T_FIRST][v]
    n = tree[T_COUNT][v]
    ebias = tree[T_EBIAS]
    lift = t_sel * beta if ebias.shape[0] > 1 else 0.0  # log p in cp at T_sel
    min_e = _INF
    for i in range(n):
        c = echild[f + i]
        e = value[c] - bonus if flags[c] & FLAG_FORCING else value[c]
        if lift != 0.0:
            e -= lift * ebias[f + i]
        wbuf[i] = e
        if e < min_e:
            min_e = e
    z = 0.0
    busy = 0.0
    for i in range(n):
        w = np.exp(-(wbuf[i] - min_e) / t_sel)
        z += w
        if skip_busy and (state[echild[f + i]] & PHASE_MASK) == EXPANDING:
            busy += w
            w = 0.0
        wbuf[i] = w
    z -= busy
    if busy > 0.0 and z <= 0.0:
        return -1
    u = next_unit(rng) * z
    acc = 0.0
    for i in range(n):
        acc += wbuf[i]
        if u < acc:
            return f + i
    for i in range(n - 1, -1, -1):  # rounding: the last child with weight
        if wbuf[i] > 0.0:
            return f + i
    return f + n - 1


@njit(cache=True, nogil=True)
def select_uct(tree, v, c_uct):
    """UCB1 on edge visit counts (UCT_H of Ramanujan & Selman, seed 001 §2.2): argmax -E(c) +
    c_uct*sqrt(ln N(v) / N(c)); unvisited edges first, best static value first. Edge counts (not node
    counts) keep it sound on a graph (seed 002)."""
    value = tree[T_VALUE]
    echild = tree[T_ECHILD]
    visits = tree[T_EVISITS]
    f = tree[T_FIRST][v]
    n = tree[T_COUNT][v]
    total = 0
    best_new = -1
    best_new_q = -_INF
    for i in range(n):
        nv = visits[f + i]
        total += nv
        q = -value[echild[f + i]]
        if nv == 0 and q > best_new_q:
            best_new_q = q
            best_new = f + i
    if best_new >= 0:
        return best_new
    log_total = np.log(total + 1.0)
    best = f
    best_score = -_INF
    for i in range(n):
        score = -value[echild[f + i]] + c_uct * np.sqrt(log_total / visits[f + i])
        if score > best_score:
            best_score = score
            best = f + i
    return best


# --- MC-RAVE (seed 000 §4-5, Algorithm 2) ------------------------------------------------------------


@njit(cache=True, nogil=True)
def rave_beta(n, n_amaf, bias):
    """Weight of the AMAF value by the minimum-MSE schedule (seed 000 eq. 47):
    beta = n~ / (n + n~ + 4 n n~ b^2), with n = N(s,a), n~ = N~(s,a) and b the RAVE bias."""
    if n_amaf <= 0.0:
        return 0.0
    return n_amaf / (n + n_amaf + 4.0 * n * n_amaf * bias * bias)


@njit(cache=True, nogil=True)
def select_rave(tree, v, fp):
    """UCT-RAVE (seed 000 eq. 12 and 18): argmax (1 - beta) Q(s,a) + beta Q~(s,a) + c sqrt(ln N(s) / N(s,a)),
    beta by eq. 47. A child proven lost for its side to move is taken at once; children proven won for
    their side are avoided while any other edge exists."""
    value = tree[T_VALUE]
    echild = tree[T_ECHILD]
    rn, rw, an, aw = tree[T_RN], tree[T_RW], tree[T_AN], tree[T_AW]
    f = tree[T_FIRST][v]
    n = tree[T_COUNT][v]
    bias = fp[FP_RAVE_BIAS]
    c = fp[FP_CUCT]
    total = 0.0
    for e in range(f, f + n):
        total += rn[e]
    log_total = np.log(total + 1.0)
    best = f
    best_score = -_INF
    for e in range(f, f + n):
        ev = value[echild[e]]
        if ev <= -MATE_THRESHOLD:
            return e
        if ev >= MATE_THRESHOLD:
            score = -1.0
        else:
            nmc = max(rn[e], 1e-9)
            beta = rave_beta(nmc, an[e], bias)
            score = (1.0 - beta) * rw[e] / nmc + c * np.sqrt(log_total / nmc)
            if beta > 0.0:
                score += beta * aw[e] / an[e]
        if score > best_score:
            best_score = score
            best = e
    return best


@njit(cache=True, nogil=True)
def rave_outcome(child_value, vscale):
    """Outcome in [0, 1] for the mover of a child whose value (child's side) is child_value."""
    x = child_value / vscale
    if x > 1.0:
        x = 1.0
    elif x < -1.0:
        x = -1.0
    return 0.5 * (1.0 - x)


@njit(cache=True, nogil=True)
def rave_init_edges(tree, v, n, values, cflags, prior, fp):
    """Statistics of v's fresh edges: the heuristic prior H as virtual experience (seed 000 eq. 48-51,
    C = FP_PRIOR_N MC visits, C~ = FP_PRIOR_AMAF AMAF visits), plus the child's own playout, unless
    flagged FLAG_NO_SIM, as one real MC simulation."""
    f = tree[T_FIRST][v]
    pn, pa = fp[FP_PRIOR_N], fp[FP_PRIOR_AMAF]
    for i in range(n):
        e = f + i
        tree[T_RN][e] = pn
        tree[T_RW][e] = pn * prior[i]
        if (cflags[i] & FLAG_NO_SIM) == 0:
            tree[T_RN][e] += 1.0
            tree[T_RW][e] += rave_outcome(values[i], fp[FP_VSCALE])
        tree[T_AN][e] = pa
        tree[T_AW][e] = pa * prior[i]


@njit(cache=True, nogil=True)
def edge_map(tree, v, hkey, hval, hbuild, build):
    """Index v's edges by move in the open-addressing table hkey/hval (slots valid when hbuild == build)."""
    mask = hkey.shape[0] - 1
    f = tree[T_FIRST][v]
    for e in range(f, f + tree[T_COUNT][v]):
        m = tree[T_EMOVE][e]
        s = table_slot(m, mask)
        while hbuild[s] == build:
            s = (s + 1) & mask
        hbuild[s] = build
        hkey[s] = m
        hval[s] = e


@njit(cache=True, nogil=True)
def edge_slot(move, hkey, hbuild, build):
    """Slot of `move` in the current edge map, -1 if the node has no such edge."""
    mask = hkey.shape[0] - 1
    s = table_slot(move, mask)
    while hbuild[s] == build:
        if hkey[s] == move:
            return s
        s = (s + 1) & mask
    return -1


@njit(cache=True, nogil=True)
def amaf_credit(tree, move, z, hkey, hval, hbuild, hseen, build, stamp):
    """One AMAF update (seed 000 eq. 16-17) of the current node's edge `move` with outcome z, unless the
    move is not an edge there or this simulation already credited it (first occurrence only)."""
    s = edge_slot(move, hkey, hbuild, build)
    if s >= 0 and hseen[s] != stamp:
        hseen[s] = stamp
        e = hval[s]
        tree[T_AN][e] += 1.0
        tree[T_AW][e] += z


@njit(cache=True, nogil=True)
def rave_update(tree, path_nodes, path_edges, d, moves, values, cflags, n, trace, tstart, vscale, hscratch):
    """Statistics after the expansion of path_nodes[d], whose n children each ran one playout (child i:
    move moves[i], value values[i] from its side, playout moves trace[tstart[i]:tstart[i+1]]), except
    those flagged FLAG_NO_SIM (no simulation: skipped).

    MC (eq. 13-15): every path edge counts the n simulations and their outcomes from its mover's side.
    AMAF (eq. 16-17, Algorithm 2): at every path node s_t (t = 0..d) each simulation credits the edges of
    the moves played after s_t by s_t's side to move (every second move of path, child move and playout),
    the first occurrence of each move only; moves that are no edge of s_t (illegal there) are skipped."""
    hkey, hval, hbuild, hseen, ids = hscratch
    rn, rw = tree[T_RN], tree[T_RW]
    emove = tree[T_EMOVE]
    zsum = 0.0
    sims = 0
    for i in range(n):
        if (cflags[i] & FLAG_NO_SIM) == 0:
            zsum += rave_outcome(values[i], vscale)
            sims += 1
    for t in range(d):
        e = path_edges[t]
        rn[e] += sims
        rw[e] += zsum if (d - t) % 2 == 0 else sims - zsum
    for t in range(d + 1):
        ids[0] += 1
        build = ids[0]
        edge_map(tree, path_nodes[t], hkey, hval, hbuild, build)
        for i in range(n):
            if cflags[i] & FLAG_NO_SIM:
                continue
            ids[1] += 1
            stamp = ids[1]
            z = rave_outcome(values[i], vscale)
            if (d - t) % 2 == 1:
                z = 1.0 - z
            k = 0
            for u in range(t, d):
                if k % 2 == 0:
                    amaf_credit(tree, emove[path_edges[u]], z, hkey, hval, hbuild, hseen, build, stamp)
                k += 1
            if k % 2 == 0:
                amaf_credit(tree, moves[i], z, hkey, hval, hbuild, hseen, build, stamp)
            k += 1
            for j in range(tstart[i], tstart[i + 1]):
                if k % 2 == 0 and trace[j] != NO_MOVE:
                    amaf_credit(tree, trace[j], z, hkey, hval, hbuild, hseen, build, stamp)
                k += 1


@njit(cache=True, nogil=True)
def rave_update_end(tree, path_edges, d, end_value, vscale):
    """MC statistics of a sample that ended at path_nodes[d] without a playout (terminal, proven, cycle,
    depth cap): one simulation whose outcome is that node's value (its side to move)."""
    z = 1.0 - rave_outcome(end_value, vscale)
    for t in range(d):
        e = path_edges[t]
        tree[T_RN][e] += 1.0
        tree[T_RW][e] += z if (d - t) % 2 == 0 else 1.0 - z


@njit(cache=True, nogil=True)
def evaluated_children(cflags, n):
    """Children the game really evaluated (all but FLAG_NO_SIM ones): Go's playouts, the C_CHILDREN count."""
    k = 0
    for i in range(n):
        if (cflags[i] & FLAG_NO_SIM) == 0:
            k += 1
    return k


@njit(cache=True, nogil=True)
def expand_amaf(pos, weights, params, rng, out_moves, out_values, out_flags, out_prior, trace, tstart):
    """Stand-in for games without playouts to report: -1 = "use the game's plain expand" (the core then
    gives every child the even prior 1/2, and AMAF credit comes from the tree moves alone)."""
    return -1, 0


@njit(cache=True, nogil=True)
def expand_children(pos, weights, params, moves, values, flags, job, base, node):
    """Stand-in for games without joint expansion (never called: their expansions go through `expand`)."""
    return 0


@njit(cache=True, nogil=True)
def finish_open(pos, weights, params, moves, values, flags, n, job, base):
    """Stand-in for games without joint expansion (never called): no finishing round."""
    return 0


@njit(cache=True, nogil=True)
def finish_children(pos, weights, params, moves, values, flags, job, base, tag):
    """Stand-in for games without joint expansion (never called)."""
    return 0


@njit(cache=True, nogil=True)
def order_children(pos, weights, params, moves, n, k0, logp):
    """Stand-in for games without a move order for progressive widening: every move enters at once, no
    prior (log p = 0)."""
    logp[:n] = 0.0
    return n


@njit(cache=True, nogil=True)
def child_value(pos, weights, params, move, best):
    """Stand-in for games without progressive widening (never called: order_children enters every move)."""
    return 0.0, 0, 0


@njit(cache=True, nogil=True)
def leaf_value(pos, weights, params):
    """Stand-in for games that never flag a child FLAG_LAZY (so it is never called): (value, work)."""
    return 0.0, 0


@njit(cache=True, nogil=True)
def alloc(ctl, counter, k, capacity):
    """Reserve k consecutive slots of a pool whose use is counted in ctl[counter]; -1 when it would not fit
    (the counter never passes the capacity, so pool accounting stays exact)."""
    while True:
        old = atomic_load(ctl, counter)
        if old + k > capacity:
            return -1
        if atomic_cas(ctl, counter, old, old + k) == old:
            return old


@njit(cache=True, nogil=True)
def init_node(tree, c, value, flags, key, depth):
    """Write a fresh, unexpanded node into slot c (published later by the writer)."""
    tree[T_VALUE][c] = value
    tree[T_FIRST][c] = -1
    tree[T_COUNT][c] = 0
    tree[T_KEY][c] = key
    tree[T_FLAGS][c] = flags
    tree[T_DEPTH][c] = depth
    tree[T_STATE][c] = UNEXPANDED


@njit(cache=True, nogil=True)
def table_slot(key, mask):
    return np.int64(mix64(np.uint64(key)) & np.uint64(mask))


@njit(cache=True, nogil=True)
def find_or_insert(tree, ctl, key, value, depth, flags):
    """Node of position `key` in the graph table, created (unexpanded, `value`, `flags`) if absent; -1 when
    the pool is full. Lock-free: a slot is claimed by CAS (EMPTY -> BUSY), the node is written, the key is
    stored and the node index is published with a release store; readers spin on BUSY slots."""
    tkey = tree[T_TKEY]
    tnode = tree[T_TNODE]
    mask = tnode.shape[0] - 1
    s = table_slot(key, mask)
    while True:
        nd = atomic_load(tnode, s)
        if nd == TABLE_EMPTY:
            if atomic_cas(tnode, s, TABLE_EMPTY, TABLE_BUSY) != TABLE_EMPTY:
                continue
            c = alloc(ctl, C_NODES, 1, tree[T_VALUE].shape[0])
            if c < 0:
                atomic_store(tnode, s, TABLE_EMPTY)
                return -1
            init_node(tree, c, value, flags, key, depth)
            tkey[s] = key
            atomic_store(tnode, s, c)
            atomic_add(ctl, C_TABLE, 1)
            return c
        if nd == TABLE_BUSY:
            continue
        if tkey[s] == key:
            return nd
        s = (s + 1) & mask


@njit(cache=True, nogil=True)
def new_child(tree, ctl, key, value, cflags, graph, depth):
    """The node of a fresh child (unexpanded, `value`), -1 when the pool is full. Graph mode shares a
    non-terminal child through the table (find_or_insert); a terminal child is a private node, because
    terminals such as repetitions depend on the path (docs/search.md); tree mode always makes a new node."""
    if graph and not cflags & FLAG_TERMINAL:
        return find_or_insert(tree, ctl, key, value, depth, cflags & (FLAG_LAZY | FLAG_FORCING))
    c = alloc(ctl, C_NODES, 1, tree[T_VALUE].shape[0])
    if c >= 0:
        if graph:
            init_node(tree, c, value, FLAG_TERMINAL, key, depth)
        else:
            init_node(tree, c, value, cflags & (FLAG_TERMINAL | FLAG_LAZY | FLAG_FORCING), 0, depth)
        if graph:
            atomic_add(ctl, C_PRIVATE, 1)
    return c


@njit(cache=True, nogil=True)
def attach_children(tree, ctl, v, n, n_moves, moves, values, cflags, keys, graph, child_depth, logp):
    """Allocate and write v's n entered children and reserve the edges of all its n_moves moves (not yet
    published: the caller stores v's state); moves[n:n_moves] are the moves progressive widening may enter
    later, in that order (their edges have child -1; n_moves = n without widening); under widening each
    edge keeps its move's log prior logp[i] (T_EBIAS, select_softmax's progressive bias). Tree mode: n fresh
    nodes. Graph mode: non-terminal children are shared through the table; terminal children are private
    nodes (new_child). Returns False when the pool is full; the edges reserved by the failed attempt are
    counted in C_WASTED_EDGES (tree mode reserves the edges and all n nodes up front, so no node is wasted;
    graph-mode nodes created before the failure stay valid, reachable through the table)."""
    emove = tree[T_EMOVE]
    echild = tree[T_ECHILD]
    capacity = tree[T_VALUE].shape[0]
    ebase = alloc(ctl, C_EDGES, n_moves, emove.shape[0])
    if ebase < 0:
        return False
    if not graph:
        nbase = alloc(ctl, C_NODES, n, capacity)
        if nbase < 0:
            atomic_add(ctl, C_WASTED_EDGES, n_moves)
            return False
        for i in range(n):
            init_node(
                tree, nbase + i, values[i], cflags[i] & (FLAG_TERMINAL | FLAG_LAZY | FLAG_FORCING), 0, child_depth
            )
            emove[ebase + i] = moves[i]
            echild[ebase + i] = nbase + i
    else:
        for i in range(n):
            c = new_child(tree, ctl, keys[i], values[i], cflags[i], True, child_depth)
            if c < 0:
                atomic_add(ctl, C_WASTED_EDGES, n_moves)
                return False
            emove[ebase + i] = moves[i]
            echild[ebase + i] = c
    for i in range(n, n_moves):
        emove[ebase + i] = moves[i]
        echild[ebase + i] = -1
    tree[T_FIRST][v] = ebase
    tree[T_COUNT][v] = n
    if tree[T_NMOVES].shape[0] > 1:
        tree[T_NMOVES][v] = n_moves
        tree[T_WIDE][v] = n
        ebias = tree[T_EBIAS]
        for i in range(n_moves):
            ebias[ebase + i] = logp[i]
    return True


@njit(cache=True, nogil=True)
def align_prior(moves, n, n_moves, ordered, logp, out):
    """out[0:n_moves] = the log priors of moves[0:n_moves], given logp[i] of ordered[i] (the order the
    game's order_children left, before finish_open may have sorted the n entered moves among themselves;
    the waiting moves n..n_moves keep their places)."""
    for i in range(n):
        out[i] = 0.0
        for j in range(n):
            if ordered[j] == moves[i]:
                out[i] = logp[j]
                break
    for i in range(n, n_moves):
        out[i] = logp[i]


@njit(cache=True, nogil=True)
def widen_target(visits, fp):
    """Progressive widening: the children a node with `visits` samples backed up through it should hold,
    k(N) = k0 + floor(log_b(1 + N/a)) (Chaslot et al. 2008's logarithmic schedule; k0 = FP_WIDEN_K0,
    a = FP_WIDEN_A, b = FP_WIDEN_B)."""
    return np.int64(fp[FP_WIDEN_K0] + np.floor(np.log(1.0 + visits / fp[FP_WIDEN_A]) / np.log(fp[FP_WIDEN_B])))


@njit(cache=True, nogil=True)
def widen_claim(tree, v, is_root, fp):
    """The index of the move of v that this thread now enters (claimed), or -1: v has moves not yet entered
    and wants more children - the root always (every root move is searched), all entered children proven
    won for their side (backup clamps v's value to the lowest heuristic value; another move may save v),
    or its visits call for more (widen_target) - and no other thread is entering one (T_WIDE == count)."""
    nm = tree[T_NMOVES]
    if nm.shape[0] <= 1:
        return -1
    cnt = tree[T_COUNT][v]
    if cnt >= nm[v]:
        return -1
    if not is_root and tree[T_VALUE][v] > 1.0 - MATE_THRESHOLD:
        if widen_target(tree[T_STATE][v] >> 2, fp) <= cnt:
            return -1
    wide = tree[T_WIDE]
    if atomic_load(wide, v) != cnt or atomic_cas(wide, v, cnt, cnt + 1) != cnt:
        return -1
    return cnt


@njit(cache=True, nogil=True)
def widen_publish(tree, ctl, v, i, child):
    """Enter `child` as v's child i (claimed by widen_claim): its edge is written before the count grows, so
    a thread that sees the new count sees the child (the read-modify-write is a full barrier); child < 0
    (the pool is full) gives the claim back and flags the pool full instead."""
    if child < 0:
        atomic_store(tree[T_WIDE], v, i)
        atomic_store(ctl, C_MEMFULL, 1)
        return False
    tree[T_ECHILD][tree[T_FIRST][v] + i] = child
    atomic_add(tree[T_STATE], v, 0)
    tree[T_COUNT][v] = i + 1
    return True


@njit(cache=True, nogil=True)
def on_path(path_nodes, d, node):
    for i in range(d + 1):
        if path_nodes[i] == node:
            return True
    return False


@njit(cache=True, nogil=True)
def atomic_max(ctl, idx, val):
    while True:
        old = atomic_load(ctl, idx)
        if val <= old or atomic_cas(ctl, idx, old, val) == old:
            return


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
def select_edge(tree, v, policy, fp, rng, wbuf, joint):
    if policy == POLICY_UCT:
        return select_uct(tree, v, fp[FP_CUCT])
    if policy == POLICY_RAVE:
        return select_rave(tree, v, fp)
    t_sel = annealed_temperature(tree[T_STATE][v] >> 2, fp[FP_TSEL], fp[FP_ANNEAL_N], fp[FP_TSEL_MIN])
    return select_softmax(tree, v, t_sel, fp[FP_FORCING], rng, wbuf, not joint, fp[FP_PRIOR_BETA])


@njit(cache=True, nogil=True)
def backup_path(tree, path_nodes, d, fp, policy):
    """Back up path_nodes[d-1] .. path_nodes[0] (all expanded), bumping each sequence first."""
    state = tree[T_STATE]
    for i in range(d - 1, -1, -1):
        v = path_nodes[i]
        atomic_add(state, v, SEQ_STEP)
        backup_node(tree, v, fp[FP_TBACK], fp[FP_BACK_ANNEAL_N], fp[FP_TBACK_MIN], policy, fp[FP_VSCALE])


def build_kernels(game, stamp):
    """Build the game-calling kernel(s) of the core for one game module.

    The closure captures only the module object (pickled by name) and an integer `stamp` (hash of the game's
    and the core's sources): numba caches it per game, and a changed source changes the stamp, which makes
    a new cache entry instead of silently reusing stale machine code (numba tracks only the closure's own
    file). Game functions are reached as `game.expand(...)` etc.: direct calls to module-level kernels.
    The RAVE policy calls `expand_amaf` (the optional contract kernel that also reports the playouts) on
    `amaf`: the game when it has one, else this module's stand-in."""
    import sys

    from numba import njit as _njit

    amaf = game if hasattr(game, 'expand_amaf') else sys.modules[__name__]
    refine = game if hasattr(game, 'leaf_value') else sys.modules[__name__]
    joinable = hasattr(game, 'expand_children')
    joiner = game if joinable else sys.modules[__name__]
    widener = game if hasattr(game, 'order_children') else sys.modules[__name__]

    @_njit(cache=True, nogil=True)
    def run_samples(pos, tree, ctl, weights, gparams, rng, fp, ip, scratch, max_samples):
        """Run up to max_samples MCSS samples (seed 001 §3.1 steps 1-4) from ctl[C_ROOT] on this thread's
        pos copy (at the root position on entry and on return). Returns the number of samples completed.
        Polls ctl between samples; stops early when the root is proven."""
        source_stamp = stamp  # noqa: F841  (keeps the stamp in the closure cells = the cache key)
        path_nodes, moves, values, cflags, keys, wbuf, path_edges, prior, trace, tstart, hscratch, jobs = scratch
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
        widen = joinable and tree[T_NMOVES].shape[0] > 1 and fp[FP_WIDEN_K0] > 0.0 and policy != POLICY_RAVE
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
                while True:
                    st = atomic_load(state, node) & PHASE_MASK
                    if st == EXPANDED:
                        if tree[T_COUNT][node] == 0 or is_proven(value[node]) or d >= max_depth:
                            break
                        i = widen_claim(tree, node, node == root, fp) if widen else -1
                        if i >= 0:  # progressive widening: this sample enters node's next move as a child
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
                            joined += joiner.finish_children(
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
                    if policy == POLICY_RAVE:
                        n, work = amaf.expand_amaf(
                            pos, weights, gparams, rng, moves, values, cflags, prior, trace, tstart
                        )
                    elif joinable:  # through this thread's job, which others may join (open_job)
                        em, ev, ef = jmoves[me], jvalues[me], jflags[me]
                        n_moves = game.gen_moves(pos, em)
                        n = n_moves
                        if widen:  # the most probable moves enter now, the rest in order (the root: all)
                            k0 = n_moves if node == root else np.int64(fp[FP_WIDEN_K0])
                            n = widener.order_children(pos, weights, gparams, em, n_moves, k0, prior)
                            moves[:n] = em[:n]  # finish_open may sort the entered moves: align_prior
                        if publish:
                            jpos[me][:] = pos  # written before open_job's release store of the word
                        open_job(job, my_job, node, n)
                        joiner.expand_children(pos, weights, gparams, em, ev, ef, job, my_job, node)
                        work = close_job(job, my_job, n)
                        m = joiner.finish_open(pos, weights, gparams, em, ev, ef, n, job, my_job)
                        if m > 0:  # the finishing round, joined like the first (finish_open)
                            open_job(job, my_job, node | J_FINISH, m)
                            joiner.finish_children(pos, weights, gparams, em, ev, ef, job, my_job, node | J_FINISH)
                            work += close_job(job, my_job, m)
                    if n < 0:
                        n, work = game.expand(pos, weights, gparams, rng, moves, values, cflags)
                        prior[:n] = 0.5
                        tstart[: n + 1] = 0
                    if n_moves < 0:
                        n_moves = n
                    atomic_add(ctl, C_WORK, work)
                    atomic_add(ctl, C_CHILDREN, evaluated_children(ef, n))
                    if graph:
                        for i in range(n):
                            game.do_move(pos, em[i])
                            keys[i] = game.pos_key(pos)
                            game.undo_move(pos)
                    if widen:
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
                        if policy == POLICY_RAVE:
                            rave_init_edges(tree, node, n, ev, ef, prior, fp)
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
                                hscratch,
                            )
                        t_node = annealed_temperature(state[node] >> 2, t_back, fp[FP_BACK_ANNEAL_N], fp[FP_TBACK_MIN])
                        value[node] = node_value(tree, node, policy, t_node, vscale)
                    atomic_store(state, node, EXPANDED)
                    atomic_add(ctl, C_EXPANSIONS, 1)
                    expanded_leaf = True
                    break
                if not collided:
                    atomic_max(ctl, C_SELDEPTH, d + 1 if expanded_leaf or widened else d)
                    if policy == POLICY_RAVE and not expanded_leaf:
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
                    joined += joiner.finish_children(pos, weights, gparams, row[0], row[1], row[2], job, base, node)
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

    return run_samples, run_helper


# --- root, PV, statistics, reuse, checks ----------------------------------------------------------


@njit(cache=True, nogil=True)
def init_root(tree, ctl, key, graph):
    """Start an empty pool with the root (unexpanded, value 0) at node 0; in graph mode it is in the table."""
    tree[T_TNODE][:] = TABLE_EMPTY
    for i in range(CTL_SIZE):
        if i != C_NODE_LIMIT and i != C_SAMPLE_LIMIT:
            ctl[i] = 0
    if graph:
        find_or_insert(tree, ctl, key, 0.0, 0, 0)
    else:
        ctl[C_NODES] = 1
        init_node(tree, 0, 0.0, 0, key, 0)
    ctl[C_ROOT] = 0


@njit(cache=True, nogil=True)
def edge_rank(tree, e, by_visits):
    """Preference of edge e for the best move: -E(child) (highest probability), or under RAVE its MC count
    (the robust choice), with proven wins first and proven losses last. A child whose value is still a lazy
    estimate ranks below every refined child (LAZY_RANK_OFFSET): the move played has an exact leaf value."""
    c = tree[T_ECHILD][e]
    ev = tree[T_VALUE][c]
    if not by_visits:
        return -ev - LAZY_RANK_OFFSET if tree[T_FLAGS][c] & FLAG_LAZY else -ev
    if ev <= -MATE_THRESHOLD:
        return _INF
    if ev >= MATE_THRESHOLD:
        return -ev
    return tree[T_RN][e]


@njit(cache=True, nogil=True)
def best_edge(tree, v, by_visits):
    """Edge of v with the highest edge_rank; -1 if v has no published children."""
    if (atomic_load(tree[T_STATE], v) & PHASE_MASK) != EXPANDED or tree[T_COUNT][v] == 0:
        return -1
    f = tree[T_FIRST][v]
    best = f
    best_rank = edge_rank(tree, f, by_visits)
    for e in range(f + 1, f + tree[T_COUNT][v]):
        r = edge_rank(tree, e, by_visits)
        if r > best_rank:
            best = e
            best_rank = r
    return best


@njit(cache=True, nogil=True)
def principal_variation(tree, start, out_moves, seen, by_visits):
    """Moves from node `start` following best_edge; stops at an unexpanded node, at a repeated node (graph
    cycles) or when out_moves is full. Returns the length."""
    n = 0
    node = start
    seen[0] = start
    while n < out_moves.shape[0]:
        e = best_edge(tree, node, by_visits)
        if e < 0:
            break
        out_moves[n] = tree[T_EMOVE][e]
        node = tree[T_ECHILD][e]
        n += 1
        for i in range(n):
            if seen[i] == node:
                return n
        seen[n] = node
    return n


@njit(cache=True, nogil=True)
def child_of(tree, v, move):
    """Child node of v reached by `move`, -1 if v is not expanded or has no such edge."""
    if (tree[T_STATE][v] & PHASE_MASK) != EXPANDED:
        return -1
    f = tree[T_FIRST][v]
    for i in range(tree[T_COUNT][v]):
        if tree[T_EMOVE][f + i] == move:
            return tree[T_ECHILD][f + i]
    return -1


@njit(cache=True, nogil=True)
def selection_weight(tree, e, policy, t_sel, prior_n, min_e):
    """Unnormalised share of its parent's samples that edge e takes under the tree policy: the softmax weight
    exp(-(E(c) - min_e)/t_sel) (eq. 1-2; min_e the smallest child value), the edge's visits (UCT), or its real
    MC simulations, the prior's prior_n virtual visits removed (RAVE)."""
    if policy == POLICY_UCT:
        return float(tree[T_EVISITS][e])
    if policy == POLICY_RAVE:
        return max(tree[T_RN][e] - prior_n, 0.0)
    return np.exp(-(tree[T_VALUE][tree[T_ECHILD][e]] - min_e) / t_sel)


@njit(cache=True, nogil=True)
def collect_probable(tree, new_root, policy, t_sel, prior_n, allow, nmap, order, eorder, reach, keep):
    """Breadth-first numbering of the nodes reachable from new_root, keeping the children of an expanded node
    v only when allow[v] != 0 (all ones: tree reuse keeps everything): order[j] = old index of new node j,
    nmap[old] = j, eorder = old edge indices in the new edge order (kept children of order[0], order[1], ...),
    keep[j] = 1 when node j keeps its children, reach[j] its *reach*, the share of the samples that pass through
    it: reach(root) = 1, reach(c) = sum of reach(v) * p(c|v) over its parents v, p(c|v) the share of v's
    samples that go to c under the tree policy (selection_weight: the softmax pi(c|v) at temperature t_sel, or
    the visit shares of UCT and RAVE; uniform while v's edges have no visits). In graph mode the sum takes the
    parents the walk meets before it numbers c's children (all of them when the transpositions are at equal
    depth; an approximation otherwise). A kept node keeps the edges of the moves progressive widening has not
    entered yet too (after its children, child -1). Returns (nodes kept, edges kept)."""
    value = tree[T_VALUE]
    echild = tree[T_ECHILD]
    nmap[:] = -1
    order[0] = new_root
    nmap[new_root] = 0
    reach[0] = 1.0
    head = 0
    tail = 1
    n_edges = 0
    while head < tail:
        j = head
        v = order[head]
        head += 1
        keep[j] = 0
        if (tree[T_STATE][v] & PHASE_MASK) != EXPANDED or allow[v] == 0:
            continue
        keep[j] = 1
        f = tree[T_FIRST][v]
        n = tree[T_COUNT][v]
        min_e = _INF
        for i in range(n):
            min_e = min(min_e, value[echild[f + i]])
        z = 0.0
        for i in range(n):
            z += selection_weight(tree, f + i, policy, t_sel, prior_n, min_e)
        for i in range(n):
            eorder[n_edges] = f + i
            n_edges += 1
        for i in range(n, reserved_edges(tree, v)):  # moves progressive widening has not entered yet
            eorder[n_edges] = f + i
            n_edges += 1
        for i in range(n):
            c = echild[f + i]
            if z > 0.0:
                share = reach[j] * selection_weight(tree, f + i, policy, t_sel, prior_n, min_e) / z
            else:
                share = reach[j] / n
            if nmap[c] < 0:
                nmap[c] = tail
                order[tail] = c
                reach[tail] = share
                tail += 1
            elif nmap[c] >= head:  # met again before its own children are numbered
                reach[nmap[c]] += share
    return tail, n_edges


@njit(cache=True, nogil=True)
def rebuild_table(tree, ctl, n_nodes):
    """Clear the graph table and re-insert every non-terminal node below n_nodes; count private nodes."""
    tnode = tree[T_TNODE]
    tkey = tree[T_TKEY]
    tnode[:] = TABLE_EMPTY
    mask = tnode.shape[0] - 1
    ctl[C_TABLE] = 0
    ctl[C_PRIVATE] = 0
    for c in range(n_nodes):
        if tree[T_FLAGS][c] & FLAG_TERMINAL:
            ctl[C_PRIVATE] += 1
            continue
        s = table_slot(tree[T_KEY][c], mask)
        while tnode[s] != TABLE_EMPTY:
            s = (s + 1) & mask
        tkey[s] = tree[T_KEY][c]
        tnode[s] = c
        ctl[C_TABLE] += 1


@njit(cache=True, nogil=True)
def max_backup_error(tree, n_nodes, t_back, anneal_n=0.0, t_min=0.0):
    """Largest |E(v) - recompute(v)| over expanded nodes below n_nodes (the backup temperature annealed by
    anneal_n, t_min as in the search), and how many were expanded. Nodes
    flagged terminal after their expansion (a value proven from outside, e.g. the root_verifier's) keep
    their proven value and are left out."""
    worst = 0.0
    expanded = 0
    for v in range(n_nodes):
        if (
            (tree[T_STATE][v] & PHASE_MASK) == EXPANDED
            and tree[T_COUNT][v] > 0
            and not tree[T_FLAGS][v] & FLAG_TERMINAL
        ):
            expanded += 1
            t = annealed_temperature(tree[T_STATE][v] >> 2, t_back, anneal_n, t_min)
            err = abs(tree[T_VALUE][v] - backup_value(tree, v, t))
            if err > worst:
                worst = err
    return worst, expanded
