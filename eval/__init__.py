"""Evaluation functions (shogi features, Go shape features) and their weight files."""
