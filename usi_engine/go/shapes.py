"""Local shape features of Go (seed 004 §3.1): every 1x1, 2x2 and 3x3 square of the board, numba kernels.

A *region* is a k x k square (k in ``ks``, default 1, 2, 3) at one anchor (its lower-left point); on an N x N
board there are (N - k + 1)^2 regions of size k, all overlapping. The *shape id* of a region is its contents
in base 3: ``id = sum(colour(cell) * 3**c)`` with colour EMPTY 0 / BLACK 1 / WHITE 2 and cell number
``c = i * k + j`` (row i, column j inside the square). Exactly one local shape feature is active per region.

Weight sharing (seed 004 §3.1.3), both kinds at once: each region's shape activates
- a *location-independent* (LI) weight shared by every translation, rotation, reflection and colour inversion
  of the shape, and
- a *location-dependent* (LD) weight shared by every rotation / reflection of the whole board (which moves the
  square too) and colour inversion of (square, shape).
A feature whose class holds its own colour inversion is *neutral* (e.g. an empty square) and is dropped.
An inverted member of a class uses the class weight with sign -1 (negative weight sharing).

The tables are built once per (board size, ks) in numpy (``shape_tables``) and packed in ONE int64 array
``tab`` that the kernels read (a float64 copy works too: every entry is a small integer). Layout (header
indices below): the regions' size k and table base, for every point the regions covering it with the
power ``3**c`` of its cell, and the two signed lookup tables: entry 0 = neutral, +(j + 1) / -(j + 1) =
weight j with sign +1 / -1. The weight vector is ``[LI weights | LD weights]`` of length ``tab[T_NW]``.

Incremental use: ``region_ids`` counts the ids of a board from scratch; ``apply_move`` / ``revert_move``
update them after ``board.do_move`` / before ``board.undo_move`` from the move and the capture stack of
``pos``, and return the change of the linear sum ``sum(theta[active] * sign)`` so an evaluation costs only
the regions that changed.
"""

from functools import lru_cache

import numpy as np

from usi_engine.go.layout import (
    BOARD,
    BOARD_CAP,
    CAPTURE_COLOUR_SHIFT,
    CAPTURE_POINT_MASK,
    CAP_TOP,
    HIST,
    HIST_STRIDE,
    H_CAPTOP,
    H_MOVE,
    H_SIDE,
    MAX_SIZE,
    MIN_SIZE,
    PASS,
    PLY,
    point,
)
from usi_engine.jit import bare_kernel

DEFAULT_KS = (1, 2, 3)
MAX_COVER = 14  # regions covering one point: 1 + 4 + 9
# tab header
T_SIZE, T_NREG, T_NLI, T_NLD, T_NW, T_REG_K, T_REG_BASE, T_PT_N, T_PT_REG, T_PT_POW, T_REG_CELLS, T_KS = range(12)
T_LI, T_LD, T_NKS = T_KS + 1, T_KS + 2, T_KS + 3
T_HEADER = 16
_INVERT = np.array([0, 2, 1], dtype=np.int64)


def square_maps(k: int) -> np.ndarray:
    """The 8 symmetries of a k x k square as cell permutations perm[g, c] = image of cell c (c = row * k + column,
    row 0 at the bottom). Also used by usi_engine/go/patterns.py."""
    out = np.empty((8, k * k), dtype=np.int64)
    for g in range(8):
        for i in range(k):
            for j in range(k):
                x, y = _transform(g, j, i, k)
                out[g, i * k + j] = y * k + x
    return out


def _transform(g, x, y, n):
    """Symmetry g (0..7) of the n x n square applied to (x, y)."""
    if g & 4:
        x, y = y, x
    if g & 1:
        x = n - 1 - x
    if g & 2:
        y = n - 1 - y
    return x, y


def _shape_images(k):
    """img[g, s]: shape id of symmetry g of shape s; inv[s]: its colour inversion."""
    n_cells = k * k
    n_shapes = 3**n_cells
    powers = 3 ** np.arange(n_cells, dtype=np.int64)
    digits = (np.arange(n_shapes, dtype=np.int64)[:, None] // powers) % 3
    perm = square_maps(k)
    img = np.empty((8, n_shapes), dtype=np.int64)
    for g in range(8):
        img[g] = digits @ powers[perm[g]]
    inv = _INVERT[digits] @ powers
    return img, inv


def _classes(lo_plain, lo_inv):
    """Signed dense class indices from each element's smallest image under the symmetries without and with
    colour inversion: canonical = the smaller; neutral (0) when the class holds its inversion."""
    neutral = lo_plain == lo_inv
    canon = np.minimum(lo_plain, lo_inv)
    sign = np.where(lo_plain < lo_inv, 1, -1)
    uniq, dense = np.unique(canon[~neutral], return_inverse=True)
    out = np.zeros(canon.shape, dtype=np.int64)
    out[~neutral] = sign[~neutral] * (dense + 1)
    return out, len(uniq)


@lru_cache(maxsize=8)
def shape_tables(size: int, ks: tuple = DEFAULT_KS) -> np.ndarray:
    """The packed int64 table of local shape features for a size x size board (layout in the module doc)."""
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise ValueError(f"board size {size} outside {MIN_SIZE}..{MAX_SIZE}")
    ks = tuple(sorted(set(int(k) for k in ks)))
    if not ks or any(k not in (1, 2, 3) for k in ks):
        raise ValueError(f"shape sizes {ks}: expected a non-empty subset of (1, 2, 3)")
    ks = tuple(k for k in ks if k <= size)
    li_parts: list[np.ndarray] = []
    ld_parts: list[np.ndarray] = []
    reg_k: list[int] = []
    reg_anchor: list[int] = []
    reg_ld_start: list[int] = []
    n_li = 0
    li_start: dict[int, int] = {}
    for k in ks:
        img, inv = _shape_images(k)
        li, n = _classes(img.min(axis=0), img[:, inv].min(axis=0))
        li_start[k] = sum(len(p) for p in li_parts)
        li_parts.append(np.where(li > 0, li + n_li, np.where(li < 0, li - n_li, 0)))
        n_li += n
    n_ld = 0
    for k in ks:
        img, inv = _shape_images(k)
        m = size - k + 1
        n_shapes = 3 ** (k * k)
        anchors = [(x, y) for y in range(m) for x in range(m)]
        amap = np.empty((8, len(anchors)), dtype=np.int64)
        for g in range(8):
            for a, (x, y) in enumerate(anchors):
                # the square's cells map to a square whose lower-left corner is the image's minimum corner
                xs, ys = zip(*(_transform(g, x + dx, y + dy, size) for dx in (0, k - 1) for dy in (0, k - 1)))
                amap[g, a] = min(ys) * m + min(xs)
        lo_plain = lo_inv = None  # running minima over the symmetries (8 at once would be 8x the memory)
        for g in range(8):
            plain = (amap[g][:, None] * n_shapes + img[g][None, :]).ravel()
            inverted = (amap[g][:, None] * n_shapes + img[g][inv][None, :]).ravel()
            lo_plain = plain if lo_plain is None else np.minimum(lo_plain, plain)
            lo_inv = inverted if lo_inv is None else np.minimum(lo_inv, inverted)
        ld, n = _classes(lo_plain, lo_inv)
        ld_parts.append(np.where(ld > 0, ld + n_ld, np.where(ld < 0, ld - n_ld, 0)))
        n_ld += n
        for a, (x, y) in enumerate(anchors):
            reg_k.append(k)
            reg_anchor.append(point(size, x, y))
            reg_ld_start.append(a * n_shapes)
    n_reg = len(reg_k)
    li_tab = np.concatenate(li_parts)
    ld_tab = np.concatenate(ld_parts)
    ld_tab = np.where(ld_tab > 0, ld_tab + n_li, np.where(ld_tab < 0, ld_tab - n_li, 0))  # LD after LI
    pt_n = np.zeros(BOARD_CAP, dtype=np.int64)
    pt_reg = np.zeros((BOARD_CAP, MAX_COVER), dtype=np.int64)
    pt_pow = np.zeros((BOARD_CAP, MAX_COVER), dtype=np.int64)
    reg_cells = np.zeros((n_reg, 9), dtype=np.int64)
    reg_base = np.zeros((n_reg, 2), dtype=np.int64)  # [LI table start, LD table start] of each region
    w = size + 1
    ld_offset = 0
    for k in ks:
        first = reg_k.index(k)
        count = (size - k + 1) ** 2
        for r in range(first, first + count):
            reg_base[r] = (li_start[k], ld_offset + reg_ld_start[r])
            for i in range(k):
                for j in range(k):
                    p = reg_anchor[r] + i * w + j
                    reg_cells[r, i * k + j] = p
                    pt_reg[p, pt_n[p]] = r
                    pt_pow[p, pt_n[p]] = 3 ** (i * k + j)
                    pt_n[p] += 1
        ld_offset += count * 3 ** (k * k)
    blocks = [
        np.asarray(reg_k, dtype=np.int64),
        reg_base.ravel(),
        pt_n,
        pt_reg.ravel(),
        pt_pow.ravel(),
        reg_cells.ravel(),
        np.asarray(ks, dtype=np.int64),
    ]
    header = np.zeros(T_HEADER, dtype=np.int64)
    header[:5] = size, n_reg, n_li, n_ld, n_li + n_ld
    offset = T_HEADER
    for h, block in zip(range(T_REG_K, T_KS + 1), blocks):
        header[h] = offset
        offset += len(block)
    header[T_LI] = offset  # LI table
    header[T_LD] = offset + len(li_tab)  # LD table
    header[T_NKS] = len(ks)
    tab = np.concatenate([header] + blocks + [li_tab, ld_tab])
    tab.setflags(write=False)
    return tab


def n_weights(tab) -> int:
    """Length of the weight vector [LI | LD] of a table."""
    return int(tab[T_NW])


def table_ks(tab) -> tuple:
    """The square sizes of a table."""
    start = int(tab[T_KS])
    return tuple(int(k) for k in tab[start : start + int(tab[T_NKS])])


@bare_kernel
def _entry(tab, r, shape_id, which):
    """Signed table entry of region r's shape: which 0 = LI, 1 = LD."""
    base = int(tab[int(tab[T_REG_BASE]) + 2 * r + which])
    table = int(tab[T_LI + which])
    return int(tab[table + base + shape_id])


@bare_kernel
def _signed(theta, e):
    """theta[weight] * sign of a signed table entry e (0 = neutral feature)."""
    if e > 0:
        return theta[e - 1]
    if e < 0:
        return -theta[-e - 1]
    return 0.0


@bare_kernel
def region_value(tab, theta, r, shape_id):
    """Contribution of region r with the given shape to the linear sum (both weight-sharing kinds)."""
    if theta.shape[0] == 0:
        return 0.0
    return _signed(theta, _entry(tab, r, shape_id, 0)) + _signed(theta, _entry(tab, r, shape_id, 1))


@bare_kernel
def region_ids(tab, board, ids):
    """ids[r] = shape id of every region of the padded board (from scratch; the reference for the incremental
    update)."""
    n_reg = int(tab[T_NREG])
    cells = int(tab[T_REG_CELLS])
    kstart = int(tab[T_REG_K])
    for r in range(n_reg):
        k = int(tab[kstart + r])
        s = 0
        mult = 1
        for c in range(k * k):
            s += board[int(tab[cells + 9 * r + c])] * mult
            mult *= 3
        ids[r] = s


@bare_kernel
def linear_sum(tab, theta, ids):
    """sum over active features of theta[weight] * sign (the logit of V)."""
    total = 0.0
    for r in range(int(tab[T_NREG])):
        total += region_value(tab, theta, r, ids[r])
    return total


@bare_kernel
def change_point(tab, theta, ids, p, dcolour):
    """Add dcolour (+c: a stone of colour c appears at p; -c: it disappears) to every region covering p;
    returns the change of linear_sum(tab, theta, ids)."""
    n = int(tab[int(tab[T_PT_N]) + p])
    regs = int(tab[T_PT_REG]) + p * MAX_COVER
    pows = int(tab[T_PT_POW]) + p * MAX_COVER
    delta = 0.0
    for j in range(n):
        r = int(tab[regs + j])
        old = ids[r]
        new = old + dcolour * int(tab[pows + j])
        delta += region_value(tab, theta, r, new) - region_value(tab, theta, r, old)
        ids[r] = new
    return delta


@bare_kernel
def apply_move(pos, tab, theta, ids):
    """Update ids for the move board.do_move just made (stone placed, captured stones lifted); returns the
    change of the linear sum."""
    e = HIST + HIST_STRIDE * (pos[PLY] - 1)
    move = pos[e + H_MOVE]
    if move == PASS:
        return 0.0
    side = pos[e + H_SIDE]  # the mover
    delta = change_point(tab, theta, ids, move, side)
    for i in range(pos[e + H_CAPTOP], pos[CAP_TOP]):
        entry = pos[i]
        delta += change_point(tab, theta, ids, entry & CAPTURE_POINT_MASK, -(entry >> CAPTURE_COLOUR_SHIFT))
    return delta


@bare_kernel
def revert_move(pos, tab, theta, ids):
    """Undo apply_move for the last move of pos; call BEFORE board.undo_move. Returns the sum's change."""
    e = HIST + HIST_STRIDE * (pos[PLY] - 1)
    move = pos[e + H_MOVE]
    if move == PASS:
        return 0.0
    delta = 0.0
    for i in range(pos[CAP_TOP] - 1, pos[e + H_CAPTOP] - 1, -1):
        entry = pos[i]
        delta += change_point(tab, theta, ids, entry & CAPTURE_POINT_MASK, entry >> CAPTURE_COLOUR_SHIFT)
    delta += change_point(tab, theta, ids, move, -pos[e + H_SIDE])
    return delta


@bare_kernel
def active_count(tab, ids):
    """Number of active non-neutral features, |phi|^2 (every feature is 0 or +-1)."""
    n = 0
    for r in range(int(tab[T_NREG])):
        for which in range(2):
            if _entry(tab, r, ids[r], which) != 0:
                n += 1
    return n


@bare_kernel
def add_gradient(tab, theta, ids, step):
    """theta[weight] += step * sign for every active feature (a shared weight active k times moves k times)."""
    for r in range(int(tab[T_NREG])):
        for which in range(2):
            e = _entry(tab, r, ids[r], which)
            if e > 0:
                theta[e - 1] += step
            elif e < 0:
                theta[-e - 1] -= step


def board_ids(pos: np.ndarray, tab: np.ndarray) -> np.ndarray:
    """Shape ids of every region of pos (a fresh array)."""
    ids = np.zeros(int(tab[T_NREG]), dtype=np.int64)
    region_ids(tab, pos[BOARD : BOARD + BOARD_CAP], ids)
    return ids
