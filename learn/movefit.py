"""What the two move-prior fits (learn/go_moves.py, learn/shogi_moves.py) share: the record files named on the
command line, the softmax likelihood of the move played (or the cross-entropy to a target distribution over the
moves: the self-play prior, learn/selfplay_prior.py; a teacher's distribution, `learn go-moves --teacher`) with
its gradient, and Adam (Kingma & Ba 2015) epochs over mini-batches of positions.

Positions are stored as feature rows: rows[starts[t]:starts[t + 1]] are position t's candidate moves (each row
the weight indices of one move's features), played[t] the index of the move played among them; a move's score
is the sum of the weights its row names (the groups g with use[g] only)."""

import zipfile
from pathlib import Path

import numpy as np
from numba import njit

ADAM_B1, ADAM_B2, ADAM_EPS = 0.9, 0.999, 1e-8
NO_TARGETS = np.zeros(0)  # train_epoch's q: fit the moves played


# --- records ---------------------------------------------------------------------------------------------------
def record_files(paths) -> list[Path]:
    """The files named: a file itself, a folder's files recursively (sorted)."""
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p])
    return files


def record_members(path: Path):
    """(name, bytes) of the records in a file: itself, or each member of a .zip (folders left out)."""
    if path.suffix.lower() == ".zip":
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                if not name.endswith("/"):
                    yield name, z.read(name)
    else:
        yield path.name, path.read_bytes()


@njit(cache=True)
def contains(moves, n, m):
    """Whether m is among moves[:n] (a record move checked against the legal moves)."""
    found = False
    for i in range(n):
        found = found or moves[i] == m
    return found


# --- the likelihood --------------------------------------------------------------------------------------------
@njit(cache=True)
def softmax_loss(rows, a, b, k, q, w, use, s, grad, scale):
    """The cross-entropy -sum_i t_i log P(row a + i) among rows a..b under the softmax of the rows' scores
    (weights w, the groups with use[g] only), the target t the one-hot of k when k >= 0, else the distribution
    q[0:b-a] (summing to 1); with scale != 0 adds scale * d/dw of it to grad: per row, (P - t) times the row's
    features (the softmax's log-likelihood gradient, d log P(i)/d s(r) = [i = r] - P(r)). s: scratch of at
    least b - a, holding the rows' scores on return."""
    top = -np.inf
    for r in range(a, b):
        v = 0.0
        for g in range(rows.shape[1]):
            if use[g]:
                v += w[rows[r, g]]
        s[r - a] = v
        top = max(top, v)
    total = 0.0
    for i in range(b - a):
        total += np.exp(s[i] - top)
    log_z = top + np.log(total)
    if k >= 0:
        loss = log_z - s[k]
    else:
        loss = log_z
        for i in range(b - a):
            loss -= q[i] * s[i]
    if scale != 0.0:
        for r in range(a, b):
            d = np.exp(s[r - a] - top) / total
            if k >= 0:
                d -= 1.0 if r - a == k else 0.0
            else:
                d -= q[r - a]
            for g in range(rows.shape[1]):
                if use[g]:
                    grad[rows[r, g]] += scale * d
    return loss


@njit(cache=True)
def position_nll(rows, a, b, k, w, use, s, grad, scale):
    """-log P(row a + k) among rows a..b (softmax_loss with the one-hot target of k); with scale != 0 adds
    scale * d(-log P)/dw to grad. s: scratch of at least b - a, holding the rows' scores on return."""
    return softmax_loss(rows, a, b, k, s[:0], w, use, s, grad, scale)


@njit(cache=True)
def position_cross_entropy(rows, a, b, q, w, use, s, grad, scale):
    """-sum_i q[i] log P(row a + i) among rows a..b for a target distribution q[0:b-a] (softmax_loss); with
    scale != 0 adds scale times its gradient to grad. s: scratch of at least b - a."""
    return softmax_loss(rows, a, b, -1, q, w, use, s, grad, scale)


@njit(cache=True)
def adam_step(w, grad, m1, m2, step, lr, l2):
    """One Adam step on w with gradient grad + l2 * w (Kingma & Ba, Algorithm 1: moment estimates m1, m2,
    bias-corrected); step[0] counts the steps taken and is advanced first."""
    step[0] += 1
    c1 = 1.0 - ADAM_B1 ** step[0]
    c2 = 1.0 - ADAM_B2 ** step[0]
    for i in range(w.shape[0]):
        g = grad[i] + l2 * w[i]
        m1[i] = ADAM_B1 * m1[i] + (1.0 - ADAM_B1) * g
        m2[i] = ADAM_B2 * m2[i] + (1.0 - ADAM_B2) * g * g
        w[i] -= lr * (m1[i] / c1) / (np.sqrt(m2[i] / c2) + ADAM_EPS)


@njit(cache=True)
def train_epoch(rows, starts, played, q, order, w, use, m1, m2, step, lr, l2, batch, width):
    """One pass of Adam over the positions in `order` in mini-batches of `batch`; returns the mean loss seen:
    -log P of the move played, or with per-row targets q (q[starts[t]:starts[t + 1]] position t's distribution
    over its rows; empty: the moves played) the cross-entropy to them. step[0] counts Adam steps (bias
    correction); width: the most candidate moves of a position."""
    grad = np.zeros(w.shape[0])
    s = np.empty(width)
    total = 0.0
    for j0 in range(0, order.shape[0], batch):
        j1 = min(order.shape[0], j0 + batch)
        grad[:] = 0.0
        for j in range(j0, j1):
            t = order[j]
            a, b, scale = starts[t], starts[t + 1], 1.0 / (j1 - j0)
            if q.shape[0] > 0:
                total += position_cross_entropy(rows, a, b, q[a:b], w, use, s, grad, scale)
            else:
                total += position_nll(rows, a, b, played[t], w, use, s, grad, scale)
        adam_step(w, grad, m1, m2, step, lr, l2)
    return total / max(1, order.shape[0])
