"""A learned move prior for Go: the features of a candidate move and a softmax model over them (numba).

Model (Coulom 2007, "Computing Elo Ratings of Move Patterns in the Game of Go": a generalized Bradley-Terry
model; here fitted by gradient descent, learn/go_moves.py): every legal stone move m of the side to move takes
exactly one value v_g(m) in each feature group g below, its score is s(m) = sum_g w[off_g + v_g(m)], and the
probability that m is the move played is P(m) = exp(s(m)) / sum_j exp(s(j)) over the legal stone moves (his
eq. 1 with gamma = exp(w)). Passes are not modelled.

Feature groups, all in the colours of the side to move (X = mover, O = opponent):
- G_SHAPE3: the 3x3 neighbourhood (8 points: empty / X / O / off board), one class per shape up to the 8
  symmetries of the square (colours normalised to the mover).
- G_SHAPE12, G_SHAPE24: the 12 points within Manhattan distance 2 and the 24 within distance 3, the same way;
  0 when the shape is not in the model's vocabulary of shapes seen often enough in training (sorted keys), else
  its index + 1.
- G_CAPTURE: 0 none; 1 captures one stone; 2 captures two or more; 3 captures while an own block next to the
  move is in atari (a capture that saves it).
- G_ESCAPE (no capture): an own block next to the move is in atari and the extended block has 1 three or more
  liberties, 2 exactly two, 3 exactly two and a working ladder (ladder.py); 0 otherwise.
- G_SELF_ATARI (no capture): the move's block has one liberty: 1 a single stone, 2 two or more stones.
- G_ATARI: the move leaves an opponent block next to it with one liberty: 1 a single stone, 2 more.
- G_DIST_LAST, G_DIST_PREV: Coulom's distance d = dx + dy + max(dx, dy) to the opponent's last move and to the
  mover's own previous move: 0 none (start of game or pass), else min(d, DIST_CAP) - 1 (d >= 2).
- G_EDGE: where the point lies: its distances to the nearer edge of each axis, lo <= hi, capped at EDGE_CAP
  (0 = the first line; the pair tells the 3-4 point from the side's third line), and open = no stone within
  Manhattan distance 2: 2 * (hi * (hi + 1) / 2 + lo) + open.
- G_OWNER: who owns the point at the end of playouts from the position (Pachi's "mcowner" pattern feature): 0 when
  no ownership is known, else 1 + the mover's share q of the playouts' final ownership in OWNER_BUCKETS equal
  buckets, 1 + min(OWNER_BUCKETS - 1, floor(OWNER_BUCKETS q)). Settled points (q near 0 or 1) are rarely played.

The ownership is the position's context, not a weight: the model array carries it after the weights (OWN_AT: a
flag, 1 when known, then the mean ownership of each point, +1 = Black), written before a search from playouts of
the root position (`owner_context`) and used at every node below it, as Pachi uses its root ownermap.

A model array (``model``, float64) is ``[keys12 (SHAPE12_KEYS), keys24 (SHAPE24_KEYS), w (N_WEIGHTS), ownership
context (1 + BOARD_CAP)]``, the keys ascending and padded with NO_KEY12 / NO_KEY24; its file (usi_engine/weightfile.py's
archive of float32 blocks) holds ``keys12``, the 48-bit keys24 as two 24-bit halves ``keys24_hi`` and ``keys24_lo``,
and ``w`` (version 2 files, before G_OWNER, hold the weights without the G_OWNER group: read as 0 there).
"""

from pathlib import Path

import numpy as np

from usi_engine.go.ladder import S_ROWS, escape_is_laddered, liberties
from usi_engine.go.layout import (
    BLACK,
    BOARD_CAP,
    BORDER,
    EMPTY,
    HIST,
    HIST_STRIDE,
    H_MOVE,
    LARGE_BOARD,
    PASS,
    PLY,
    SIDE,
    SIZE,
    STRIDE,
    WHITE,
)
from usi_engine.go.patterns import NEIGHBOUR_CELLS, N_CODES, neighbourhood_code
from usi_engine.go.shapes import square_maps
from usi_engine.go.workspace import R_BOARD, R_GSIZE, R_HEAD, _in_atari, _setup
from usi_engine.jit import bare_kernel, counted_kernel
from usi_engine.weightfile import read_archive, write_archive

FEATURE_SET = "go-moves"
FEATURE_VERSION = 3
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"

G_SHAPE3, G_SHAPE12, G_CAPTURE, G_ESCAPE, G_SELF_ATARI, G_ATARI, G_DIST_LAST, G_DIST_PREV, G_EDGE, G_SHAPE24 = range(10)
G_OWNER = 10
N_GROUPS = 11
OWNER_BUCKETS = 9  # Pachi's mcowner feature has 9
SHAPE12_KEYS = 32768  # vocabulary capacities of the 12- and 24-point shapes
SHAPE24_KEYS = 65536
NO_KEY12 = float(1 << 24)  # padding keys: above every shape code (24 / 48 bits)
NO_KEY24 = float(1 << 48)
HALF = 1 << 24
DIST_CAP = 17
EDGE_CAP = 7
NEAR = 2
# the 24 points within Manhattan distance 3 of the centre, as (dx, dy), nearer ones first: the first 12 are the
# 12-point shape (a symmetry maps each distance onto itself)
SHAPE_OFFSETS = tuple(
    sorted(
        ((dx, dy) for dx in range(-3, 4) for dy in range(-3, 4) if 1 <= abs(dx) + abs(dy) <= 3),
        key=lambda o: (abs(o[0]) + abs(o[1]), o),
    )
)


def _shape3_classes() -> tuple[np.ndarray, int]:
    """class[code] for the mover-normalised 3x3 codes (digits: EMPTY 0, X 1, O 2, BORDER 3) and the number of
    classes: codes equal under a symmetry of the square share a class."""
    perm = square_maps(3)
    digits = (np.arange(N_CODES)[:, None] >> (2 * np.arange(8))) & 3
    canon = np.full(N_CODES, N_CODES, np.int64)
    pos_of_cell = {cell: k for k, cell in enumerate(NEIGHBOUR_CELLS)}
    for g in range(8):
        code = np.zeros(N_CODES, np.int64)
        for k, cell in enumerate(NEIGHBOUR_CELLS):
            code += digits[:, k] << (2 * pos_of_cell[int(perm[g, cell])])
        canon = np.minimum(canon, code)
    _, classes = np.unique(canon, return_inverse=True)
    return classes.astype(np.int32), int(classes.max()) + 1


SHAPE3_CLASS, N_SHAPE3 = _shape3_classes()
# digit swap X <-> O of a 3x3 code (for White to move)
_D = (np.arange(N_CODES)[:, None] >> (2 * np.arange(8))) & 3
SWAP3 = (np.where((_D == 1) | (_D == 2), 3 - _D, _D) << (2 * np.arange(8))).sum(axis=1).astype(np.int32)
del _D
# SHAPE_PERM[g, k] = the offset index that symmetry g maps offset k to
_CELL7 = [(dy + 3) * 7 + dx + 3 for dx, dy in SHAPE_OFFSETS]  # the offsets as cells of a 7x7 square
SHAPE_PERM = np.array([[_CELL7.index(int(square_maps(7)[g, c])) for c in _CELL7] for g in range(8)], np.int64)
SHAPE_DX = np.array([o[0] for o in SHAPE_OFFSETS], np.int64)
SHAPE_DY = np.array([o[1] for o in SHAPE_OFFSETS], np.int64)

GROUP_SIZES = np.array(
    [
        N_SHAPE3,
        SHAPE12_KEYS + 1,
        4,
        4,
        3,
        3,
        DIST_CAP,
        DIST_CAP,
        (EDGE_CAP + 1) * (EDGE_CAP + 2),
        SHAPE24_KEYS + 1,
        OWNER_BUCKETS + 1,
    ],
    np.int64,
)
OFFSETS = np.concatenate([[0], np.cumsum(GROUP_SIZES)]).astype(np.int64)
N_WEIGHTS = int(OFFSETS[-1])
N_WEIGHTS_V2 = int(OFFSETS[G_OWNER])  # the weights of a version 2 file: every group before G_OWNER
KEYS = SHAPE12_KEYS + SHAPE24_KEYS
OWN_AT = KEYS + N_WEIGHTS  # the ownership context: flag, then the mean ownership of each point (+1 = Black)
MODEL_SIZE = OWN_AT + 1 + BOARD_CAP


@bare_kernel
def _distance(p, q, w):
    """Coulom's move distance dx + dy + max(dx, dy) between points p and q (stride w)."""
    dx, dy = abs(p % w - q % w), abs(p // w - q // w)
    return dx + dy + max(dx, dy)


@bare_kernel
def _dist_value(p, q, w):
    if q <= 0 or q == PASS:
        return 0
    return min(_distance(p, q, w), DIST_CAP) - 1


@counted_kernel
def shape_codes(board, w, size, p, c):
    """Canonical codes (each the minimum over the 8 symmetries) of the 12 points within distance 2 of p (24 bits)
    and of the 24 within distance 3 (48 bits), in mover c's colours."""
    x0, y0 = p % w, p // w - 1
    cells = np.empty(24, np.int64)
    for k in range(24):
        x, y = x0 + SHAPE_DX[k], y0 + SHAPE_DY[k]
        if 0 <= x < size and 0 <= y < size:
            v = board[(y + 1) * w + x]
            cells[k] = v if v == EMPTY or c == BLACK else 3 - v
        else:
            cells[k] = BORDER
    best12 = HALF
    best24 = HALF * HALF
    for g in range(8):
        code = 0
        for k in range(24):
            code |= cells[k] << (2 * SHAPE_PERM[g, k])
        best12 = min(best12, code & (HALF - 1))
        best24 = min(best24, code)
    return best12, best24


@bare_kernel
def owner_value(own, p, c):
    """G_OWNER of colour c playing p under the ownership context own (the model's, from OWN_AT; empty or flag 0:
    none known)."""
    if own.shape[0] == 0 or own[0] == 0.0:
        return 0
    x = own[1 + p] if c == BLACK else -own[1 + p]
    share = 0.5 * (1.0 + x)
    return 1 + min(OWNER_BUCKETS - 1, max(0, int(share * OWNER_BUCKETS)))


@counted_kernel
def candidate_features(ws, sc, stamp, w, size, p, c, last, prev, own, out):
    """out[g] = the value of group g for colour c playing the empty point p (G_SHAPE12 / G_SHAPE24: the raw
    canonical codes, see shape_codes); ws after workspace._setup of the position, sc / stamp ladder.py scratch, own
    the ownership context (owner_value). The board of ws is left as it was."""
    board, head, gsize = ws[R_BOARD], ws[R_HEAD], ws[R_GSIZE]
    o = 3 - c
    code = neighbourhood_code(board, w, p)
    out[G_SHAPE3] = SHAPE3_CLASS[code if c == BLACK else SWAP3[code]]
    out[G_SHAPE12], out[G_SHAPE24] = shape_codes(board, w, size, p, c)
    captured = 0
    own_in_atari = False
    own_stones = 1
    seen = np.zeros(4, np.int64)
    dirs = (1, -1, w, -w)
    for i in range(4):
        q = p + dirs[i]
        v = board[q]
        if v != c and v != o:
            continue
        h = head[q]
        dup = False
        for j in range(i):
            dup = dup or seen[j] == h
        seen[i] = h
        if dup:
            continue
        if v == o and _in_atari(ws, h):
            captured += gsize[h]
        elif v == c:
            own_stones += gsize[h]
            own_in_atari = own_in_atari or _in_atari(ws, h)
    out[G_CAPTURE] = 0 if captured == 0 else (3 if own_in_atari else (1 if captured == 1 else 2))
    out[G_ESCAPE] = 0
    out[G_SELF_ATARI] = 0
    out[G_ATARI] = 0
    if captured == 0:
        board[p] = c
        libs = liberties(board, w, p, sc, stamp, 2)
        for d in (1, -1, w, -w):
            q = p + d
            if board[q] == o and liberties(board, w, q, sc, stamp, 1) == 1:
                out[G_ATARI] = max(out[G_ATARI], 1 if gsize[head[q]] == 1 else 2)
        board[p] = EMPTY
        if own_in_atari and libs >= 2:
            out[G_ESCAPE] = 1 if libs >= 3 else (3 if escape_is_laddered(board, w, p, c) else 2)
        elif libs == 1:
            out[G_SELF_ATARI] = 1 if own_stones == 1 else 2
    out[G_DIST_LAST] = _dist_value(p, last, w)
    out[G_DIST_PREV] = _dist_value(p, prev, w)
    x, y = p % w, p // w - 1
    ex, ey = min(x, size - 1 - x, EDGE_CAP), min(y, size - 1 - y, EDGE_CAP)
    lo, hi = min(ex, ey), max(ex, ey)
    open_ = 1
    for dy in range(-NEAR, NEAR + 1):
        r = NEAR - abs(dy)
        for dx in range(-r, r + 1):
            xx, yy = x + dx, y + dy
            if 0 <= xx < size and 0 <= yy < size:
                v = board[(yy + 1) * w + xx]
                if v == BLACK or v == WHITE:
                    open_ = 0
    out[G_EDGE] = 2 * (hi * (hi + 1) // 2 + lo) + open_
    out[G_OWNER] = owner_value(own, p, c)


@bare_kernel
def _vocabulary_value(keys, code):
    """index + 1 of a shape code in sorted keys, 0 when absent."""
    i = np.searchsorted(keys, float(code))
    if i < keys.shape[0] and keys[i] == code:
        return i + 1
    return 0


@bare_kernel
def weight_indices(model, f):
    """Turn candidate_features' raw values f into the indices of their weights in the model's w, in place."""
    f[G_SHAPE12] = _vocabulary_value(model[:SHAPE12_KEYS], f[G_SHAPE12])
    f[G_SHAPE24] = _vocabulary_value(model[SHAPE12_KEYS:KEYS], f[G_SHAPE24])
    for g in range(N_GROUPS):
        f[g] += OFFSETS[g]


@bare_kernel
def last_moves(pos):
    """(last, prev): the moves of the previous two plies (PASS when there is none)."""
    ply = pos[PLY]
    last = pos[HIST + HIST_STRIDE * (ply - 1) + H_MOVE] if ply > 0 else PASS
    prev = pos[HIST + HIST_STRIDE * (ply - 2) + H_MOVE] if ply > 1 else PASS
    return last, prev


@bare_kernel
def move_probabilities(pos, ws, model, moves, n, out):
    """out[i] = P(moves[i]) under the model for the side to move of pos (0 for a pass); uses ws."""
    _setup(pos, ws)
    probabilities_set_up(pos, ws, model, moves, n, out)


@counted_kernel
def probabilities_set_up(pos, ws, model, moves, n, out):
    """move_probabilities with ws already holding workspace._setup of pos (as playout.move_priors leaves it)."""
    w, size, c = pos[STRIDE], pos[SIZE], pos[SIDE]
    last, prev = last_moves(pos)
    wt = model[KEYS:OWN_AT]
    own = model[OWN_AT:]
    sc = np.zeros((S_ROWS, ws.shape[1]), np.int64)
    stamp = np.zeros(2, np.int64)
    f = np.empty(N_GROUPS, np.int64)
    top = -np.inf
    for i in range(n):
        p = moves[i]
        if p == PASS:
            out[i] = -np.inf
            continue
        candidate_features(ws, sc, stamp, w, size, p, c, last, prev, own, f)
        weight_indices(model, f)
        s = 0.0
        for g in range(N_GROUPS):
            s += wt[f[g]]
        out[i] = s
        top = max(top, s)
    total = 0.0
    for i in range(n):
        out[i] = np.exp(out[i] - top) if out[i] > -np.inf else 0.0
        total += out[i]
    if total > 0.0:
        for i in range(n):
            out[i] /= total


def new_model() -> np.ndarray:
    """An untrained model: no shapes, all weights 0 (every legal move equally likely)."""
    model = np.zeros(MODEL_SIZE, np.float64)
    model[:SHAPE12_KEYS] = NO_KEY12
    model[SHAPE12_KEYS:KEYS] = NO_KEY24
    return model


def save_model(path, model: np.ndarray, **notes) -> Path:
    """Write a model array as a checksummed weight archive (notes go into its metadata)."""
    model = np.asarray(model, np.float64)
    if model.shape != (MODEL_SIZE,):
        raise ValueError(f"model has shape {model.shape}, expected ({MODEL_SIZE},)")
    keys24 = model[SHAPE12_KEYS:KEYS].astype(np.int64)
    blocks = {
        "keys12": model[:SHAPE12_KEYS],
        "keys24_hi": (keys24 >> 24).astype(np.float64),
        "keys24_lo": (keys24 & (HALF - 1)).astype(np.float64),
        "w": model[KEYS:OWN_AT],
    }
    return write_archive(path, blocks, FEATURE_SET, FEATURE_VERSION, 1.0, **notes)


def read_model(path) -> tuple[np.ndarray, dict]:
    """(model array, metadata) of a move-prior file; WeightFileError on any problem (missing, unreadable, other
    feature set or version, wrong shapes, checksum, NaN, keys out of order)."""
    from usi_engine.weightfile import WeightFileError

    keys = {"keys12": (SHAPE12_KEYS,), "keys24_hi": (SHAPE24_KEYS,), "keys24_lo": (SHAPE24_KEYS,)}
    versions = {2: {**keys, "w": (N_WEIGHTS_V2,)}, FEATURE_VERSION: {**keys, "w": (N_WEIGHTS,)}}
    blocks, meta = read_archive(path, FEATURE_SET, versions)
    keys24 = blocks["keys24_hi"] * HALF + blocks["keys24_lo"]
    for block in (blocks["keys12"], keys24):
        if np.any(np.diff(block) < 0) or np.any(block < 0) or np.any(block != np.floor(block)):
            raise WeightFileError(path, "shape keys are not ascending non-negative integers")
    model = new_model()
    model[:SHAPE12_KEYS], model[SHAPE12_KEYS:KEYS] = blocks["keys12"], keys24
    model[KEYS : KEYS + len(blocks["w"])] = blocks["w"]  # a version 2 file leaves the G_OWNER weights at 0
    return model, meta


def uses_ownership(model) -> bool:
    """Whether the model's G_OWNER weights matter (any of them non-zero): the ownership context is then worth
    computing before a search."""
    start = KEYS + OFFSETS[G_OWNER]
    return bool(np.any(np.asarray(model)[start : start + GROUP_SIZES[G_OWNER]] != 0.0))


def set_ownership(model, own) -> None:
    """Write the ownership context into a model array, in place: own = the mean final ownership of each point
    (BOARD_CAP values, +1 = Black) of playouts from the position, or None for none known."""
    if own is None:
        model[OWN_AT] = 0.0
        model[OWN_AT + 1 :] = 0.0
    else:
        model[OWN_AT] = 1.0
        model[OWN_AT + 1 :] = own


def shipped_model(size: int) -> Path:
    """Path of the shipped move prior for a size x size board: weights/moves9.npz (fitted to 9x9 games) below
    15x15, weights/moves19.npz (fitted to 19x19 games) from 15x15 on."""
    return WEIGHTS_DIR / ("moves9.npz" if size < LARGE_BOARD else "moves19.npz")
