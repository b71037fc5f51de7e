"""`Board`: the typed Python API over the numba rules core.

Tests, tools, the protocol layer and learn/ use this; search code works on ``board.pos`` directly.
"""

from __future__ import annotations

import numpy as np

from . import movegen, position
from .layout import HIST, HIST_STRIDE, MAX_MOVES, MOVE_NUMBER, PLY, SIDE, pos_size
from .sfen import STARTPOS, format_sfen, move_to_usi, parse_sfen, usi_to_move

REPETITION_NAMES = {
    position.REP_NONE: "none",
    position.REP_DRAW: "draw",
    position.REP_WIN: "win",
    position.REP_LOSS: "loss",
}
DECLARATION_RULES = {
    "NoEnteringKing": position.RULE_NONE,
    "CSARule27": position.RULE_CSA27,
    "CSARule24": position.RULE_CSA24,
    "TryRule": position.RULE_TRY,
}
GAME_REPETITIONS = 4  # sennichite: the fourth occurrence of a position


def declaration_rule_code(rule: str) -> int:
    """Kernel code of an EnteringKingRule name; ValueError for an unknown name."""
    try:
        return DECLARATION_RULES[rule]
    except KeyError:
        raise ValueError(
            f"unknown entering-king rule {rule!r}; expected one of {', '.join(DECLARATION_RULES)}"
        ) from None


class Board:
    """A shogi position with its game history (for repetition) and legal-move API in USI notation."""

    def __init__(self, sfen: str | None = None):
        self.pos = parse_sfen(STARTPOS if sfen is None else sfen)
        self._moves = np.zeros(MAX_MOVES, dtype=np.int32)

    def copy(self) -> "Board":
        return Board.from_pos(self.pos)

    @staticmethod
    def from_pos(pos: np.ndarray) -> "Board":
        """A board over a copy of the position array `pos` (history included)."""
        other = Board.__new__(Board)
        other.pos = pos.copy()
        other._moves = np.zeros(MAX_MOVES, dtype=np.int32)
        return other

    # --- text --------------------------------------------------------------------------------
    def sfen(self) -> str:
        return format_sfen(self.pos)

    def __str__(self) -> str:
        return self.sfen()

    @property
    def turn(self) -> int:
        """0 when Black (sente) is to move, 1 for White."""
        return int(self.pos[SIDE])

    @property
    def ply(self) -> int:
        """Moves played since the SFEN the board was created from."""
        return int(self.pos[PLY])

    @property
    def move_number(self) -> int:
        """The SFEN move counter of the current position (1 at the start of a game)."""
        return int(self.pos[MOVE_NUMBER] + self.pos[PLY])

    # --- moves -------------------------------------------------------------------------------
    def legal_move_codes(self) -> np.ndarray:
        """Legal moves as packed int32 codes (a fresh array)."""
        n = movegen.gen_legal(self.pos, self._moves)
        return self._moves[:n].copy()

    def legal_moves(self) -> list[str]:
        return [move_to_usi(m) for m in self.legal_move_codes()]

    def is_legal(self, usi: str) -> bool:
        try:
            move = usi_to_move(usi)
        except ValueError:
            return False
        return bool(np.any(self.legal_move_codes() == move))

    def push_usi(self, usi: str) -> None:
        """Play a move given in USI; ValueError (board unchanged) if it is malformed or illegal."""
        move = usi_to_move(usi)
        if not np.any(self.legal_move_codes() == move):
            raise ValueError(f"illegal move {usi!r} in position {self.sfen()}")
        self.push_code(move)

    def push_code(self, move: int) -> None:
        """Play a packed move that the caller knows is legal."""
        if HIST + HIST_STRIDE * (int(self.pos[PLY]) + 2) > self.pos.shape[0]:
            self._grow_history()
        position.do_move(self.pos, np.int32(move))  # int32, the search's move type: one compiled do_move

    def pop(self) -> None:
        """Take back the last move; IndexError if the board is at its starting position."""
        if self.pos[PLY] == 0:
            raise IndexError("no move to take back")
        position.undo_move(self.pos)

    def move_history(self) -> list[str]:
        return [move_to_usi(self.pos[HIST + HIST_STRIDE * i + 1]) for i in range(self.ply)]

    def _grow_history(self) -> None:
        capacity = 2 * ((self.pos.shape[0] - HIST) // HIST_STRIDE)
        grown = np.zeros(pos_size(capacity), dtype=np.int64)
        grown[: self.pos.shape[0]] = self.pos
        self.pos = grown

    # --- state -------------------------------------------------------------------------------
    def is_check(self) -> bool:
        return bool(position.in_check(self.pos))

    def is_checkmate(self) -> bool:
        return bool(movegen.is_checkmate(self.pos, self._moves))

    def key(self) -> int:
        """64-bit Zobrist key of the position (board, hands, side to move)."""
        return int(self.pos[position.KEY])

    def repetition(self, occurrences: int = GAME_REPETITIONS) -> str:
        """'none' | 'draw' | 'win' | 'loss' for the side to move under the repetition rule.

        With the default 4 this is sennichite: the fourth occurrence is a draw unless one side
        checked with every move of the cycle, in which case that side loses."""
        return REPETITION_NAMES[position.repetition(self.pos, occurrences)]

    def declaration(self, rule: str = "CSARule27") -> bool:
        """Whether the side to move wins by declaring (entering king) under `rule`."""
        return self.declaration_result(rule) == "win"

    def declaration_result(self, rule: str = "CSARule27") -> str:
        """'win', 'draw' (24-point rule, 24-30 points) or 'none' for a declaration now."""
        result = position.declaration(self.pos, declaration_rule_code(rule))
        return {position.DECL_WIN: "win", position.DECL_DRAW: "draw"}.get(result, "none")

    def declaration_points(self) -> tuple[int, int]:
        """(points, pieces in the enemy camp) of the side to move, as counted for declarations."""
        points, pieces = position.declaration_count(self.pos, self.pos[SIDE])
        return int(points), int(pieces)

    def try_rule_move(self) -> str | None:
        """The winning king move to the opponent's king square under the try rule, if legal now."""
        move = position.try_rule_move(self.pos)
        return move_to_usi(move) if move else None

    def perft(self, depth: int, bulk: bool = False) -> int:
        """Number of leaves of the legal-move tree of `depth` plies (make/unmake of every move;
        `bulk` counts the last ply from the generator)."""
        if depth < 0:
            raise ValueError("perft depth must be >= 0")
        work = self.copy()
        while HIST + HIST_STRIDE * (work.ply + depth + 2) > work.pos.shape[0]:
            work._grow_history()
        return int(movegen.perft(work.pos, depth, movegen.perft_buffers(depth), bulk))


def warm_up() -> None:
    """Compile (or load from numba's cache) the rules kernels the engine uses, so later calls are fast (perft,
    a benchmark, compiles at its own first call)."""
    board = Board()
    board.push_usi(board.legal_moves()[0])
    board.pop()
    board.is_check()
    board.is_checkmate()
    board.repetition()
    board.declaration("CSARule27")
    board.declaration_points()
    board.try_rule_move()
