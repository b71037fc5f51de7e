"""MCSS engine: Monte-Carlo Softmax Search for shogi (USI) and Go (GTP)."""

__version__ = "0.1.0"
