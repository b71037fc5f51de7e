"""Softmax playouts: rule 6 of the playout policy drawn by learned 3x3 shape weights (POLICY_SOFTMAX), numba.

Under ``playout.POLICY_SOFTMAX`` the policy's last rule (usi_engine/go/playout.py, rule 6) no longer takes a
uniformly random point: it draws an empty point p with probability gamma(p) / sum_q gamma(q), where gamma(p) is the
weight of p's 3x3 neighbourhood for the side to move (CrazyStone's softmax playouts, Coulom 2007; MoHex 2.0 learns
its playout pattern weights the same way). The rejections stay those of the uniform rule: a drawn point that is an
own eye or that the random rule refuses (workspace._random_ok: suicide, the ko point, a self-atari of a block of two
or more stones) is set aside and the draw is repeated among the other points; none left -> pass.

The gammas: ``gamma_table(model, beta)`` = exp(beta * w) with w the G_SHAPE3 weight of each mover-normalised 3x3
code in a learned move prior (usi_engine/go/moveprior.py, Coulom's Bradley-Terry model fitted by move prediction:
the shipped moves19.npz; beta = 1 is the model's own gammas, gamma ** beta). ``draw_table`` turns them into the
kernels' table: float64[2 * N_CODES], entry 2 * code + (c - 1) = the gamma of the *absolute* code ``code``
(patterns.neighbourhood_code) for colour c to move, in fixed point: integers, the largest GAMMA_TOP, none below 1.
Integer gammas keep the running totals below exact (no drift from adding and subtracting floats), so the draw never
runs past the list and incremental upkeep equals a recomputation bit for bit. The table is data: GoAdapter carries it
in its ``weights`` (game.py), the playout kernels take it as an argument; there is no global table.

Incremental upkeep (the workspace rows R_CODE, R_GAMMA_B, R_GAMMA_W and R_META[1], R_META[2]): every on-board point
keeps its absolute 3x3 code (stones too, so that a captured point has its code at hand); every empty point keeps its
gamma for either colour to move (0 at stones), and ws[R_META, c] the sum over the empty points for colour c. A stone
placed or captured at p changes one base-4 digit in the codes of p's 8 neighbours: ``soft_play`` (workspace._play
plus this upkeep) adds that digit's change to each and refreshes their gammas and the two totals, O(8) per changed
point, instead of O(8 * empty points) per move for recomputing every code. ``soft_draw`` then walks the empty-point
list from its nearer end, summing gammas up to a uniform draw below the total: O(empty points) additions, no
table look-up.
"""

import numpy as np

from usi_engine.go.layout import BLACK, BORDER, EMPTY, PASS
from usi_engine.go.moveprior import G_SHAPE3, KEYS, N_SHAPE3, OFFSETS, SHAPE3_CLASS, SWAP3, read_model, shipped_model
from usi_engine.go.patterns import N_CODES, neighbourhood_code
from usi_engine.go.workspace import (
    R_BOARD,
    R_CODE,
    R_EIDX,
    R_EMPTY,
    R_GAMMA_B,
    R_GAMMA_W,
    R_HEAD,
    R_META,
    R_NEXT,
    _is_own_eye,
    _play,
    _random_ok,
)
from usi_engine.jit import bare_kernel
from usi_engine.search.rng import xorshift64star

TABLE_SIZE = 2 * N_CODES  # entries of the kernels' table (draw_table)
PLAYOUT_FEATURE_SET = "go-playout-shape3"  # playout-weights files: one weight per 3x3 shape class
GAMMA_TOP = float(2**32)  # fixed-point value of the largest gamma; totals stay below 361 * 2**32 < 2**53
_UNIT = 1.0 / 9007199254740992.0  # 2**-53


def gamma_table(model: np.ndarray, beta: float = 1.0) -> np.ndarray:
    """float64[N_CODES]: gamma ** beta = exp(beta * w) of each mover-normalised 3x3 code (digits EMPTY 0, mover 1,
    opponent 2, BORDER 3), w its shape class's G_SHAPE3 weight in the move model array `model`."""
    model = np.asarray(model, np.float64)
    w = model[KEYS + OFFSETS[G_SHAPE3] : KEYS + OFFSETS[G_SHAPE3 + 1]]
    if not np.isfinite(beta) or beta < 0:
        raise ValueError(f"softmax playout exponent beta must be finite and >= 0, got {beta}")
    return np.exp(beta * w[SHAPE3_CLASS])


def draw_table(gammas: np.ndarray) -> np.ndarray:
    """The kernels' table of a gamma_table: float64[TABLE_SIZE], entry 2 * code + (c - 1) = the fixed-point gamma
    (an integer in [1, GAMMA_TOP]) of absolute code `code` for colour c to move (White sees the colours swapped)."""
    gammas = np.asarray(gammas, np.float64)
    if gammas.shape != (N_CODES,) or not np.all(np.isfinite(gammas)) or np.any(gammas <= 0):
        raise ValueError(f"gammas must be {N_CODES} positive finite numbers")
    fixed = np.maximum(1.0, np.rint(gammas * (GAMMA_TOP / gammas.max())))
    table = np.empty((N_CODES, 2), np.float64)
    table[:, 0] = fixed  # Black to move: the absolute code is the normalised one
    table[:, 1] = fixed[SWAP3]  # White to move: its stones are the mover's
    return table.reshape(TABLE_SIZE)


def shape_gammas(theta: np.ndarray) -> np.ndarray:
    """gamma_table's form for shape-class weights theta (float64[N_SHAPE3], a playout-weights file of
    learn/go_balance.py): exp(theta - max theta) of each mover-normalised code's class."""
    theta = np.asarray(theta, np.float64)
    if theta.shape != (N_SHAPE3,) or not np.all(np.isfinite(theta)):
        raise ValueError(f"shape weights must be {N_SHAPE3} finite numbers")
    return np.exp(theta - theta.max())[SHAPE3_CLASS]


def score_classes() -> np.ndarray:
    """int64[TABLE_SIZE]: the shape class (moveprior.SHAPE3_CLASS) of each entry 2 * code + (c - 1) of draw_table,
    the absolute code seen by colour c to move; run_playout's `classes` for the score function (soft_score)."""
    out = np.empty((N_CODES, 2), np.int64)
    out[:, 0] = SHAPE3_CLASS
    out[:, 1] = SHAPE3_CLASS[SWAP3]
    return out.reshape(TABLE_SIZE)


def write_playout_weights(path, theta: np.ndarray, **notes) -> None:
    """A playout-weights file (usi_engine/weightfile.py's archive, feature set PLAYOUT_FEATURE_SET): the shape-class
    weights theta, float64[N_SHAPE3], and JSON-serialisable notes."""
    from usi_engine.weightfile import write_archive

    shape_gammas(theta)  # checks the shape and finiteness
    write_archive(path, {"shape3": theta}, PLAYOUT_FEATURE_SET, 1, 1.0, **notes)


def read_playout_weights(path) -> tuple[np.ndarray, dict]:
    """(theta, metadata) of a playout-weights file; WeightFileError (a ValueError) naming the file and the problem."""
    from usi_engine.weightfile import read_archive

    blocks, meta = read_archive(path, PLAYOUT_FEATURE_SET, {1: {"shape3": (N_SHAPE3,)}})
    return blocks["shape3"], meta


def weights_table(path, beta: float = 1.0) -> np.ndarray:
    """draw_table of the shape weights of a playout-weights file (learn/go_balance.py), as gammas exp(beta * theta);
    WeightFileError (a ValueError) when the file is missing or bad."""
    if not np.isfinite(beta) or beta < 0:
        raise ValueError(f"softmax playout exponent beta must be finite and >= 0, got {beta}")
    theta, _ = read_playout_weights(path)
    return draw_table(shape_gammas(beta * theta))


def playout_table(model_path=None, beta: float = 1.0) -> np.ndarray:
    """draw_table of the G_SHAPE3 gammas of a move-prior file (None: the shipped moves19.npz); WeightFileError (a
    ValueError) when the file is missing or bad."""
    model, _ = read_model(shipped_model(19) if model_path is None else model_path)
    return draw_table(gamma_table(model, beta))


@bare_kernel
def rand_fraction(rng):
    """Uniform float in [0, 1) with 53 bits, from the playouts' xorshift64* state rng[0] (the step of
    playout.rand_below, which keeps only 31 bits: too few to draw below a total of up to 2**41)."""
    return float(xorshift64star(rng) >> np.uint64(11)) * _UNIT


@bare_kernel
def soft_setup(ws, w, size, table):
    """Codes, gammas and totals of the board in ws (after workspace._setup), from scratch."""
    board, code = ws[R_BOARD], ws[R_CODE]
    gb, gw = ws[R_GAMMA_B], ws[R_GAMMA_W]
    gb[:] = 0
    gw[:] = 0
    tb = 0
    tw = 0
    for y in range(size):
        for x in range(size):
            p = (y + 1) * w + x
            k = neighbourhood_code(board, w, p)
            code[p] = k
            if board[p] == EMPTY:
                b = int(table[2 * k])
                v = int(table[2 * k + 1])
                gb[p] = b
                gw[p] = v
                tb += b
                tw += v
    ws[R_META, 1] = tb
    ws[R_META, 2] = tw


@bare_kernel
def _changed(ws, w, p, delta, table):
    """The content of point p changed by `delta` (new - old): p's own gammas (0 at a stone) and its 8 neighbours'
    codes and gammas, the totals adjusted. p is digit 7 - k of the neighbour at offset k (neighbourhood_code's
    order, which is symmetric). Branch-free over empty / stone: a stone's gammas are its table entries times 0."""
    board, code, gb, gw = ws[R_BOARD], ws[R_CODE], ws[R_GAMMA_B], ws[R_GAMMA_W]
    e = 1 if board[p] == EMPTY else 0
    k = 2 * code[p]
    b = int(table[k]) * e
    v = int(table[k + 1]) * e
    db = b - gb[p]
    dw = v - gw[p]
    gb[p] = b
    gw[p] = v
    offsets = (-w - 1, -w, -w + 1, -1, 1, w - 1, w, w + 1)
    for i in range(8):
        q = p + offsets[i]
        if q < 0:
            continue
        u = board[q]
        if u == BORDER:
            continue
        cq = code[q] + (delta << (2 * (7 - i)))
        code[q] = cq
        e = 1 if u == EMPTY else 0
        b = int(table[2 * cq]) * e
        v = int(table[2 * cq + 1]) * e
        db += b - gb[q]
        dw += v - gw[q]
        gb[q] = b
        gw[q] = v
    ws[R_META, 1] += db
    ws[R_META, 2] += dw


@bare_kernel
def _captured(ws, w, h, o, table):
    """Block h of colour o was just captured (its stones are empty, its ring of stones intact): every stone's
    point changed by -o."""
    nxt = ws[R_NEXT]
    s = h
    while True:
        _changed(ws, w, s, -o, table)
        s = nxt[s]
        if s == h:
            break


@bare_kernel
def soft_play(ws, w, p, c, table):
    """workspace._play of a legal stone of c at p, keeping the codes, gammas and totals (module docstring).
    Returns the new simple-ko point (0 none)."""
    n_empty = ws[R_META, 0]
    ko = _play(ws, w, p, c)
    _changed(ws, w, p, c, table)
    if ws[R_META, 0] != n_empty - 1:  # captures: an orthogonal neighbour that p's code (its neighbours before the
        # move; each captured stone next to p clears its digit) still shows as an opponent stone but is empty now
        # belongs to a captured block not yet handled; its head and ring are intact (workspace._remove_block)
        board, code, head = ws[R_BOARD], ws[R_CODE], ws[R_HEAD]
        o = 3 - c
        if (code[p] >> 2) & 3 == o and board[p - w] == EMPTY:  # digit 1: p - w
            _captured(ws, w, head[p - w], o, table)
        if (code[p] >> 6) & 3 == o and board[p - 1] == EMPTY:  # digit 3: p - 1
            _captured(ws, w, head[p - 1], o, table)
        if (code[p] >> 8) & 3 == o and board[p + 1] == EMPTY:  # digit 4: p + 1
            _captured(ws, w, head[p + 1], o, table)
        if (code[p] >> 12) & 3 == o and board[p + w] == EMPTY:  # digit 6: p + w
            _captured(ws, w, head[p + w], o, table)
    return ko


@bare_kernel
def soft_draw(ws, w, c, ko, rng):
    """Rule 6 under POLICY_SOFTMAX: an empty point drawn with probability proportional to its gamma for c among
    those that are not an own eye and that workspace._random_ok accepts (a refused point is moved behind the
    candidates of the empty-point list and the draw repeated); PASS when none is left. Needs soft_setup / soft_play
    upkeep of ws."""
    board, empties, eidx = ws[R_BOARD], ws[R_EMPTY], ws[R_EIDX]
    gamma = ws[R_GAMMA_B] if c == BLACK else ws[R_GAMMA_W]
    n = ws[R_META, 0]
    total = ws[R_META, c]
    while n > 0:
        u = int(rand_fraction(rng) * total)  # uniform in [0, total): every gamma >= 1, so total >= n > 0
        # the candidate i with S(i) <= u < S(i) + gamma_i, S(i) the sum before it: walked from the nearer end
        if 2 * u < total:
            i = 0
            acc = gamma[empties[0]]  # S(i) + gamma_i
            while acc <= u and i < n - 1:
                i += 1
                acc += gamma[empties[i]]
        else:
            i = n - 1
            acc = total - gamma[empties[i]]  # S(i)
            while acc > u and i > 0:
                i -= 1
                acc -= gamma[empties[i]]
        p = empties[i]
        if not _is_own_eye(board, w, p, c) and _random_ok(ws, w, p, c, ko):
            return p
        total -= gamma[p]
        n -= 1
        q = empties[n]  # swap p with the last candidate: the candidates stay empties[:n]
        empties[i] = q
        eidx[q] = i
        empties[n] = p
        eidx[p] = n
    return PASS


@bare_kernel
def soft_score(ws, w, c, ko, classes, psi):
    """The expectation part of rule 6's score function, before its draw: psi[k] -= pi(k), the probability that the
    softmax draw (soft_draw) picks a point of shape class k, pi(p) = gamma(p) / sum of gamma over the points it
    accepts (not an own eye, workspace._random_ok). With the drawn point's psi[class] += 1 this is
    d log pi(a) / d theta for gammas exp(theta) (the fixed-point table's rounding aside). Needs soft_setup /
    soft_play upkeep of ws; changes nothing in it."""
    board, empties, code = ws[R_BOARD], ws[R_EMPTY], ws[R_CODE]
    gamma = ws[R_GAMMA_B] if c == BLACK else ws[R_GAMMA_W]
    n = ws[R_META, 0]
    total = 0.0
    for i in range(n):
        p = empties[i]
        if not _is_own_eye(board, w, p, c) and _random_ok(ws, w, p, c, ko):
            total += gamma[p]
    if total == 0.0:
        return
    for i in range(n):
        p = empties[i]
        if not _is_own_eye(board, w, p, c) and _random_ok(ws, w, p, c, ko):
            psi[classes[2 * code[p] + c - 1]] -= gamma[p] / total
