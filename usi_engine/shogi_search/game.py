"""Shogi as a game of the MCSS core: the kernel contract (docs/search.md) and the Searcher adapter.

`expand` generates every legal move and gives each child its value from the child's side to move:
an exact value for terminals, else the quiescence search over the static evaluation (seed 001 §3,
step 3, eq. 3 leaf case) — the *exact* expansion. In the *lazy* expansion (`P_EXPANSION`) a child whose
side to move is not in check gets its static value plus `capture_estimate` (a one-exchange guess of what
capturing the piece just moved wins) instead, flagged FLAG_LAZY, and the core calls
`leaf_value` (the same quiescence search) when a sample first reaches it; children that give check keep
the exact quiescence value at once. Not in check, the quiescence value is at least the static value (stand
pat, fail-soft), so for the parent the static value alone is never worse than the exact value (an
optimistic prior); the capture estimate takes the commonest error (a hanging moved piece) out of it. The
*window* expansion uses the static value alone (an upper bound) and then gives the lazy children whose
upper bound is within `P_WINDOW` cp of the best exact sibling the quiescence search bounded by that window
(finish_children, a second round any thread of the job may join): values are exact where the softmax
weight is above e^(-window/T). With `P_MATE_PROBE` a
child in check is first asked `mated_in_two` (mate_probe.py): a check that mates in three is then a
terminal valued -MATE + 2. With `P_THREAT_PROBE` a child not in check is asked `mate_in_one` for its side
to move: a move that allows a mate in one is then a terminal valued MATE - 1. A non-terminal child in check
is flagged FLAG_FORCING (the selection's optional check bonus, SearchOptions.forcing_bonus). Terminal rules, checked in
this order after the move:

- repetition against the game history plus the current path (the position's `P_REPETITIONS`-th
  occurrence, 2 by default: the first repeat is final in the search): perpetual check loses for the
  checker (+-MATE), otherwise a draw valued by the engine's DrawValue (`P_DRAW_FOR_BLACK`, from
  Black's view, negated for White);
- the child's side is in check with no legal move (checkmate; pawn-drop mate never occurs because
  the generator refuses it): -MATE (a side with no move while not in check is marked terminal by the
  core when it expands it);
- the child's side can declare a win under the entering-king rule (or, under the try rule, has
  already lost because the mover's king reached the try square): +-MATE; a 24-point draw declaration
  is a draw;
- the game-length rule (`P_MAX_MOVES` > 0, YaneuraOu's MaxMovesToDraw): a draw once that many moves
  have been played.

Params layout (float64): see the P_* constants below.
"""

import sys

import numpy as np

from usi_engine.jit import bare_kernel, counted_kernel
from usi_engine.search.jobs import (
    J_FINISH,
    J_STRIDE,
    child_done,
    claim_child,
    close_job,
    job_aux,
    job_aux_max,
    open_job,
    set_job_aux,
)
from usi_engine.search.layout import FLAG_FORCING, FLAG_LAZY, FLAG_TERMINAL
from usi_engine.search.values import MATE
from usi_engine.shogi.layout import BOARD, HIST, HIST_STRIDE, H_KEY, H_MOVE, KEY, MAX_MOVES, MOVE_TO_MASK, PLY, SIDE
from usi_engine.shogi.movegen import gen_legal, gen_search_moves
from usi_engine.shogi.position import DECL_WIN, attackers, declaration, do_move, history_capacity, undo_move
from usi_engine.shogi.sfen import move_to_usi
from usi_engine.shogi_eval.evalfile import load_weights
from usi_engine.shogi_eval.incremental import eval_stack_for, inc_record, inc_value, pp_block_zero

from .alphabeta import ab_value
from .mate_probe import mate_in_one, mated_in_two, probe_scratch
from .moveprior import log_sum_exp, move_scores
from .params import (
    EXPANSION_LAZY,
    EXPANSION_WINDOW,
    N_PARAMS,
    P_ENTERING_RULE,
    P_EXPANSION,
    P_LEAF_DEPTH,
    P_MATE_PROBE,
    P_PP_ZERO,
    P_QDEPTH,
    P_THREAT_PROBE,
    P_WINDOW,
    make_params,
    quiescence_settings,
)
from .quiescence import INF, capture_swing, qsearch, qsearch_inc, qsearch_scratch, side_in_check
from .terminal import terminal_value

CACHE_DEPENDENCIES = ("eval", "usi_engine.shogi")
FLAG_QUIESCED = 16  # game-private (attach_children drops it): a FLAG_LAZY child whose value is already exact quiescence


@bare_kernel
def gen_moves(pos, out_moves):
    return gen_search_moves(pos, out_moves)


@bare_kernel
def pos_key(pos):
    return pos[KEY]


@counted_kernel
def expand(pos, weights, params, rng, out_moves, out_values, out_flags):
    """Children of pos with their values (child's side to move) and terminal flags; returns (n, work): one
    thread's expansion, the same children evaluation as a joint one (expand_children, finish_open, finish_children)."""
    n = gen_search_moves(pos, out_moves)
    job = np.zeros(J_STRIDE, dtype=np.int64)
    open_job(job, 0, 0, n)
    expand_children(pos, weights, params, out_moves, out_values, out_flags, job, 0, 0)
    work = close_job(job, 0, n)
    m = finish_open(pos, weights, params, out_moves, out_values, out_flags, n, job, 0)
    if m > 0:
        open_job(job, 0, J_FINISH, m)
        finish_children(pos, weights, params, out_moves, out_values, out_flags, job, 0, J_FINISH)
        work += close_job(job, 0, m)
    return n, work


@counted_kernel
def expand_children(pos, weights, params, moves, out_values, out_flags, job, base, node):
    """Evaluate the children of pos (= `node`) that this thread claims from the job at job[base:] (core
    claim_child; moves = the job's move list), writing out_values/out_flags at their indices and reporting
    each child's work (positions evaluated) with child_done; returns the number of children evaluated.
    Several threads may run it on one job at once (a joint expansion).

    The evaluation is incremental: row 0 of the eval stack is pos (each frame summed in full once per call,
    when first needed), each child is recorded as row 1 and its quiescence search continues from there
    (usi_engine/shogi_eval/incremental.py). The scratch arrays are allocated once per call (≈ 0.2 us), not per child.
    """
    return claimed_children(pos, weights, params, moves, out_values, out_flags, job, base, node, False)


@counted_kernel
def claimed_children(pos, weights, params, moves, out_values, out_flags, job, base, tag, refine):
    """The claim loop of both rounds of an expansion job: every child this thread claims from the job at
    job[base:] under `tag` (core claim_child) is valued by value_child (first round, expand_children) or, with
    `refine`, refined if lazy by window_refine against the job's best exact value so far, which a refined
    child raises (second round, finish_children); each child's work (positions evaluated) is reported with
    child_done. One set of scratch arrays (child_scratch, probe_scratch) serves every child of the call.
    Returns the number of children claimed."""
    mode = np.int64(params[P_EXPANSION])
    probes = probe_scratch()
    q, eacc, eidx = child_scratch(pos, weights, params)
    nodes = q[5]
    done = 0
    while True:
        i = claim_child(job, base, tag)
        if i < 0:
            break
        before = nodes[0]
        if not refine:
            out_values[i], out_flags[i] = value_child(pos, weights, params, moves[i], mode, q, eacc, eidx, probes)
        elif out_flags[i] == FLAG_LAZY:
            best = job_aux(job, base)
            value, flags = window_refine(pos, weights, params, moves[i], out_values[i], best, q, eacc, eidx)
            out_values[i], out_flags[i] = value, flags
            if flags != FLAG_LAZY:
                job_aux_max(job, base, -value)
        child_done(job, base, nodes[0] - before)
        done += 1
    return done


@bare_kernel
def value_child(pos, weights, params, move, mode, q, eacc, eidx, probes):
    """(value from the child's side to move, flags) of the child after `move` from pos, as the expansion
    `mode` values it (game.py's docstring: terminal rules and probes, then the quiescence search, or in the
    lazy and window modes the static value of a child not in check, FLAG_LAZY); q, eacc, eidx from
    child_scratch(pos), probes from probe_scratch(); the positions evaluated are added to q[5][0]."""
    qdepth, see_prune, delta, recapture = quiescence_settings(params)
    deep = np.int64(FLAG_LAZY | FLAG_QUIESCED) if params[P_LEAF_DEPTH] > 0.0 else np.int64(0)
    evasions, attacks, replies = probes
    qmoves, nodes = q[0], q[5]
    inc_record(pos, move, weights, eacc, eidx, 0)
    do_move(pos, move)
    terminal, value = terminal_value(pos, params, qmoves[0])
    checked = side_in_check(pos)
    if not terminal and checked and params[P_MATE_PROBE] != 0.0:
        mated, work = mated_in_two(pos, evasions, attacks, replies)
        nodes[0] += work
        if mated:
            terminal, value = True, -MATE + 2.0  # every evasion allows a mate in one: exact, final
    elif not terminal and not checked and params[P_THREAT_PROBE] != 0.0:
        found, work = mate_in_one(pos, attacks, replies)
        nodes[0] += work
        if found:
            terminal, value = True, MATE - 1.0  # the child's side to move mates in one: exact, final
    if terminal:
        flags = np.int64(FLAG_TERMINAL)
        nodes[0] += 1
    elif mode != 0 and not checked:
        value = inc_value(pos, weights, eacc, eidx, 1)
        if mode == EXPANSION_LAZY:
            value += capture_estimate(pos, weights, move)
        flags = np.int64(FLAG_LAZY)
        nodes[0] += 1
    else:
        value = qsearch_inc(pos, weights, -INF, INF, qdepth, *q, eacc, eidx, 1, see_prune, delta, recapture, np.nan)
        flags = (FLAG_FORCING if checked else 0) | deep
    undo_move(pos)
    return value, flags


@counted_kernel
def child_value(pos, weights, params, move, best):
    """(value, flags, positions evaluated) of the child after `move` from pos, entered by progressive widening
    into a node whose value (pos's side to move) is `best`: valued as the expansion mode values a child. In the
    window mode a child not in check gets its static value and then, within `P_WINDOW` of best, the bounded
    quiescence search (window_refine, as the expansion's second round does against the best sibling): exact
    inside the window, else a bound flagged FLAG_LAZY that leaf_value refines if a sample reaches it. The
    other modes value it exactly (value_child in mode exact)."""
    q, eacc, eidx = child_scratch(pos, weights, params)
    window = np.int64(params[P_EXPANSION]) == EXPANSION_WINDOW
    mode = np.int64(EXPANSION_WINDOW) if window else np.int64(0)
    value, flags = value_child(pos, weights, params, move, mode, q, eacc, eidx, probe_scratch())
    if flags == FLAG_LAZY:
        value, flags = window_refine(pos, weights, params, move, value, best, q, eacc, eidx)
    return value, np.int8(flags), q[5][0]


@bare_kernel
def window_refine(pos, weights, params, move, static, best, q, eacc, eidx):
    """(value, flags) of a child that the window expansion left lazy with its static value `static` (child's
    side), given the best exact value its parent pos has so far (parent's view): a child within `P_WINDOW` of
    best gets the quiescence search bounded by beta = window - best (child's view; its stand pat is `static`,
    not evaluated again), exact below beta (FLAG_LAZY cleared); a fail-high, or an upper bound already below
    best - window, keeps FLAG_LAZY with that bound (the child is at least `window` worse than best for the
    parent). q, eacc, eidx from child_scratch(pos); the positions evaluated are added to q[5][0]."""
    window = params[P_WINDOW]
    if -static < best - window:
        return static, np.int64(FLAG_LAZY)
    qdepth, see_prune, delta, recapture = quiescence_settings(params)
    beta = INF if best <= -INF else window - best
    inc_record(pos, move, weights, eacc, eidx, 0)
    do_move(pos, move)
    v = qsearch_inc(pos, weights, -INF, beta, qdepth, *q, eacc, eidx, 1, see_prune, delta, recapture, static)
    undo_move(pos)
    if v < beta:
        return v, np.int64(FLAG_LAZY | FLAG_QUIESCED) if params[P_LEAF_DEPTH] > 0.0 else np.int64(0)
    return v, np.int64(FLAG_LAZY)


@counted_kernel
def order_children(pos, weights, params, moves, n, k0, logp):
    """Progressive widening's order of the moves of pos (core contract): moves[0:k] enter as children now,
    moves[k:n] later, most probable first, by the move prior (moveprior.py; its model is params[N_PARAMS:]),
    and logp[0:n] = log p of each move in the new order (the progressive bias; 0 without a model).
    Entering now: the k0 most probable moves and every move the tactics must not lose (a check, a capture
    with SEE >= 0: moveprior's tactical flag); in check, every evasion. Returns k; n, order unchanged, when
    k0 >= n, pos is in check or params carry no model."""
    if params.shape[0] <= N_PARAMS:
        logp[:n] = 0.0
        return n
    scores = np.empty(n, np.float64)
    tactical = np.empty(n, np.int8)
    move_scores(pos, params[N_PARAMS:], moves, n, scores, tactical)
    log_z = log_sum_exp(scores, n)  # log p = s - log sum exp s (the prior's softmax)
    if k0 >= n or side_in_check(pos):
        for i in range(n):
            logp[i] = scores[i] - log_z
        return n
    order = np.argsort(-scores, kind='mergesort')  # most probable first; ties in generation order
    key = np.empty(n, np.int64)
    k = 0
    for r in range(n):
        i = order[r]
        enter = r < k0 or tactical[i] != 0
        key[i] = r if enter else n + r
        k += 1 if enter else 0
    final = np.argsort(key)
    moves[:n] = moves[:n][final]
    for i in range(n):
        logp[i] = scores[final[i]] - log_z
    return k


@counted_kernel
def finish_open(pos, weights, params, out_moves, out_values, out_flags, n, job, base):
    """The owner's step once every child has its first value: opens the window expansion's second round
    (finish_children) and returns its number of items, n, or 0 when there is none (other modes, or no lazy
    child). The children are sorted best first for the parent (by their value, an upper bound for a lazy
    child), and the job's shared float is set to the best exact value so far (parent's view)."""
    if np.int64(params[P_EXPANSION]) != EXPANSION_WINDOW:
        return 0
    order = np.argsort(out_values[:n])
    out_moves[:n] = out_moves[:n][order]
    out_values[:n] = out_values[:n][order]
    out_flags[:n] = out_flags[:n][order]
    best = -INF
    lazy = 0
    for i in range(n):
        if out_flags[i] == FLAG_LAZY:
            lazy += 1
        elif -out_values[i] > best:
            best = -out_values[i]
    set_job_aux(job, base, best)
    return n if lazy > 0 else 0


@counted_kernel
def child_scratch(pos, weights, params):
    """(quiescence scratch tuple as qsearch_scratch, eacc, eidx) for valuing children of pos: the eval stack
    has row 0 = pos (inc_init), a child goes to row 1 and its quiescence search above it."""
    qdepth = np.int64(params[P_QDEPTH])
    eacc, eidx = eval_stack_for(pos, weights, qdepth + 2, params[P_PP_ZERO] != 0.0)
    return qsearch_scratch(qdepth), eacc, eidx


@bare_kernel
def capture_estimate(pos, weights, move):
    """A cheap guess (>= 0) of what the side to move wins by capturing the piece that `move` just put on its
    square: its full swing when the square is attacked and undefended, else the swing less the capturing
    piece's (one attacker, one defender: a one-exchange SEE). Added to a lazy child's static value, so a
    move that hangs its piece is not taken for a good one before the child is refined."""
    to = move & MOVE_TO_MASK
    them = pos[SIDE]
    count, sq = attackers(pos, to, them, 1)
    if count == 0:
        return 0.0
    gain = capture_swing(weights, pos[BOARD + to] & 15)
    if attackers(pos, to, 1 - them, 1)[0] > 0:
        gain -= capture_swing(weights, pos[BOARD + sq] & 15)
    return max(gain, 0.0)


@counted_kernel
def finish_children(pos, weights, params, moves, out_values, out_flags, job, base, tag):
    """The window expansion's second round over the children the first left lazy (static values), claimed in
    the order finish_open sorted them (best upper bound first) by any thread of the job: best = the job's best
    exact value so far (parent's view); a child within `window` of best gets the quiescence search bounded by
    beta = window - best (child's view; its stand pat is the first round's static value, not evaluated
    again): exact below beta, flag cleared, best raised; a fail-high keeps
    FLAG_LAZY with its bound (the child is at least `window` worse than best for the parent). A child whose
    upper bound is already below best - window keeps its static value and FLAG_LAZY. Lazy children are
    refined (leaf_value) if a sample ever reaches them. One thread does what a sequential pass would; with
    several, a child may be searched against an older, lower best: a wider window, the same guarantees."""
    return claimed_children(pos, weights, params, moves, out_values, out_flags, job, base, tag, True)


@counted_kernel
def leaf_value(pos, weights, params):
    """(value, work): the value of a child `expand` left lazy when a sample first reaches it: the quiescence
    search of pos, or with P_LEAF_DEPTH = d > 0 the depth-d alpha-beta over it (the deep leaf)."""
    qs = quiescence_settings(params)
    pp_zero = params[P_PP_ZERO] != 0.0
    depth = np.int64(params[P_LEAF_DEPTH])
    if depth > 0:
        return ab_value(pos, weights, params, depth, -INF, INF, qs, pp_zero)
    qdepth, see_prune, delta, recapture = qs
    scratch = qsearch_scratch(qdepth)
    value = qsearch(pos, weights, -INF, INF, qdepth, *scratch, see_prune, delta, recapture, pp_zero)
    return value, scratch[5][0]


@counted_kernel
def root_status(pos, params):
    """(terminal, value) of the root itself: no legal move = lost; a winning declaration = won."""
    scratch = np.empty(MAX_MOVES, dtype=np.int32)
    if gen_legal(pos, scratch) == 0:
        return True, -MATE
    if declaration(pos, np.int64(params[P_ENTERING_RULE])) == DECL_WIN:
        return True, MATE
    return False, 0.0


class ShogiAdapter:
    """The shogi game as the Searcher sees it: weights, params and move/position helpers."""

    game = sys.modules[__name__]  # this module: the kernels the core calls (search/dispatch.py)
    max_moves = MAX_MOVES

    def __init__(self, weights=None, params=None, move_model=None):
        self._weights = load_weights() if weights is None else weights
        self._pp_zero = pp_block_zero(self._weights)  # a 9.4 MB scan: once per weights, not per params
        self._move_model = np.zeros(0) if move_model is None else np.asarray(move_model, np.float64).copy()
        self.params = make_params() if params is None else params
        self.root_verifier = None  # the Searcher's optional prover of root moves (guard.RootMateGuard)

    # The adapter keeps params[P_PP_ZERO] true to its weights: set only when their PP block is all zero, so
    # that the search skips the PP sums exactly when they are zero. Params are copied in, so one array handed
    # to two adapters with different weights cannot carry the wrong flag to either. The move prior's model
    # (order_children) rides behind the N_PARAMS scalars: params[N_PARAMS:].
    @property
    def weights(self):
        return self._weights

    @weights.setter
    def weights(self, weights) -> None:
        self._weights = weights
        self._pp_zero = pp_block_zero(weights)
        self._params[P_PP_ZERO] = 1.0 if self._pp_zero else 0.0

    @property
    def pp_zero(self) -> bool:
        """True when the weights' PP block is all zero (the evaluation skips the pair sums)."""
        return self._pp_zero

    @property
    def params(self):
        return self._params

    @params.setter
    def params(self, params) -> None:
        self._params = np.concatenate([np.asarray(params, np.float64)[:N_PARAMS], self._move_model])
        self._params[P_PP_ZERO] = 1.0 if self._pp_zero else 0.0

    @property
    def move_model(self):
        """The move prior's model array (moveprior.py) progressive widening orders moves by; None: none."""
        return self._move_model.copy() if len(self._move_model) else None

    @move_model.setter
    def move_model(self, model) -> None:
        self._move_model = np.zeros(0) if model is None else np.asarray(model, np.float64).copy()
        self.params = self._params

    @staticmethod
    def copy(pos):
        return pos.copy()

    @staticmethod
    def move_to_str(move):
        return move_to_usi(move)

    def max_depth(self, pos):
        """Plies the history of pos can still hold, leaving room for the quiescence search."""
        return int(history_capacity(pos) - pos[PLY] - self.params[P_QDEPTH] - self.params[P_LEAF_DEPTH] - 3)

    @staticmethod
    def path_since(old, new):
        """Moves leading from `old` to `new` when `new` continues the same game record, else None."""
        lo, ln = int(old[PLY]), int(new[PLY])
        if ln < lo:
            return None
        entries = HIST + HIST_STRIDE * np.arange(lo + 1)
        if np.any(old[entries + H_KEY] != new[entries + H_KEY]):
            return None
        if lo and np.any(old[entries[:-1] + H_MOVE] != new[entries[:-1] + H_MOVE]):
            return None
        return [int(new[HIST + HIST_STRIDE * i + H_MOVE]) for i in range(lo, ln)]
