"""Stand-ins for the optional kernels of the game contract (docs/search.md, "Game kernel contract"):
samples.build_kernels calls these for a game that lacks one, so every game gets the same run_samples."""

from numba import njit


@njit(cache=True, nogil=True)
def expand_amaf(pos, weights, params, rng, out_moves, out_values, out_flags, out_prior, trace, tstart, out_counts=None):
    """Stand-in for games without playouts to report: -1 = "use the game's plain expand" (the core then
    gives every child the even prior 1/2 with the shared virtual visits, and AMAF credit comes from the tree
    moves alone)."""
    return -1, 0


@njit(cache=True, nogil=True)
def expand_children(pos, weights, params, moves, values, flags, job, base, node):
    """Stand-in for games without joint expansion (never called: their expansions go through `expand`)."""
    return 0


@njit(cache=True, nogil=True)
def finish_open(pos, weights, params, moves, values, flags, n, job, base):
    """Stand-in for games without a finishing round of the joint expansion (the synthetic game) or without
    joint expansion (never called for those): no finishing round."""
    return 0


@njit(cache=True, nogil=True)
def finish_children(pos, weights, params, moves, values, flags, job, base, tag):
    """Stand-in for games without a finishing round (never called: finish_open opens none)."""
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
def leaf_playout(pos, weights, params, rng, trace):
    """Stand-in for games without a playout from a position: tlen -1 = "none", so the core expands the leaf at
    its first visit whatever SearchOptions.expand_visits says. (value, tlen, work)."""
    return 0.0, -1, 0
