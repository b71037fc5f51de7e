"""The params array of the shogi search kernels: its layout (P_* indices), `make_params` and the quiescence
settings read from it. The expansion modes and the deep leaf are described in game.py's docstring."""

import numpy as np

from usi_engine.jit import bare_kernel
from usi_engine.shogi.position import RULE_CSA27

from .quiescence import DEFAULT_MAX_DEPTH

P_QDEPTH, P_DRAW_FOR_BLACK, P_REPETITIONS, P_ENTERING_RULE, P_MAX_MOVES, P_EXPANSION, P_MATE_PROBE = 0, 1, 2, 3, 4, 5, 6
P_WINDOW, P_THREAT_PROBE, P_QSEE, P_QDELTA, P_QRECAPTURE, P_PP_ZERO, P_LEAF_DEPTH = 7, 8, 9, 10, 11, 12, 13
N_PARAMS = 14
EXPANSIONS = {"exact": 0, "lazy": 1, "window": 2}  # P_EXPANSION codes (game.py docstring)
EXPANSION_LAZY, EXPANSION_WINDOW = 1, 2
DEFAULT_WINDOW = 250.0
MAX_AB_DEPTH = 2  # the deepest leaf_depth (alphabeta.py)


def make_params(
    qsearch_depth=DEFAULT_MAX_DEPTH,
    draw_for_black=0.0,
    repetitions=2,
    entering_rule=RULE_CSA27,
    max_moves=0,
    expansion="exact",
    mate_probe=False,
    window=DEFAULT_WINDOW,
    threat_probe=False,
    qsearch_see=False,
    qsearch_delta=0.0,
    qsearch_recapture=0,
    leaf_depth=0,
):
    """The params array `expand` reads: expansion mode exact / lazy / window (game.py's docstring), window in cp,
    mate_probe: mated_in_two on every checking child, threat_probe: mate_in_one on every other child,
    qsearch_see: SEE pruning in the quiescence search, qsearch_delta: its delta-pruning margin in cp, 0 = off,
    qsearch_recapture: the quiescence ply from which only recaptures are searched, 0 = off (quiescence.py),
    leaf_depth: plies of full-width alpha-beta that value a child when a sample first reaches it, 0 = off
    (game.py's docstring, the deep leaf)."""
    if expansion not in EXPANSIONS:
        raise ValueError(f"unknown expansion {expansion!r}; use one of {', '.join(EXPANSIONS)}")
    if not 0 <= leaf_depth <= MAX_AB_DEPTH:
        raise ValueError(f"leaf depth must be 0 .. {MAX_AB_DEPTH}, got {leaf_depth}")
    params = np.zeros(N_PARAMS, dtype=np.float64)
    params[P_QDEPTH] = qsearch_depth
    params[P_DRAW_FOR_BLACK] = draw_for_black
    params[P_REPETITIONS] = repetitions
    params[P_ENTERING_RULE] = entering_rule
    params[P_MAX_MOVES] = max_moves
    params[P_EXPANSION] = EXPANSIONS[expansion]
    params[P_WINDOW] = window
    params[P_MATE_PROBE] = 1.0 if mate_probe else 0.0
    params[P_THREAT_PROBE] = 1.0 if threat_probe else 0.0
    params[P_QSEE] = 1.0 if qsearch_see else 0.0
    params[P_QDELTA] = qsearch_delta
    params[P_QRECAPTURE] = qsearch_recapture
    params[P_LEAF_DEPTH] = leaf_depth
    return params


@bare_kernel
def quiescence_settings(params):
    """(max depth, SEE pruning, delta margin, recapture ply) of the quiescence searches that value children."""
    return np.int64(params[P_QDEPTH]), params[P_QSEE] != 0.0, params[P_QDELTA], np.int64(params[P_QRECAPTURE])
