"""Adam (Kingma & Ba 2015) for the move-prior fits (learn/go_moves.py, learn/shogi_moves.py): one numba step."""

import numpy as np
from numba import njit

ADAM_B1, ADAM_B2, ADAM_EPS = 0.9, 0.999, 1e-8


@njit(cache=True)
def adam_step(w, grad, m1, m2, step, lr, l2):
    """One Adam step on w with gradient grad + l2 * w (Kingma & Ba, Algorithm 1: moment estimates m1, m2,
    bias-corrected); step[0] counts the steps taken and is advanced first."""
    step[0] += 1
    c1 = 1.0 - ADAM_B1 ** step[0]
    c2 = 1.0 - ADAM_B2 ** step[0]
    for i in range(w.shape[0]):
        g = grad[i] + l2 * w[i]
        m1[i] = ADAM_B1 * m1[i] + (1.0 - ADAM_B1) * g
        m2[i] = ADAM_B2 * m2[i] + (1.0 - ADAM_B2) * g * g
        w[i] -= lr * (m1[i] / c1) / (np.sqrt(m2[i] / c2) + ADAM_EPS)
