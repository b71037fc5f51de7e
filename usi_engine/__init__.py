"""MCSS engine: Monte-Carlo Softmax Search for shogi (USI) and Go (GTP)."""

from . import numba_cache

numba_cache.configure()  # before anything imports numba

__version__ = "0.1.0"
