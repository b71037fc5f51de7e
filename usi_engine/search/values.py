"""Value conventions shared by the search core and every game.

Values are negamax: E(s) is from the side to move at s. A side to move that is mated (or has lost the
game) has E = -MATE at the terminal; the search core backs proven results up as MATE - distance, so
any |E| >= MATE_THRESHOLD is a proven result.
"""

from usi_engine.jit import bare_kernel

MATE = 30000.0
MATE_THRESHOLD = MATE - 1000.0


@bare_kernel
def is_proven(value: float) -> bool:
    """True when `value` is a proven win or loss rather than a heuristic estimate."""
    return abs(value) >= MATE_THRESHOLD
