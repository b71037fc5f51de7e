"""The weight update of a shogi learning run: which feature groups learn, and a shared piece-square factor.

Delta w = eps * sum_t A_t e(t) (eq. 14 with the advantage of learn/selfplay.py) is applied by AdaGrad (pg.SparseAdaGrad) in two parts:

- direct: each trainable coordinate of the evaluation (groups "material", "kp", "pp" of
  eval/shogi_features.py) takes its own AdaGrad step, as before;
- factor (factor_lr > 0): a piece-square vector u[p] (one value per piece object p, FE_END of them) that is
  added to every row of the own-king KP table, KP0(k, p) = direct(k, p) + u[p]. Its gradient is the sum of
  the KP0 gradients over the king squares k, so every game's evidence about a piece on a square is pooled
  across all 81 king positions instead of being spread over them (81 times the evidence per coordinate,
  for the piece-square part of the table only). The evaluation and the weight file are unchanged
  (u is folded into w after each step); u and its AdaGrad state live in the optimiser state. This is the
  "factoriser" idea of KP/KPP learners (YaneuraOu's learner, NNUE trainers), applied to our linear table.

The L2 pull of a direct coordinate is toward its start value plus the factor, so regularisation does not
undo what the factor learned; the factor has its own pull toward 0.
"""

from __future__ import annotations

import numpy as np

from eval.shogi_features import FE_END, N_SQ, OFF_KP, OFF_PP

from .pg import SparseAdaGrad

GROUPS = ("material", "kp", "pp")
KP0_END = OFF_KP + N_SQ * FE_END          # end of the own-king KP table (rows k = 0..80)


def group_of(idx):
    """Group number (index into GROUPS) of each weight index."""
    return np.searchsorted(np.array([OFF_KP, OFF_PP]), idx, side="right")


class ShogiUpdate:
    """AdaGrad over the trainable groups plus the optional piece-square factor (module docstring)."""

    def __init__(self, w, w0, lr, l2, max_step, groups=GROUPS, factor_lr=0.0, state=None):
        bad = set(groups) - set(GROUPS)
        if bad:
            raise ValueError(f"unknown feature group(s) {', '.join(sorted(bad))}: expected {', '.join(GROUPS)}")
        self.trainable = np.array([g in groups for g in GROUPS])
        state = state or {}
        self.direct = SparseAdaGrad(w, lr=lr, l2=l2, max_step=max_step, h=state.get("h"), w0=w0)
        u = np.array(state["u"], np.float64) if "u" in state else np.zeros(FE_END)
        self.factor = SparseAdaGrad(u, lr=factor_lr, l2=l2, max_step=max_step, h=state.get("hu"),
                                    w0=np.zeros(FE_END))
        self.factor_lr = factor_lr

    @property
    def w(self):
        return self.direct.w

    def step(self, idx, g) -> dict:
        """Apply the ascent direction g at unique indices idx; returns the step norms."""
        out = {"step_norm": 0.0, "factor_step_norm": 0.0}
        if self.factor_lr > 0:
            kp0 = (idx >= OFF_KP) & (idx < KP0_END)
            p = (idx[kp0] - OFF_KP) % FE_END
            gu = np.bincount(p, weights=g[kp0], minlength=FE_END)
            touched = np.flatnonzero(np.bincount(p, minlength=FE_END))
            before = self.factor.w[touched].copy()
            out["factor_step_norm"] = self.factor.step(touched, gu[touched])
            du = np.zeros(FE_END)
            du[touched] = self.factor.w[touched] - before
            self.w[OFF_KP:KP0_END].reshape(N_SQ, FE_END)[:] += du
        keep = self.trainable[group_of(idx)]
        idx, g = idx[keep], g[keep]
        if idx.size:
            anchor = self.direct.w0[idx].copy()
            kp0 = (idx >= OFF_KP) & (idx < KP0_END)
            anchor[kp0] += self.factor.w[(idx[kp0] - OFF_KP) % FE_END]
            out["step_norm"] = self.direct.step(idx, g, anchor)
        return out

    def state(self) -> dict:
        """Arrays to checkpoint (with the weights) and pass back as `state` on resume."""
        return {"h": self.direct.h, "u": self.factor.w, "hu": self.factor.h}
