"""A synthetic game implementing the game-kernel contract, for testing and benchmarking the search core.

Positions are defined by hashing (splitmix64), so every tree is deterministic and reproducible:
- MODE_TREE:     key = hash(parent key, move): no transpositions.
- MODE_MULTISET: key = hash(multiset of moves made, ply): different move orders transpose.
- MODE_RING:     the position is (sum of moves mod ring size, side to move): positions repeat; a child equal
                 to any earlier position of the game history or the current path is a repetition terminal
                 (value DRAW from its side to move) - a path-dependent terminal, as in shogi or Go.
- MODE_EXPLICIT: a small explicit graph given as a node table (tests: mates, exact values).
In TREE and MULTISET modes a position at ply >= term_depth (from the start position) is terminal, and any
other non-start position is terminal with probability term_permille/1000; a terminal's value is -MATE
(mated), 0 (draw) or +MATE (won) by its hash, or (mate_ends=False) its ordinary static value.
Moves are 1..b with b in [bmin, bmax] by the key.
Static values are uniform integers in [-value_range, value_range]; leaf_cost adds that many hash rounds per
evaluated child to emulate a quiescence search.

pos layout (int64): header P_*; history from HIST, stride 3 per position i = 0..P_LEN: key, aux (tree:
unused, multiset: running hash sum, ring: ring position, explicit: node id), move made from position i;
the explicit table (if any) starts at P_TABLE: per node 4 words (first child slot, child count, value,
flags), then the child-id list. `params` and `weights` are unused.
"""

import sys

import numpy as np
from numba import njit

from usi_engine.search.jobs import J_STRIDE, child_done, claim_child, close_job, open_job
from usi_engine.search.rng import mix64
from usi_engine.search.values import MATE

MODE_TREE, MODE_MULTISET, MODE_RING, MODE_EXPLICIT = 0, 1, 2, 3
P_MODE, P_SEED, P_BMIN, P_BMAX, P_TERM_DEPTH, P_TERM_PERMILLE = 0, 1, 2, 3, 4, 5
P_LEAF_COST, P_VALUE_RANGE, P_RING, P_LEN, P_CAP, P_TABLE, P_DRAW, P_END_STATIC = 6, 7, 8, 9, 10, 11, 12, 13
HIST = 16
STRIDE = 3
H_KEY, H_AUX, H_MOVE = 0, 1, 2
TERMINAL = 1
SALT_BRANCH = np.uint64(0x5851F42D4C957F2D)
SALT_TERMINAL = np.uint64(0x14057B7EF767814F)
SALT_OUTCOME = np.uint64(0x2545F4914F6CDD1D)
SALT_VALUE = np.uint64(0x27BB2EE687B0B0FD)
SALT_MOVE = np.uint64(0x9FB21C651E98DF25)
SALT_PRIOR = np.uint64(0x7A3B9C1D5E2F4861)


@njit(cache=True, nogil=True)
def _h(pos, i, field):
    return HIST + STRIDE * i + field


@njit(cache=True, nogil=True)
def _hash(a, salt):
    return mix64(np.uint64(a) ^ salt)


@njit(cache=True, nogil=True)
def pos_key(pos):
    """Key of the current position."""
    return pos[_h(pos, pos[P_LEN], H_KEY)]


@njit(cache=True, nogil=True)
def _is_game_end(pos):
    """Terminal by the game's rules (not repetition): depth reached, random early end, explicit flag."""
    ln = pos[P_LEN]
    if pos[P_MODE] == MODE_EXPLICIT:
        return pos[pos[P_TABLE] + 4 * pos[_h(pos, ln, H_AUX)] + 3] & TERMINAL != 0
    if pos[P_MODE] == MODE_RING:
        return False
    if ln >= pos[P_TERM_DEPTH]:
        return True
    return ln > 0 and np.int64(_hash(pos_key(pos), SALT_TERMINAL) % np.uint64(1000)) < pos[P_TERM_PERMILLE]


@njit(cache=True, nogil=True)
def _end_value(pos):
    if pos[P_MODE] == MODE_EXPLICIT:
        return float(pos[pos[P_TABLE] + 4 * pos[_h(pos, pos[P_LEN], H_AUX)] + 2])
    if pos[P_END_STATIC]:
        return _static_value(pos)
    outcome = np.int64(_hash(pos_key(pos), SALT_OUTCOME) % np.uint64(3))
    return (float(outcome) - 1.0) * MATE


@njit(cache=True, nogil=True)
def gen_moves(pos, out_moves):
    """Legal moves of the side to move (none at a game end)."""
    if _is_game_end(pos):
        return 0
    if pos[P_MODE] == MODE_EXPLICIT:
        t = pos[P_TABLE]
        node = pos[_h(pos, pos[P_LEN], H_AUX)]
        first = pos[t + 4 * node]
        n = pos[t + 4 * node + 1]
        for i in range(n):
            out_moves[i] = pos[first + i]
        return n
    span = pos[P_BMAX] - pos[P_BMIN] + 1
    n = pos[P_BMIN] + np.int64(_hash(pos_key(pos), SALT_BRANCH) % np.uint64(span))
    for i in range(n):
        out_moves[i] = i + 1
    return n


@njit(cache=True, nogil=True)
def do_move(pos, move):
    """Play `move` (no legality check): append the new position to the history."""
    ln = pos[P_LEN]
    if ln + 1 >= pos[P_CAP]:
        raise ValueError("synthetic pos history is full")
    mode = pos[P_MODE]
    seed = np.uint64(pos[P_SEED])
    key = np.uint64(pos[_h(pos, ln, H_KEY)])
    aux = pos[_h(pos, ln, H_AUX)]
    if mode == MODE_TREE:
        key = mix64(key ^ _hash(move, SALT_MOVE ^ seed))
    elif mode == MODE_MULTISET:
        aux = np.int64(np.uint64(aux) + _hash(move, SALT_MOVE ^ seed))
        key = mix64(np.uint64(aux) ^ seed ^ np.uint64((ln + 1) * 0x632BE59BD9B4E019))
    elif mode == MODE_RING:
        aux = (aux + move) % pos[P_RING]
        key = mix64(seed ^ np.uint64(2 * aux + (ln + 1) % 2))
    else:
        aux = np.int64(move)
        key = mix64(seed ^ np.uint64(aux + 1))
    pos[_h(pos, ln, H_MOVE)] = move
    pos[_h(pos, ln + 1, H_KEY)] = np.int64(key)
    pos[_h(pos, ln + 1, H_AUX)] = aux
    pos[P_LEN] = ln + 1


@njit(cache=True, nogil=True)
def undo_move(pos):
    """Revert the last do_move."""
    pos[P_LEN] -= 1


@njit(cache=True, nogil=True)
def _is_repetition(pos):
    """Ring mode: the current position occurred earlier in the history (game moves + search path)."""
    if pos[P_MODE] != MODE_RING:
        return False
    key = pos_key(pos)
    for i in range(pos[P_LEN]):
        if pos[_h(pos, i, H_KEY)] == key:
            return True
    return False


@njit(cache=True, nogil=True)
def _static_value(pos):
    if pos[P_MODE] == MODE_EXPLICIT:
        return float(pos[pos[P_TABLE] + 4 * pos[_h(pos, pos[P_LEN], H_AUX)] + 2])
    z = _hash(pos_key(pos), SALT_VALUE)
    for _ in range(pos[P_LEAF_COST]):
        z = mix64(z)
    span = np.uint64(2 * pos[P_VALUE_RANGE] + 1)
    return float(np.int64(z % span) - pos[P_VALUE_RANGE])


@njit(cache=True, nogil=True)
def expand(pos, weights, params, rng, out_moves, out_values, out_flags):
    """Every legal move with its child's value from the child's side to move; TERMINAL marks game ends and
    repetitions. Returns (children, positions evaluated): one thread's run of expand_children."""
    n = gen_moves(pos, out_moves)
    job = np.zeros(J_STRIDE, dtype=np.int64)
    open_job(job, 0, 0, n)
    expand_children(pos, weights, params, out_moves, out_values, out_flags, job, 0, 0)
    return n, close_job(job, 0, n)


@njit(cache=True, nogil=True)
def expand_children(pos, weights, params, moves, out_values, out_flags, job, base, node):
    """The children of pos (= `node`) this thread claims from the job at job[base:] (core claim_child),
    valued into out_values/out_flags at their indices, each reported with its work (one position); returns
    the number of children evaluated."""
    done = 0
    while True:
        i = claim_child(job, base, node)
        if i < 0:
            break
        out_values[i], out_flags[i], _ = child_value(pos, weights, params, moves[i], 0.0)
        child_done(job, base, 1)
        done += 1
    return done


@njit(cache=True, nogil=True)
def child_value(pos, weights, params, move, best):
    """(value from the child's side to move, flags, positions evaluated) of the child after `move` (its parent's
    value `best` unused): the value every expansion gives it (game ends and repetitions TERMINAL with their
    exact value, else static)."""
    do_move(pos, move)
    if _is_game_end(pos):
        value, flags = _end_value(pos), TERMINAL
    elif _is_repetition(pos):
        value, flags = float(pos[P_DRAW]), TERMINAL
    else:
        value, flags = _static_value(pos), 0
    undo_move(pos)
    return value, np.int8(flags), 1


@njit(cache=True, nogil=True)
def order_children(pos, weights, params, moves, n, k0, logp):
    """Progressive widening's move order: the moves sorted by a hashed prior of (position, move) (a stand-in
    for a learned move probability, independent of the child values); the first k0 enter at expansion.
    logp: log p of a softmax over the hashed scores (in [0, 2)), in the final order.
    k0 >= n: every move enters, in generation order (the tree of a search without widening)."""
    prior = np.empty(n, np.float64)
    key = np.uint64(pos_key(pos))
    for i in range(n):
        prior[i] = -2.0 * float(_hash(np.int64(key ^ np.uint64(moves[i])), SALT_PRIOR) >> np.uint64(11)) / 2.0**53
    total = 0.0
    for i in range(n):
        total += np.exp(-prior[i])
    if k0 >= n:
        for i in range(n):
            logp[i] = -prior[i] - np.log(total)
        return n
    order = np.argsort(prior, kind='mergesort')
    moves[:n] = moves[:n][order]
    for i in range(n):
        logp[i] = -prior[order[i]] - np.log(total)
    return k0


@njit(cache=True, nogil=True)
def root_status(pos, params):
    """(is the current position over, its exact value from the side to move)."""
    if _is_game_end(pos):
        return True, _end_value(pos)
    return False, 0.0


# --- Python-side construction -------------------------------------------------------------------


def _as_int64(u):
    """The int64 with the bits of the uint64 `u`."""
    return np.array([u], dtype=np.uint64).view(np.int64)[0]


def make_pos(
    mode=MODE_TREE,
    seed=1,
    bmin=2,
    bmax=4,
    term_depth=6,
    term_permille=0,
    leaf_cost=0,
    value_range=1000,
    ring=16,
    draw=0,
    mate_ends=True,
    capacity=512,
):
    """Start position of a hashed synthetic game (see module docstring for the parameters)."""
    if not (1 <= bmin <= bmax) or mode not in (MODE_TREE, MODE_MULTISET, MODE_RING):
        raise ValueError("bad synthetic game parameters")
    pos = np.zeros(HIST + STRIDE * capacity, dtype=np.int64)
    pos[
        [
            P_MODE,
            P_SEED,
            P_BMIN,
            P_BMAX,
            P_TERM_DEPTH,
            P_TERM_PERMILLE,
            P_LEAF_COST,
            P_VALUE_RANGE,
            P_RING,
            P_CAP,
            P_DRAW,
            P_END_STATIC,
        ]
    ] = [mode, seed, bmin, bmax, term_depth, term_permille, leaf_cost, value_range, ring, capacity, draw, not mate_ends]
    # the ring's start is ring position 0 with the first player to move, keyed like every ring position
    start = np.uint64(0) if mode == MODE_RING else np.uint64(0xA0761D6478BD642F)
    pos[HIST + H_KEY] = _as_int64(mix64(np.uint64(seed) ^ start))
    return pos


def explicit_pos(nodes, seed=7, capacity=64):
    """Start position of an explicit game graph. `nodes[j] = (value, terminal, [child ids])`, node 0 is the
    start; a move is the id of the node it leads to; `value` is the node's static (or, if terminal, exact)
    value from its side to move. Two parents naming the same child make a transposition."""
    head = HIST + STRIDE * capacity
    table_len = 4 * len(nodes) + sum(len(ch) for _, _, ch in nodes)
    pos = np.zeros(head + table_len, dtype=np.int64)
    pos[[P_MODE, P_SEED, P_CAP, P_TABLE]] = [MODE_EXPLICIT, seed, capacity, head]
    slot = head + 4 * len(nodes)
    for j, (value, terminal, children) in enumerate(nodes):
        if any(not 0 < c < len(nodes) for c in children):
            raise ValueError(f"node {j}: child ids must be in 1..{len(nodes) - 1}")
        pos[head + 4 * j : head + 4 * j + 4] = [slot, len(children), int(value), TERMINAL if terminal else 0]
        pos[slot : slot + len(children)] = children
        slot += len(children)
    pos[HIST + H_KEY] = _as_int64(mix64(np.uint64(seed) ^ np.uint64(1)))
    return pos


class SyntheticAdapter:
    """Python-side game adapter used by the Searcher (the same shape the shogi and Go adapters provide)."""

    game = sys.modules[__name__]  # this module: the kernels the core calls (search/dispatch.py)

    def __init__(self, max_moves=64):
        self.max_moves = max_moves
        self.weights = np.zeros(1, dtype=np.float64)
        self.params = np.zeros(1, dtype=np.float64)

    def copy(self, pos):
        return pos.copy()

    def move_to_str(self, move):
        return f"m{int(move)}"

    def max_depth(self, pos):
        """Plies the history of `pos` can still hold."""
        return int(pos[P_CAP] - pos[P_LEN] - 2)

    def path_since(self, old, new):
        """Moves leading from position `old` to `new` when `new` continues the same game, else None."""
        lo, ln = int(old[P_LEN]), int(new[P_LEN])
        if ln < lo or old[HIST + H_KEY] != new[HIST + H_KEY] or np.any(old[:P_LEN] != new[:P_LEN]):
            return None
        moves_old = old[HIST + H_MOVE : HIST + STRIDE * lo : STRIDE]
        moves_new = new[HIST + H_MOVE : HIST + STRIDE * ln : STRIDE]
        if np.any(moves_old != moves_new[:lo]):
            return None
        return [int(m) for m in moves_new[lo:]]
