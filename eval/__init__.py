"""Evaluation functions (shogi features, Go shape features) and their weight files."""

import usi_engine  # noqa: F401  (selects the source-keyed numba cache before numba is imported)
