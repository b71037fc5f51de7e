"""Go's side of the game-kernel contract (common brief): the kernels the shared search core calls.

``gen_moves``, ``do_move``, ``undo_move``, ``pos_key`` come from usi_engine/go/board.py; this module
adds ``expand`` and ``root_status``.

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
``weights`` is unused by the playout leaf (reserved for the seed-004 local-shape evaluator).
"""

import numpy as np
from numba import njit

from usi_engine.go.board import area_score, do_move, game_over, gen_moves, pos_key, undo_move
from usi_engine.go.layout import BOARD_CAP, SIDE, SIZE, BLACK
from usi_engine.go.playout import DEFAULT_CAP_FACTOR, WS_ROWS, run_playouts
from usi_engine.search.values import MATE

P_PLAYOUTS, P_VALUE_SCALE, P_CAP_FACTOR = 0, 1, 2
N_PARAMS = 3
DEFAULT_VALUE_SCALE = 1000.0
TERMINAL = 1
MAX_MOVES = BOARD_CAP + 1   # out_moves capacity that is always enough (all points + pass)

__all__ = ["gen_moves", "do_move", "undo_move", "pos_key", "expand", "root_status",
           "default_params", "MAX_MOVES"]


def default_params(playouts: int = 1, value_scale: float = DEFAULT_VALUE_SCALE,
                   cap_factor: float = DEFAULT_CAP_FACTOR) -> np.ndarray:
    """The params array for expand/root_status."""
    params = np.zeros(N_PARAMS, dtype=np.float64)
    params[P_PLAYOUTS], params[P_VALUE_SCALE], params[P_CAP_FACTOR] = playouts, value_scale, cap_factor
    return params


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
def root_status(pos, params):
    """(is_terminal, exact value from the side to move) of pos itself."""
    if game_over(pos):
        return True, _terminal_value(pos)
    return False, 0.0


@njit(cache=True, nogil=True)
def expand(pos, weights, params, rng, out_moves, out_values, out_flags):
    """All legal moves of pos; each child's value = mean of K playouts from the child (its side to
    move's view, scale above), or its exact value when the child ends the game. pos is unchanged.
    Returns (n_children, playout moves played)."""
    n = gen_moves(pos, out_moves)
    k = max(1, int(params[P_PLAYOUTS]))
    scale = params[P_VALUE_SCALE]
    cap = max(1, int(params[P_CAP_FACTOR] * pos[SIZE] * pos[SIZE]))
    ws = np.empty((WS_ROWS, BOARD_CAP), np.int64)
    none = np.empty(0, np.float64)
    work = 0
    for i in range(n):
        do_move(pos, out_moves[i])
        if game_over(pos):
            out_values[i] = _terminal_value(pos)
            out_flags[i] = TERMINAL
        else:
            black_wins, moves, _ = run_playouts(pos, ws, rng, k, cap, none, none)
            p = black_wins / k
            if pos[SIDE] != BLACK:
                p = 1.0 - p
            out_values[i] = scale * (2.0 * p - 1.0)
            out_flags[i] = 0
            work += moves
        undo_move(pos)
    return n, work
