"""Go's side of the game-kernel contract (docs/search.md): the kernels the shared search core calls.

``gen_moves``, ``do_move``, ``undo_move``, ``pos_key`` come from usi_engine/go/board.py; this module
adds ``expand``, ``root_status``, the optional RAVE kernel ``expand_amaf`` and ``GoAdapter``.

Value scale (negamax, from the side to move): a leaf is worth ``VALUE_SCALE * (2 p - 1)`` where p is
the fraction of K playouts the side to move wins (a tie counts 1/2). With the default scale 1000 the
range is [-1000, 1000] ("per-mille winrate advantage"): +100 = a 55 % winrate. Shogi's pawn is 100 in
the same core, so a temperature near 100 means "about 5 % winrate" here.

Terminal values: after two consecutive passes the game is over and the exact Tromp-Taylor area
score (stones as they stand, komi included) decides it, so the position is a proven result:
+MATE if the side to move has won, -MATE if it has lost, 0.0 for a tie (integer komi). This is the
CGOS rule set (games are played out, nothing is removed after the passes). A proven value lets
the core prove "pass wins" lines instead of re-estimating them with noisy playouts; a side that
passes while its own stones would be counted dead by a human referee is the GTP layer's business
(kgs-genmove_cleanup / playing out). A game whose history is full is scored the same way.

Params layout (float64 array, ``default_params()``):
- ``params[P_PLAYOUTS]``    K, playouts per child (default 1)
- ``params[P_VALUE_SCALE]`` VALUE_SCALE (default 1000)
- ``params[P_CAP_FACTOR]``  playout move cap = factor * N * N (default 3)
- ``params[P_RAVE_PLAYOUTS]`` expand_amaf: children given a playout per expansion (default 4, plus every
  capture / atari escape; <= 0: all). Fewer playouts per expansion = a deeper tree for the same time;
  the AMAF statistics still see every playout's moves.
- ``params[P_LEAF]``        expand's leaf value: 0 = K playouts (default), 1 = the learned value V of
  usi_engine/go/value.py (deterministic, no playout): ``VALUE_SCALE * (2 p - 1)`` with p = V or 1 - V from
  the child's side to move.
- ``params[P_PRIOR_MIX]``   expand_amaf's prior: ``(1 - b) H + b V_mover`` with H the heuristic prior and
  V_mover the learned probability that the mover wins after the move (default b = 0: heuristic only).
- ``params[P_PLAYOUT_POLICY]`` the playouts' policy bitmask (playout.POLICY_*, playout.playout_policy): bit 0 MoGo's
  3x3 pattern rule, bits 1-4 the local tactics (two liberties, nakade, ko, patterns around the mover's
  previous move), bit 5 (POLICY_SOFTMAX) the random rule drawn by learned 3x3 gammas (the table in ``weights``);
  0 (default) the plain policy.
- ``params[P_PRIOR_PATTERNS]`` 1: expand_amaf's heuristic prior gives pattern moves next to the last move
  PRIOR_PATTERN (playout.move_priors); 0 (default) off.
- ``params[P_PRIOR_LADDERS]`` 1: on large boards an atari escape into a working ladder (ladder.py) gets
  PRIOR_LADDERED instead of PRIOR_ESCAPE; 0 (default) off.
- ``params[P_PRIOR_MOVES]`` b: expand_amaf's prior becomes ``(1 - b) H + b H_moves`` with H_moves the learned
  move prior's value of the move (moves_prior below; needs a move model in ``weights``); 0 (default) off.
- ``params[P_PRIOR_COUNTS]`` 1: expand_amaf gives each child its own virtual visits (_prior_experience below:
  the heuristic rule's count plus the move prior's 20 + 300 sqrt(P)), written to its ``out_counts``; 0 (default):
  no counts, the core gives every child the same pair (SearchOptions.prior_visits, prior_amaf).
- ``params[P_PRIOR_BASE_N]``, ``params[P_PRIOR_BASE_AMAF]`` (with P_PRIOR_COUNTS): the heuristic prior's virtual MC
  and AMAF visits (default 10, 20), each scaled by its rule's factor ``params[P_RULE_COUNTS + rule]``
  (playout.RULE_*; default 1 for every rule).
- ``params[P_RAVE_CHILDREN]`` expand_amaf's simulated children besides the tactical ones: RAVE_UNIFORM (default),
  P_RAVE_PLAYOUTS children drawn uniformly; RAVE_POLICY, the children that P_RAVE_PLAYOUTS draws of the playout
  policy's first move pick (_choose_by_policy); RAVE_NONE, no child at all (not even a tactical one): the expansion
  only sets the priors, and the core's search plays one playout from the expanded node itself (leaf_playout, with
  SearchOptions.expand_visits > 0); RAVE_TOP, the P_RAVE_PLAYOUTS children of the highest prior (_choose_top).
- ``params[P_ORDER_PRIOR]`` 1: expand_amaf gives its children in the order of their prior H, highest first (ties in
  move order), the order in which the core's progressive widening lets them into selection (rave.select_rave);
  0 (default): move order.

``weights`` (GoAdapter packs it): ``[n_w, n_m, n_g, n_r, theta (n_w), move model (n_m), gammas (n_g), replies (n_r),
shape table]``: the learned value's weight vector and shape table (usi_engine/go/shapes.py;
GoAdapter.set_value_weights), the learned move prior's model array (usi_engine/go/moveprior.py;
GoAdapter.set_move_model), the softmax playouts' gamma table (usi_engine/go/softplayout.py, draw_table; GoAdapter's
playout_gammas, needed when P_PLAYOUT_POLICY has POLICY_SOFTMAX) and the playouts' last-good-reply table (with
POLICY_LGRF: written by the playouts during the search, kept from move to move, cleared for a new game by
GoAdapter.reset_short_term). ``[0, 0, 0, 0]`` = none: P_LEAF, P_PRIOR_MIX and P_PRIOR_MOVES then have no effect.
"""

import sys
import time

import numpy as np
from numba import njit

from usi_engine.go import shapes as S
from usi_engine.go.board import area_score, do_move, game_over, gen_moves, pos_key, undo_move
from usi_engine.go.goboard import vertex_str
from usi_engine.go.layout import (
    BLACK,
    BOARD,
    BOARD_CAP,
    HIST,
    HIST_CAP,
    HIST_STRIDE,
    H_KEY,
    H_MOVE,
    H_SIDE,
    KEY,
    KO,
    KOMI_MILLI,
    KO_RULE,
    LARGE_BOARD,
    PASS,
    PASSES,
    PLY,
    SIDE,
    SIZE,
    SUICIDE_OK,
)
from usi_engine.go.moveprior import probabilities_set_up, set_ownership, uses_ownership
from usi_engine.go.playout import (
    DEFAULT_CAP_FACTOR,
    N_RULES,
    POLICY_LGRF,
    POLICY_SOFTMAX,
    PRIOR_CAPTURE,
    PRIOR_ESCAPE,
    PRIOR_EYE,
    PRIOR_SELF_ATARI,
    REPLY_LEN,
    first_moves,
    move_cap,
    move_priors,
    playout_policy,
    rand_below,
    run_playout,
    run_playouts,
    seed_rng,
)
from usi_engine.go.softplayout import TABLE_SIZE
from usi_engine.go.value import sigmoid, td_search
from usi_engine.go.workspace import WS_ROWS, new_workspace
from usi_engine.search.layout import NO_MOVE
from usi_engine.search.values import MATE

P_PLAYOUTS, P_VALUE_SCALE, P_CAP_FACTOR, P_RAVE_PLAYOUTS, P_LEAF, P_PRIOR_MIX = 0, 1, 2, 3, 4, 5
P_PLAYOUT_POLICY, P_PRIOR_PATTERNS, P_PRIOR_LADDERS, P_PRIOR_MOVES = 6, 7, 8, 9
P_PRIOR_COUNTS, P_PRIOR_BASE_N, P_PRIOR_BASE_AMAF = 10, 11, 12
P_RULE_COUNTS = 13  # N_RULES entries: the count factor of each heuristic rule (playout.RULE_*)
P_RAVE_CHILDREN = P_RULE_COUNTS + N_RULES  # how expand_amaf picks its simulated children: RAVE_UNIFORM or RAVE_POLICY
# the learned move prior's virtual experience (moves_experience): even visits, won visits per sqrt(P), and the share
# of its visits that also count as AMAF visits under per-child counts (1: all; 0: MC only, as Pachi's prior)
P_MOVES_EVEN, P_MOVES_WINS, P_MOVES_AMAF = P_RAVE_CHILDREN + 1, P_RAVE_CHILDREN + 2, P_RAVE_CHILDREN + 3
P_ORDER_PRIOR = P_MOVES_AMAF + 1  # expand_amaf's children in prior order (progressive widening)
N_PARAMS = P_ORDER_PRIOR + 1
# P_RAVE_CHILDREN: drawn uniformly, by the playout policy's first move, none (the core's leaf playouts value them), or
# the most probable by the prior
RAVE_UNIFORM, RAVE_POLICY, RAVE_NONE, RAVE_TOP = 0, 1, 2, 3
# The learned move prior as a value (Pachi's pattern prior: an even prior of MOVES_EVEN visits at 1/2 plus
# MOVES_WINS * sqrt(P) virtual wins): H_moves = (MOVES_EVEN / 2 + MOVES_WINS sqrt(P)) / (MOVES_EVEN + MOVES_WINS
# sqrt(P)). Pachi's constants on 19x19 (uct/prior.c: eqex 20, pattern prior 300); below 15x15 it scales both by
# 14/20 (MOVES_EVEN_SMALL, MOVES_WINS_SMALL; the player sets them by board size).
MOVES_EVEN, MOVES_WINS = 20.0, 300.0
MOVES_EVEN_SMALL, MOVES_WINS_SMALL = 14.0, 210.0


def moves_form(size: int) -> tuple[float, float]:
    """(even visits, wins factor) of the learned move prior's experience on a size x size board: Pachi's
    constants, 20 and 300 from LARGE_BOARD on, 14 and 210 below."""
    return (MOVES_EVEN, MOVES_WINS) if size >= LARGE_BOARD else (MOVES_EVEN_SMALL, MOVES_WINS_SMALL)


LEAF_PLAYOUTS, LEAF_LEARNED = 0, 1
DEFAULT_VALUE_SCALE = 1000.0
DEFAULT_RAVE_PLAYOUTS = 4
TERMINAL = 1
NO_SIM = 2  # layout.FLAG_NO_SIM: value is the prior's guess, no playout ran
MAX_MOVES = BOARD_CAP + 1  # out_moves capacity that is always enough (all points + pass)

__all__ = [
    "gen_moves",
    "do_move",
    "undo_move",
    "pos_key",
    "expand",
    "expand_amaf",
    "leaf_playout",
    "root_status",
    "default_params",
    "MAX_MOVES",
    "GoAdapter",
]


def default_params(
    playouts: int = 1,
    value_scale: float = DEFAULT_VALUE_SCALE,
    cap_factor: float = DEFAULT_CAP_FACTOR,
    rave_playouts: int = DEFAULT_RAVE_PLAYOUTS,
    leaf: int = LEAF_PLAYOUTS,
    prior_mix: float = 0.0,
    playout_patterns: bool = False,
    playout_tactics: bool = False,
    playout_softmax: bool = False,
    playout_ladders: bool = False,
    playout_selfatari: bool = False,
    playout_redirect: bool = False,
    playout_moggy: bool = False,
    playout_sacrifice: bool = False,
    playout_local: bool = False,
    playout_lgrf: bool = False,
    prior_patterns: bool = False,
    prior_ladders: bool = False,
    prior_moves: float = 0.0,
    prior_counts: bool = False,
    prior_base: tuple[float, float] = (10.0, 20.0),
    rule_counts: np.ndarray | None = None,
    rave_children: int = RAVE_UNIFORM,
    moves_experience_form: tuple[float, float, float] = (MOVES_EVEN, MOVES_WINS, 1.0),
    order_prior: bool = False,
) -> np.ndarray:
    """The params array for expand/root_status. playout_patterns, playout_tactics, playout_softmax, playout_ladders,
    playout_selfatari, playout_redirect, playout_moggy, playout_sacrifice, playout_local, playout_lgrf: the playout
    policy's switches (playout.playout_policy; softmax needs the gamma table in the weights: GoAdapter's
    playout_gammas; the last good reply its table, which GoAdapter packs with these params); prior_base: the
    heuristic prior's (MC, AMAF) virtual visits under prior_counts; rule_counts: N_RULES count factors, one per
    playout.RULE_* (None: 1 each); moves_experience_form: the learned move prior's (even visits, won visits per
    sqrt(P), AMAF share) (P_MOVES_*); order_prior: the children in prior order (P_ORDER_PRIOR). Raises ValueError
    for a negative count."""
    factors = np.ones(N_RULES) if rule_counts is None else np.asarray(rule_counts, np.float64)
    if factors.shape != (N_RULES,) or np.any(factors < 0) or min(prior_base) < 0:
        raise ValueError(f"prior counts must be >= 0, with {N_RULES} rule factors")
    params = np.zeros(N_PARAMS, dtype=np.float64)
    params[P_PLAYOUTS], params[P_VALUE_SCALE], params[P_CAP_FACTOR] = playouts, value_scale, cap_factor
    params[P_RAVE_PLAYOUTS], params[P_LEAF], params[P_PRIOR_MIX] = rave_playouts, leaf, prior_mix
    params[P_PLAYOUT_POLICY] = playout_policy(
        playout_patterns,
        playout_tactics,
        playout_softmax,
        playout_ladders,
        playout_selfatari,
        playout_redirect,
        playout_moggy,
        playout_sacrifice,
        playout_local,
        playout_lgrf,
    )
    params[P_PRIOR_PATTERNS] = float(prior_patterns)
    params[P_PRIOR_LADDERS], params[P_PRIOR_MOVES] = float(prior_ladders), prior_moves
    params[P_PRIOR_COUNTS] = float(prior_counts)
    params[P_PRIOR_BASE_N], params[P_PRIOR_BASE_AMAF] = prior_base
    params[P_RULE_COUNTS : P_RULE_COUNTS + N_RULES] = factors
    params[P_RAVE_CHILDREN] = rave_children
    params[P_MOVES_EVEN], params[P_MOVES_WINS], params[P_MOVES_AMAF] = moves_experience_form
    params[P_ORDER_PRIOR] = float(order_prior)
    return params


WEIGHTS_HEADER = 4  # n_w, n_m, n_g, n_r
OWNER_PLAYOUTS = 500  # playouts of the root position for the move prior's ownership context (Pachi's GJ_MINGAMES)


@njit(cache=True, nogil=True)
def split_weights(weights):
    """(theta, move model, shape table) of a packed weights array (layout above); empty arrays when absent."""
    if weights.shape[0] < WEIGHTS_HEADER:
        return weights[:0], weights[:0], weights[:0]
    nw, nm, ng, nr = int(weights[0]), int(weights[1]), int(weights[2]), int(weights[3])
    a = WEIGHTS_HEADER + nw
    return weights[WEIGHTS_HEADER:a], weights[a : a + nm], weights[a + nm + ng + nr :]


@njit(cache=True, nogil=True)
def playout_gammas(weights):
    """The softmax playouts' gamma table of a packed weights array (layout above); empty when absent."""
    if weights.shape[0] < WEIGHTS_HEADER:
        return weights[:0]
    a = WEIGHTS_HEADER + int(weights[0]) + int(weights[1])
    return weights[a : a + int(weights[2])]


@njit(cache=True, nogil=True)
def playout_replies(weights):
    """The last-good-reply table of a packed weights array (playout.POLICY_LGRF; layout above), which the playouts
    read and write during a search; empty when absent."""
    if weights.shape[0] < WEIGHTS_HEADER:
        return weights[:0]
    a = WEIGHTS_HEADER + int(weights[0]) + int(weights[1]) + int(weights[2])
    return weights[a : a + int(weights[3])]


def pack_weights(theta, model, tab, gammas=None, replies=None) -> np.ndarray:
    """The weights array of the kernels from its parts (None = absent)."""
    parts = [np.zeros(0) if a is None else np.asarray(a, np.float64) for a in (theta, model, gammas, replies, tab)]
    return np.concatenate([[float(len(p)) for p in parts[:4]], *parts])


def check_playout_gammas(params, gammas) -> None:
    """ValueError when the playout policy of `params` draws by gammas (POLICY_SOFTMAX) and `gammas` is not a gamma
    table (softplayout.draw_table): the kernels must not run without one."""
    if int(params[P_PLAYOUT_POLICY]) & POLICY_SOFTMAX and (gammas is None or np.shape(gammas) != (TABLE_SIZE,)):
        raise ValueError("softmax playouts (POLICY_SOFTMAX) need a gamma table: softplayout.playout_table()")


@njit(cache=True, nogil=True)
def moves_experience(p, even=MOVES_EVEN, wins=MOVES_WINS):
    """(virtual visits, virtual wins) of a move the learned move prior gives probability p: Pachi's pattern prior,
    `even` visits at 1/2 plus `wins` sqrt(p) won visits (MOVES_EVEN, MOVES_WINS above)."""
    root = np.sqrt(p)
    return even + wins * root, 0.5 * even + wins * root


@njit(cache=True, nogil=True)
def moves_prior(pos, ws, model, moves, n, out, even=MOVES_EVEN, wins=MOVES_WINS):
    """out[i] = H_moves of moves[i] (the learned move prior as a value in [1/2, 1), moves_experience's form);
    a pass gets 1/2. ws must hold workspace._setup of pos (move_priors leaves it so)."""
    probabilities_set_up(pos, ws, model, moves, n, out)
    for i in range(n):
        visits, won = moves_experience(out[i], even, wins)
        out[i] = won / visits


@njit(cache=True, nogil=True)
def _is_tactical(h):
    """A tactical child by its heuristic prior h: a capture (PRIOR_CAPTURE) or an atari escape (PRIOR_ESCAPE),
    simulated at every expansion that simulates any child."""
    return h == PRIOR_CAPTURE or h == PRIOR_ESCAPE


@njit(cache=True, nogil=True)
def _choose_simulated(n, m, prior, rng, chosen):
    """chosen[i] = True for m children picked uniformly at random (all when m <= 0 or m >= n) and for every
    tactical child (_is_tactical: captures, atari escapes)."""
    if m <= 0 or m >= n:
        chosen[:n] = True
        return
    chosen[:n] = False
    for i in range(n):
        if _is_tactical(prior[i]):
            chosen[i] = True
    picked = 0
    for i in range(n):  # selection sampling (Knuth's algorithm S): m of n, each set equally likely
        if rand_below(rng, n - i) < m - picked:
            chosen[i] = True
            picked += 1


@njit(cache=True, nogil=True)
def _prior_order(prior, n):
    """The indices 0..n-1 by prior[i], highest first; equal priors keep their order (a stable sort)."""
    return np.argsort(-prior[:n], kind='mergesort')


@njit(cache=True, nogil=True)
def _choose_top(n, m, order, chosen):
    """chosen[order[j]] = True for the first m of `order` (the children of the highest prior H); the tactical
    children marked before stay chosen."""
    for j in range(min(m, n)):
        chosen[order[j]] = True


@njit(cache=True, nogil=True)
def _choose_by_policy(pos, ws, n, m, moves, prior, rng, policy, gammas, chosen):
    """chosen[i] = True for every tactical child (as _choose_simulated) and for the children that m draws of the
    playout policy's first move from pos pick (a child drawn twice is simulated once; a draw that is no child, a
    superko repetition, picks nothing); all when m <= 0 or m >= n. A playout from a chosen child is then a playout
    from pos whose first move the policy chose, as in Pachi's and MoGo's leaf playouts, instead of one after a
    uniformly random reply. One uniform child when nothing else is chosen. Leaves ws set up for pos."""
    if m <= 0 or m >= n:
        chosen[:n] = True
        return
    chosen[:n] = False
    any_chosen = False
    for i in range(n):
        if _is_tactical(prior[i]):
            chosen[i] = True
            any_chosen = True
    draws = np.empty(m, np.int64)
    first_moves(pos, ws, rng, policy, gammas, draws)
    for d in draws:
        for i in range(n):
            if moves[i] == d:
                chosen[i] = True
                any_chosen = True
                break
    if not any_chosen:
        chosen[rand_below(rng, n)] = True


@njit(cache=True, nogil=True)
def _terminal_value(pos):
    """Exact value of a finished game from the side to move: +-MATE, 0 for a tie."""
    score = area_score(pos)
    if pos[SIDE] != BLACK:
        score = -score
    if score > 0:
        return MATE
    if score < 0:
        return -MATE
    return 0.0


@njit(cache=True, nogil=True)
def _ends_game(pos, move):
    """Would `move` end the game (board.game_over after it): a second pass, or the history filling up?"""
    return (move == PASS and pos[PASSES] >= 1) or pos[PLY] + 1 >= pos[HIST_CAP] - 1


@njit(cache=True, nogil=True)
def root_status(pos, params):
    """(is_terminal, exact value from the side to move) of pos itself."""
    if game_over(pos):
        return True, _terminal_value(pos)
    return False, 0.0


@njit(cache=True, nogil=True)
def _learned_child_values(pos, weights, moves, n):
    """out[i] = learned probability that the side to move of pos wins after moves[i] (shapes updated
    incrementally per child)."""
    theta, _, tab = split_weights(weights)
    ids = np.zeros(int(tab[S.T_NREG]), np.int64)
    S.region_ids(tab, pos[BOARD : BOARD + BOARD_CAP], ids)
    x = S.linear_sum(tab, theta, ids)
    black = pos[SIDE] == BLACK
    out = np.empty(n, np.float64)
    for i in range(n):
        do_move(pos, moves[i])
        vb = sigmoid(x + S.apply_move(pos, tab, theta, ids))
        S.revert_move(pos, tab, theta, ids)
        undo_move(pos)
        out[i] = vb if black else 1.0 - vb
    return out


@njit(cache=True, nogil=True)
def _prior_experience(pos, ws, weights, params, moves, n, prior, rules, counts, learned):
    """The learned parts of expand_amaf's prior, in place over the heuristic prior H (rules: their rules): the move
    prior's share b = P_PRIOR_MOVES, then the learned value's share P_PRIOR_MIX (learned: the children's learned
    values, or empty). The move prior leaves the heuristic's vetoes alone: a pass, filling an own eye, a
    self-atari of a block (moves strong players never make, so the model only knows them as improbable, i.e.
    about 1/2).

    Shared counts (P_PRIOR_COUNTS off): prior = (1 - b) H + b H_moves; counts is not touched.
    Per-child counts (on; counts[0, i], counts[1, i] = the MC and AMAF virtual visits C(s,a), C~(s,a) of seed
    000 eq. 49, 51): virtual experiences add. The heuristic's rule r brings n = m_r C_h MC and n~ = m_r C~_h AMAF
    visits at value H (C_h, C~_h = P_PRIOR_BASE_N, P_PRIOR_BASE_AMAF; m_r = params[P_RULE_COUNTS + r]); the move
    prior (a model, b > 0, no veto) brings v = e + k sqrt(P) visits of which w = e / 2 + k sqrt(P) are won
    (moves_experience; e, k = P_MOVES_EVEN, P_MOVES_WINS: 20, 300 on 19x19), a share a = P_MOVES_AMAF of them also as
    AMAF visits. With b' = min(b, 1):
        C(s,a) = (1 - b') n + b' v,   C~(s,a) = (1 - b') n~ + b' a v,   H(s,a) = ((1 - b') n H + b' w) / C(s,a)
    (a = 0, b' = 1: Pachi's prior, in the MC statistics only)."""
    _, model, _ = split_weights(weights)
    per_child = params[P_PRIOR_COUNTS] != 0.0
    if per_child:
        for i in range(n):
            factor = params[P_RULE_COUNTS + rules[i]]
            counts[0, i] = factor * params[P_PRIOR_BASE_N]
            counts[1, i] = factor * params[P_PRIOR_BASE_AMAF]
    b = params[P_PRIOR_MOVES]
    if b > 0.0 and model.shape[0] > 0:
        prob = np.empty(n, np.float64)
        probabilities_set_up(pos, ws, model, moves, n, prob)
        share = min(b, 1.0)
        keep = 1.0 - share
        for i in range(n):
            if moves[i] == PASS or prior[i] == PRIOR_EYE or prior[i] == PRIOR_SELF_ATARI:
                continue
            visits, wins = moves_experience(prob[i], params[P_MOVES_EVEN], params[P_MOVES_WINS])
            if per_child:
                heuristic = keep * counts[0, i]
                total = heuristic + share * visits
                prior[i] = (heuristic * prior[i] + share * wins) / total
                counts[0, i] = total
                counts[1, i] = keep * counts[1, i] + share * params[P_MOVES_AMAF] * visits
            else:
                prior[i] = (1.0 - b) * prior[i] + b * (wins / visits)
    if learned.shape[0] > 0:
        mix = params[P_PRIOR_MIX]
        for i in range(n):
            prior[i] = (1.0 - mix) * prior[i] + mix * learned[i]


@njit(cache=True, nogil=True)
def prior_values(pos, weights, params, moves, n, out):
    """out[i] = the prior expand_amaf gives moves[i] (heuristic, then the learned parts), without expanding."""
    ws = np.empty((WS_ROWS, BOARD_CAP), np.int64)
    rules = np.empty(n, np.int64)
    move_priors(pos, ws, moves, n, out, params[P_PRIOR_PATTERNS] != 0.0, params[P_PRIOR_LADDERS] != 0.0, rules)
    theta, _, _ = split_weights(weights)
    learned = np.zeros(0, np.float64)
    if theta.shape[0] > 0 and params[P_PRIOR_MIX] > 0.0:
        learned = _learned_child_values(pos, weights, moves, n)
    _prior_experience(pos, ws, weights, params, moves, n, out, rules, np.empty((2, n), np.float64), learned)


@njit(cache=True, nogil=True)
def leaf_playout(pos, weights, params, rng, trace):
    """One playout of the playout policy from pos itself (the core's leaf playout, SearchOptions.expand_visits):
    (value from the side to move on the value scale, moves written to trace with passes as NO_MOVE, moves played);
    a finished game is valued exactly, with no move."""
    if game_over(pos):
        return _terminal_value(pos), 0, 0
    cap = max(1, int(params[P_CAP_FACTOR] * pos[SIZE] * pos[SIZE]))  # playout.move_cap, inline in a kernel
    ws = np.empty((WS_ROWS, BOARD_CAP), np.int64)
    none = np.empty(0, np.float64)
    room = min(cap, trace.shape[0])
    black = pos[SIDE] == BLACK
    policy = int(params[P_PLAYOUT_POLICY])
    replies = playout_replies(weights)
    score, moves = run_playout(
        pos, ws, rng, cap, none, none, trace[:room], policy, playout_gammas(weights), None, None, replies
    )
    tlen = min(moves, room)
    for j in range(tlen):
        if trace[j] == PASS:
            trace[j] = NO_MOVE
    p = 1.0 if score > 0 else (0.5 if score == 0 else 0.0)
    if not black:
        p = 1.0 - p
    return params[P_VALUE_SCALE] * (2.0 * p - 1.0), tlen, moves


@njit(cache=True, nogil=True)
def _expand(pos, weights, params, rng, out_moves, out_values, out_flags, out_prior, trace, tstart, counts, amaf):
    """expand (amaf False: K playouts per child) or expand_amaf (amaf True: priors, their virtual visits in counts
    when P_PRIOR_COUNTS is on, one traced playout per child)."""
    n = gen_moves(pos, out_moves)
    k = 1 if amaf else max(1, int(params[P_PLAYOUTS]))
    scale = params[P_VALUE_SCALE]
    cap = max(1, int(params[P_CAP_FACTOR] * pos[SIZE] * pos[SIZE]))  # playout.move_cap, inline in a kernel
    ws = np.empty((WS_ROWS, BOARD_CAP), np.int64)
    simulate = np.ones(n, np.bool_)
    learned = np.zeros(0, np.float64)
    mix = params[P_PRIOR_MIX] if amaf else 0.0
    learned_leaf = not amaf and params[P_LEAF] == LEAF_LEARNED
    policy = int(params[P_PLAYOUT_POLICY])
    gammas = playout_gammas(weights)
    replies = playout_replies(weights)
    theta, _, _ = split_weights(weights)
    has_value = theta.shape[0] > 0 and (learned_leaf or mix > 0.0)
    if has_value:
        learned = _learned_child_values(pos, weights, out_moves, n)
        if learned_leaf:
            simulate[:n] = False
    if amaf:
        rules = np.empty(n, np.int64)
        move_priors(
            pos, ws, out_moves, n, out_prior, params[P_PRIOR_PATTERNS] != 0.0, params[P_PRIOR_LADDERS] != 0.0, rules
        )
        m = int(params[P_RAVE_PLAYOUTS])
        children = params[P_RAVE_CHILDREN]
        if children == RAVE_NONE:
            simulate[:n] = False
        elif children == RAVE_POLICY:
            _choose_by_policy(pos, ws, n, m, out_moves, out_prior, rng, policy, gammas, simulate)
        elif children == RAVE_TOP:  # the tactical children now (the heuristic prior's), the most probable below
            for i in range(n):
                simulate[i] = m <= 0 or m >= n or _is_tactical(out_prior[i])
        else:
            _choose_simulated(n, m, out_prior, rng, simulate)
        if params[P_PRIOR_COUNTS] != 0.0 and counts.shape[1] < n:
            counts = np.empty((2, n), np.float64)  # the caller wants none: the values are the same
        _prior_experience(
            pos,
            ws,
            weights,
            params,
            out_moves,
            n,
            out_prior,
            rules,
            counts,
            learned if mix > 0.0 else np.zeros(0, np.float64),
        )
        if children == RAVE_TOP or params[P_ORDER_PRIOR] != 0.0:
            order = _prior_order(out_prior, n)
            if children == RAVE_TOP and 0 < m < n:
                _choose_top(n, m, order, simulate)
            if params[P_ORDER_PRIOR] != 0.0:
                out_moves[:n] = out_moves[order]
                out_prior[:n] = out_prior[order]
                simulate[:n] = simulate[order]
                if params[P_PRIOR_COUNTS] != 0.0:
                    counts[:, :n] = counts[:, order]
    none = np.empty(0, np.float64)
    work = 0
    top = 0
    for i in range(n):
        if amaf:
            tstart[i] = top
        if not simulate[i] and not _ends_game(pos, out_moves[i]):
            if learned_leaf:
                out_values[i] = scale * (1.0 - 2.0 * learned[i])  # V from the child's side, a real evaluation
                out_flags[i] = 0
            else:
                out_values[i] = scale * (1.0 - 2.0 * out_prior[i])  # the prior, from the child's side
                out_flags[i] = NO_SIM
            continue
        do_move(pos, out_moves[i])
        if game_over(pos):
            out_values[i] = _terminal_value(pos)
            out_flags[i] = TERMINAL
        else:
            if amaf:
                room = min(cap, trace.shape[0] - top)
                tr = trace[top : top + room]
                score, moves = run_playout(pos, ws, rng, cap, none, none, tr, policy, gammas, None, None, replies)
                black_wins = 1.0 if score > 0 else (0.5 if score == 0 else 0.0)
                for j in range(top, top + min(moves, room)):
                    if trace[j] == PASS:
                        trace[j] = NO_MOVE
                top += min(moves, room)
            else:
                black_wins, moves, _ = run_playouts(pos, ws, rng, k, cap, none, none, policy, gammas)
            p = black_wins / k
            if pos[SIDE] != BLACK:
                p = 1.0 - p
            out_values[i] = scale * (2.0 * p - 1.0)
            out_flags[i] = 0
            work += moves
        undo_move(pos)
    if amaf:
        tstart[n] = top
    return n, work


@njit(cache=True, nogil=True)
def expand(pos, weights, params, rng, out_moves, out_values, out_flags):
    """All legal moves of pos; each child's value = mean of K playouts from the child (its side to
    move's view, scale above), or its exact value when the child ends the game. pos is unchanged.
    Returns (n_children, playout moves played)."""
    none_f = np.empty(0, np.float64)
    none_i = np.empty(0, np.int32)
    return _expand(
        pos,
        weights,
        params,
        rng,
        out_moves,
        out_values,
        out_flags,
        none_f,
        none_i,
        np.empty(0, np.int64),
        np.empty((2, 0), np.float64),
        False,
    )


@njit(cache=True, nogil=True)
def expand_amaf(pos, weights, params, rng, out_moves, out_values, out_flags, out_prior, trace, tstart, out_counts=None):
    """The optional RAVE kernel of the contract: out_prior[i] = prior H in [0, 1] for the mover (the heuristic
    playout.move_priors, then the learned parts, _prior_experience); ONE playout from each of P_RAVE_PLAYOUTS random
    children (drawn uniformly, or by the playout policy: P_RAVE_CHILDREN) plus every tactical one (all children
    when P_RAVE_PLAYOUTS <= 0), its moves in trace[tstart[i]:tstart[i+1]] (passes as NO_MOVE; cut when trace is
    full); the other children get their prior
    as value, flagged NO_SIM. With P_PRIOR_COUNTS on, out_counts[0, i] and out_counts[1, i] (float64 [2, >= n];
    may be left out) = child i's virtual MC and AMAF visits; otherwise out_counts is not touched."""
    counts = np.empty((2, 0), np.float64) if out_counts is None else out_counts
    return _expand(pos, weights, params, rng, out_moves, out_values, out_flags, out_prior, trace, tstart, counts, True)


class GoAdapter:
    """Go as the Searcher sees it (usi_engine/search/searcher.py): params, value scale, move text, depth
    budget and the path between two positions of the same game (tree reuse)."""

    game = sys.modules[__name__]  # this module: the kernels the core calls (search/dispatch.py)
    max_moves = MAX_MOVES

    def __init__(self, size: int = 9, params=None, playout_gammas=None):
        """playout_gammas: the softmax playouts' table (softplayout.playout_table), which params with POLICY_SOFTMAX
        need (ValueError without it)."""
        self.size = size
        self.move_model: np.ndarray | None = None  # the learned move prior's model array (set_move_model)
        self._tab: np.ndarray | None = None
        self.params = default_params() if params is None else params
        check_playout_gammas(self.params, playout_gammas)
        self.playout_gammas = None if playout_gammas is None else np.asarray(playout_gammas, np.float64).copy()
        self.weights = pack_weights(None, None, None, self.playout_gammas, self._replies_now())
        self.long_term = None  # the learned value's weights (set_value_weights)
        self.short_term = None  # Dyna-2's short-term memory (td_think)
        self._td_rng = seed_rng(0x7D5EA)
        self._owner_rng = seed_rng(0x0A11E5)

    def set_value_weights(self, theta, ks=S.DEFAULT_KS) -> None:
        """Use the learned value with weight vector theta (for this board size) in expand / expand_amaf; clears
        the short-term memory."""
        tab = S.shape_tables(self.size, tuple(ks))
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (S.n_weights(tab),):
            raise ValueError(f"value weights have shape {theta.shape}, expected ({S.n_weights(tab)},)")
        self.long_term = theta.copy()
        self.short_term = np.zeros_like(theta)
        self._tab = tab.astype(np.float64)
        self.weights = pack_weights(theta, self.move_model, self._tab, self.playout_gammas, self._replies_now())

    def clear_value_weights(self) -> None:
        """No learned value any more (the move model stays)."""
        self.long_term = self.short_term = self._tab = None
        self.weights = pack_weights(None, self.move_model, None, self.playout_gammas, self._replies_now())

    def set_move_model(self, model) -> None:
        """Use this learned move prior (moveprior.py's model array; None: none) in expand_amaf."""
        self.move_model = None if model is None else np.asarray(model, np.float64).copy()
        self._repack()

    def set_playout_gammas(self, gammas) -> None:
        """Use this gamma table (softplayout.playout_table; None: none) in the softmax playouts; ValueError when the
        params' playout policy has POLICY_SOFTMAX and this is no table."""
        check_playout_gammas(self.params, gammas)
        self.playout_gammas = None if gammas is None else np.asarray(gammas, np.float64).copy()
        self._repack()

    def update_ownership(self, pos, playouts: int = OWNER_PLAYOUTS) -> bool:
        """The move prior's ownership context (moveprior.G_OWNER, Pachi's "mcowner"): the mean final ownership of
        `playouts` playouts from pos with the search's playout policy, written into the model the kernels read, for
        every node of the next search. Does nothing and returns False when the move model makes no use of it."""
        if self.move_model is None or not uses_ownership(self.move_model):
            return False
        own = np.zeros(BOARD_CAP, np.float64)
        start = pos.copy()
        start[PASSES] = 0
        cap = move_cap(int(pos[SIZE]), self.params[P_CAP_FACTOR])
        policy = int(self.params[P_PLAYOUT_POLICY])
        run_playouts(start, new_workspace(), self._owner_rng, playouts, cap, own, own[:0], policy, self.playout_gammas)
        own /= playouts
        set_ownership(self.move_model, own)
        a = WEIGHTS_HEADER + int(self.weights[0])
        set_ownership(self.weights[a : a + int(self.weights[1])], own)  # the kernels' copy
        return True

    def _repack(self) -> None:
        """self.weights from the parts, the value weights (long + short term) as the kernels read them now."""
        theta = None if self.long_term is None else self._value_view().copy()
        self.weights = pack_weights(theta, self.move_model, self._tab, self.playout_gammas, self._replies_now())

    def _replies_now(self) -> np.ndarray | None:
        """The last-good-reply table to pack: the one the playouts have written so far, a fresh one, or None when
        the playout policy has no POLICY_LGRF."""
        if not int(self.params[P_PLAYOUT_POLICY]) & POLICY_LGRF:
            return None
        old = playout_replies(self.weights) if hasattr(self, "weights") else None
        return old.copy() if old is not None and old.shape[0] == REPLY_LEN else np.zeros(REPLY_LEN)

    def _value_view(self):
        """The value weights inside self.weights (a view: what the kernels read)."""
        return self.weights[WEIGHTS_HEADER : WEIGHTS_HEADER + len(self.long_term)]

    def reset_short_term(self) -> None:
        """Forget the short-term memories (a new game): the value is the long-term one again and the playouts
        know no last good reply."""
        playout_replies(self.weights)[:] = 0.0
        if self.long_term is not None:
            self.short_term[:] = 0.0
            self._value_view()[:] = self.long_term

    def td_think(
        self, pos, seconds: float, alpha: float = 0.1, epsilon: float = 0.1, greedy_moves: int = 6, chunk: int = 8
    ) -> int:
        """TD search / Dyna-2 (seed 004 §4-5) before a tree search: simulations from pos for about `seconds`
        update the short-term memory, which the value (long + short) then uses. Returns the episodes run."""
        if self.long_term is None or seconds <= 0:
            return 0
        value_w = self._value_view()
        cap = move_cap(self.size, self.params[P_CAP_FACTOR])
        end = time.monotonic() + seconds
        episodes = 0
        while time.monotonic() < end:
            td_search(pos, self._tab, value_w, self.short_term, chunk, alpha, epsilon, greedy_moves, cap, self._td_rng)
            episodes += chunk
        return episodes

    @property
    def value_scale(self) -> float:
        return float(self.params[P_VALUE_SCALE])

    def amaf_capacity(self, pos) -> int:
        """Trace entries one expand_amaf call may write: every child's whole playout."""
        return MAX_MOVES * move_cap(int(pos[SIZE]), self.params[P_CAP_FACTOR])

    @staticmethod
    def copy(pos):
        return pos.copy()

    def priors(self, pos, moves) -> np.ndarray:
        """The RAVE prior H of each of these legal moves of pos (what expand_amaf gives them)."""
        moves = np.asarray(moves, np.int32)
        out = np.empty(len(moves), np.float64)
        prior_values(pos, self.weights, self.params, moves, len(moves), out)
        return out

    def move_to_str(self, move) -> str:
        return vertex_str(int(move), self.size)

    @staticmethod
    def max_depth(pos) -> int:
        """Plies the history of pos can still hold before game_over's "history full" rule."""
        return int(pos[HIST_CAP] - pos[PLY] - 2)

    @staticmethod
    def path_since(old, new):
        """Moves from `old` to `new` when `new` continues the same game with alternating colours and the
        same rules (size, komi, ko rule), else None."""
        if any(old[i] != new[i] for i in (SIZE, KOMI_MILLI, KO_RULE, SUICIDE_OK)):
            return None
        lo, ln = int(old[PLY]), int(new[PLY])
        if ln < lo:
            return None
        entries = HIST + HIST_STRIDE * np.arange(lo)
        if np.any(old[entries + H_KEY] != new[entries + H_KEY]) or np.any(
            old[entries + H_MOVE] != new[entries + H_MOVE]
        ):
            return None
        if ln == lo:
            same = old[KEY] == new[KEY] and old[SIDE] == new[SIDE] and old[KO] == new[KO]
            return [] if same else None
        first = HIST + HIST_STRIDE * lo
        if new[first + H_KEY] != old[KEY] or new[first + H_SIDE] != old[SIDE]:
            return None
        side = int(old[SIDE])
        moves = []
        for i in range(lo, ln):
            e = HIST + HIST_STRIDE * i
            if new[e + H_SIDE] != side:
                return None
            moves.append(int(new[e + H_MOVE]))
            side = 3 - side
        return moves if side == new[SIDE] else None
