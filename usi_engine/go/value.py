"""Learned Go value function over local shape features, its TD learning, and its weight files (seed 004 §3-5).

Value (seed 004 eq. 9): ``V(s) = sigmoid(phi(s) . theta)`` = the probability that Black wins, over the local
shape features of usi_engine/go/shapes.py (both weight-sharing kinds). The side to move and komi are not
features: a weight vector belongs to one board size and komi (recorded in its file).

Learning (seed 004 §3.2, logistic NTD2(0), "two-ply" update between positions with the same side to move):
``theta += alpha * (V(s_{t+2}) - V(s_t)) * phi(s_t) / |phi(s_t)|^2``; at the end of the game the outcome r
(1 Black wins, 0 White wins, 1/2 tie; Tromp-Taylor area, every stone alive) replaces V(s_{t+2}) for the
last two positions. Moves come from an epsilon-greedy afterstate policy over V (Black maximises, White
minimises), single-point own eyes are never filled and a side passes only when nothing else is legal.

One episode kernel serves both memories of Dyna-2 (seed 004 §5): offline self-play from the empty board
updates the long-term weights (``td_episode`` with ``learn`` = the evaluated vector); TD search from the
current position (``td_search``) updates a short-term vector while the policy and V use long + short, and
may hand the rest of an episode to the fast playout policy after a number of moves (seed 004 §4.5.1).

Weight files: usi_engine/weightfile.py's archive format (checksummed float32 blocks, JSON metadata) with blocks
``li`` and ``ld`` and feature set ``go-shapes-<N>x<N>-k<ks>``.
"""

from pathlib import Path

import numpy as np
from numba import njit

from usi_engine.go import shapes as S
from usi_engine.go.board import area_score, do_move, game_over, gen_moves, undo_move
from usi_engine.go.layout import BLACK, BOARD, BOARD_CAP, HIST_CAP, PASS, PLY, SIDE, STRIDE
from usi_engine.go.playout import POLICY_PLAIN, rand_below, run_playout
from usi_engine.go.workspace import WS_ROWS, _eyelike

FEATURE_VERSION = 1
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
RAND_UNIT = 1 << 30
MAX_LOGIT = 30.0


def feature_set(size: int, ks=S.DEFAULT_KS) -> str:
    """Feature-set name of a weight vector for this board size and square sizes."""
    return f"go-shapes-{size}x{size}-k{''.join(str(k) for k in sorted(ks))}"


@njit(cache=True, nogil=True)
def sigmoid(x):
    """Logistic function, clipped far from 0 so exp never overflows."""
    x = min(max(x, -MAX_LOGIT), MAX_LOGIT)
    return 1.0 / (1.0 + np.exp(-x))


@njit(cache=True, nogil=True)
def td_update(tab, theta, ids, value_now, target, alpha):
    """Logistic NTD(0) step on the features of the position with shape ids `ids` (seed 004 eq. 10):
    theta += alpha * (target - value_now) * phi / |phi|^2. Returns the TD error."""
    delta = target - value_now
    n = S.active_count(tab, ids)
    if n > 0:
        S.add_gradient(tab, theta, ids, alpha * delta / n)
    return delta


@njit(cache=True, nogil=True)
def _outcome(pos):
    """1 Black wins, 0 White wins, 0.5 tie (area score, every stone alive)."""
    score = area_score(pos)
    return 1.0 if score > 0 else (0.0 if score < 0 else 0.5)


@njit(cache=True, nogil=True)
def _choose(pos, tab, value_w, ids, x, eps, rng, moves):
    """Epsilon-greedy afterstate move for the side to move (never an own single-point eye; PASS only when no
    other move is legal)."""
    n_all = gen_moves(pos, moves)
    board = pos[BOARD : BOARD + BOARD_CAP]
    w = pos[STRIDE]
    c = pos[SIDE]
    n = 0
    for i in range(n_all):
        m = moves[i]
        if m != PASS and not _eyelike(board, w, m, c):
            moves[n] = m
            n += 1
    if n == 0:
        return PASS
    if rand_below(rng, RAND_UNIT) < eps * RAND_UNIT:
        return moves[rand_below(rng, n)]
    best = moves[0]
    best_v = -np.inf
    sign = 1.0 if c == BLACK else -1.0
    start = rand_below(rng, n)  # ties go to a random one of the best moves
    for j in range(n):
        m = moves[(start + j) % n]
        do_move(pos, m)
        v = sign * (x + S.apply_move(pos, tab, value_w, ids))
        S.revert_move(pos, tab, value_w, ids)
        undo_move(pos)
        if v > best_v:
            best_v = v
            best = m
    return best


@njit(cache=True, nogil=True)
def td_episode(pos, tab, value_w, learn_w, separate, alpha, eps, greedy_moves, max_moves, rng, ws):
    """One self-play episode from pos (restored on return) with NTD2(0) updates of learn_w.

    V uses value_w; when `separate`, value_w = long-term + learn_w and every step is applied to both (Dyna-2's
    short-term memory), else learn_w is value_w itself. After `greedy_moves` epsilon-greedy moves the fast
    playout policy finishes the game (its moves are not learned from); the episode stops at `max_moves`
    moves or when the history is full. Returns (outcome for Black, moves, summed squared error of V against
    the outcome over the learned positions)."""
    n_reg = int(tab[S.T_NREG])
    ids = np.zeros(n_reg, np.int64)
    S.region_ids(tab, pos[BOARD : BOARD + BOARD_CAP], ids)
    past = np.zeros((2, n_reg), np.int64)  # shape ids of s_{t-1}, s_{t-2} (ring by parity)
    moves = np.empty(BOARD_CAP + 1, np.int32)
    limit = min(max_moves, pos[HIST_CAP] - pos[PLY] - 2)
    t = 0
    values = np.zeros(limit + 1, np.float64)
    while t < limit and t < greedy_moves and not game_over(pos):
        x = S.linear_sum(tab, value_w, ids)
        values[t] = sigmoid(x)
        if t >= 2:  # two-ply update of s_{t-2} toward V(s_t)
            old = past[t % 2]
            step = td_update(tab, learn_w, old, sigmoid(S.linear_sum(tab, value_w, old)), values[t], alpha)
            if separate:
                n = S.active_count(tab, old)
                if n > 0:
                    S.add_gradient(tab, value_w, old, alpha * step / n)
            x = S.linear_sum(tab, value_w, ids)
        past[t % 2, :] = ids
        m = _choose(pos, tab, value_w, ids, x, eps, rng, moves)
        do_move(pos, m)
        S.apply_move(pos, tab, value_w, ids)
        t += 1
    played = t
    if game_over(pos) or t >= limit:
        r = _outcome(pos)
        extra = 0
    else:
        none = np.empty(0, np.float64)
        trace = np.empty(0, np.int32)
        score, extra = run_playout(pos, ws, rng, max(1, max_moves - t), none, none, trace, POLICY_PLAIN)
        r = 1.0 if score > 0 else (0.0 if score < 0 else 0.5)
    err = 0.0
    for back in range(1, 3):  # the last two positions learn from the outcome
        if t - back >= 0:
            old = past[(t - back) % 2]
            v = sigmoid(S.linear_sum(tab, value_w, old))
            step = td_update(tab, learn_w, old, v, r, alpha)
            if separate:
                n = S.active_count(tab, old)
                if n > 0:
                    S.add_gradient(tab, value_w, old, alpha * step / n)
    for i in range(played):
        err += (r - values[i]) ** 2
    for _ in range(played):
        undo_move(pos)
    return r, played + extra, err


@njit(cache=True, nogil=True)
def td_search(pos, tab, value_w, short_w, n_episodes, alpha, eps, greedy_moves, max_moves, rng):
    """TD search (seed 004 §4, Dyna-2 §5): n_episodes simulated games from pos updating the short-term
    weights short_w; value_w must hold long-term + short_w on entry and stays equal to it. Returns the moves
    simulated."""
    ws = np.empty((WS_ROWS, BOARD_CAP), np.int64)
    total = 0
    for _ in range(n_episodes):
        _, moves, _ = td_episode(pos, tab, value_w, short_w, True, alpha, eps, greedy_moves, max_moves, rng, ws)
        total += moves
    return total


@njit(cache=True, nogil=True)
def td_selfplay(pos, tab, theta, n_games, alpha, eps, max_moves, rng):
    """Offline TD learning (the long-term memory): n_games epsilon-greedy self-play games from pos, all moves
    greedy-or-random (no playout handover). Returns (Black's score in games, moves, summed squared error of V
    against the outcome, positions counted in that sum)."""
    ws = np.empty((WS_ROWS, BOARD_CAP), np.int64)
    wins = 0.0
    total = 0
    err = 0.0
    for _ in range(n_games):
        r, moves, e = td_episode(pos, tab, theta, theta, False, alpha, eps, 1 << 30, max_moves, rng, ws)
        wins += r
        total += moves
        err += e
    return wins, total, err, total


@njit(cache=True, nogil=True)
def evaluate(pos, tab, theta):
    """V(pos) = P(Black wins) from scratch."""
    ids = np.zeros(int(tab[S.T_NREG]), np.int64)
    S.region_ids(tab, pos[BOARD : BOARD + BOARD_CAP], ids)
    return sigmoid(S.linear_sum(tab, theta, ids))


# --- weight files ---------------------------------------------------------------------------------------------
def save_value_weights(path, theta, size: int, ks=S.DEFAULT_KS, **notes) -> Path:
    """Write a weight vector of the size x size shape features to path (checksummed .npz, metadata notes)."""
    from usi_engine.weightfile import write_archive

    tab = S.shape_tables(size, tuple(ks))
    theta = np.asarray(theta, dtype=np.float64)
    if theta.shape != (S.n_weights(tab),):
        raise ValueError(f"weight vector has shape {theta.shape}, expected ({S.n_weights(tab)},)")
    n_li = int(tab[S.T_NLI])
    return write_archive(
        path,
        {"li": theta[:n_li], "ld": theta[n_li:]},
        feature_set(size, ks),
        FEATURE_VERSION,
        1.0,
        size=size,
        ks=list(S.table_ks(tab)),
        **notes,
    )


def read_value_weights(path, size: int, ks=S.DEFAULT_KS):
    """(weight vector, metadata) of a Go value weight file for this board size; WeightFileError on any
    problem (missing, unreadable, other size or feature set, wrong shapes, checksum, NaN)."""
    from usi_engine.weightfile import read_archive

    tab = S.shape_tables(size, tuple(ks))
    n_li = int(tab[S.T_NLI])
    blocks, meta = read_archive(
        path, feature_set(size, ks), {FEATURE_VERSION: {"li": (n_li,), "ld": (S.n_weights(tab) - n_li,)}}
    )
    return np.concatenate([blocks["li"], blocks["ld"]]), meta


def shipped_weights(size: int) -> Path:
    """Path of the shipped long-term weights for a board size (may not exist)."""
    return WEIGHTS_DIR / f"go{size}.npz"
