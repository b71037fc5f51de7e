"""Shogi rules core: numba kernels over a position array, and the `Board` Python API."""

from .board import Board
from .sfen import STARTPOS, move_to_usi, usi_to_move

__all__ = ["Board", "STARTPOS", "move_to_usi", "usi_to_move"]
