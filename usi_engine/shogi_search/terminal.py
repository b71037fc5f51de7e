"""Terminal positions of the shogi search: the rules that end a game on the move just played, as values
for the side to move (game.py's docstring lists them in the order they are checked)."""

import numpy as np

from usi_engine.jit import bare_kernel
from usi_engine.search.values import MATE
from usi_engine.shogi.layout import HIST, HIST_STRIDE, H_CHECK, PLY, SIDE
from usi_engine.shogi.movegen import gen_legal
from usi_engine.shogi.position import (
    DECL_DRAW,
    DECL_WIN,
    REP_LOSS,
    REP_NONE,
    REP_WIN,
    RULE_TRY,
    declaration,
    game_length,
    repetition,
    try_reached,
)

from .params import P_DRAW_FOR_BLACK, P_ENTERING_RULE, P_MAX_MOVES, P_REPETITIONS


@bare_kernel
def draw_value(pos, params):
    """A draw's value for the side to move at pos."""
    return params[P_DRAW_FOR_BLACK] if pos[SIDE] == 0 else -params[P_DRAW_FOR_BLACK]


@bare_kernel
def terminal_value(pos, params, scratch):
    """(is_terminal, value for the side to move) of the position just reached by a move."""
    rep = repetition(pos, np.int64(params[P_REPETITIONS]))
    if rep != REP_NONE:
        if rep == REP_WIN:
            return True, MATE
        if rep == REP_LOSS:
            return True, -MATE
        return True, draw_value(pos, params)
    if pos[HIST + HIST_STRIDE * pos[PLY] + H_CHECK] != 0 and gen_legal(pos, scratch) == 0:
        return True, -MATE
    rule = np.int64(params[P_ENTERING_RULE])
    if rule == RULE_TRY and try_reached(pos):
        return True, -MATE
    decl = declaration(pos, rule)
    if decl == DECL_WIN:
        return True, MATE
    if decl == DECL_DRAW:
        return True, draw_value(pos, params)
    max_moves = np.int64(params[P_MAX_MOVES])
    if max_moves > 0 and game_length(pos) >= max_moves:
        return True, draw_value(pos, params)
    return False, 0.0
