"""The shogi move prior (usi_engine/shogi_search/moveprior.py) learned from the self-play trees: the run's `[prior]`
settings, the target and a game's gradient (worker side), the Adam step per batch and its checkpointed state (run
side). docs/learning.md "The move prior from self-play".

Target: at each learned move of a self-play game (learn/selfplay.py), the root policy the move is drawn from,
q(c) = pi_a(c) = exp(x_c / T_learn) / Z over the root's children c (eq. 12-13, x_c the child's searched value for
the mover). Under progressive widening only the entered children E have values, so q is a distribution over E,
and the model is renormalised over the same set,

    P_E(c) = exp s(c) / sum_{j in E} exp s(j)                    (the prior's softmax conditioned on E)

the probability of c given that the move is one of E: a proper conditional likelihood, whatever order the moves
entered in (the children left out carry no target and no term). Without widening, or once every move of the root
has entered, E is every search move and P_E is the prior itself.

Loss per learned move: the cross-entropy H(q, P_E) = -sum_{c in E} q(c) log P_E(c), whose gradient is
sum_{c in E} (P_E(c) - q(c)) ds(c)/dw (movefit.softmax_loss, the rule `learn shogi-moves` fits with, there with a
one-hot q). KL(q || P_E) = H(q, P_E) - H(q) is the part the prior can remove; both are reported per batch.

A worker sums a game's gradient over its learned moves at the model the game searched with (PriorGradient); every
game of a batch plays with the same version's model, so the batch's gradient is exact. The run averages it over
the batch's learned moves and takes one Adam step (PriorUpdate: movefit.adam_step, with `learn shogi-moves`'s L2
toward 0), then checkpoints the model as an engine-loadable prior file (MovePriorFile) beside the weights, and its
float64 model with the Adam moments in a state file, so that a resumed run continues bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi_search import moveprior as M

from .movefit import adam_step, position_cross_entropy
from .runfiles import atomic_save, read_npz


@dataclass
class PriorConfig:
    """The `[prior]` table of a run configuration: which prior the searches start with, and whether it learns."""

    start: str = ""  # the run's first prior: "" = the shipped moves.npz, "uniform" = all-zero weights, else a file
    lr: float = 0.0  # Adam step of the cross-entropy per batch; 0 = the prior does not learn (off)
    l2: float = 1e-5  # L2 pull toward 0 per weight and learned move (learn shogi-moves' --l2)

    @classmethod
    def from_dict(cls, d: dict) -> PriorConfig:
        """The settings of a [prior] table; ValueError naming unknown settings or bad values."""
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown [prior] setting(s): {', '.join(sorted(unknown))}")
        cfg = cls(**d)
        if not isinstance(cfg.start, str):
            raise ValueError(f"[prior] start {cfg.start!r}: expected a file name, \"\" or \"uniform\"")
        numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (cfg.lr, cfg.l2))
        if not (numbers and cfg.lr >= 0 and cfg.l2 >= 0):
            raise ValueError("[prior] lr and l2 must be numbers >= 0 (lr 0: the prior does not learn)")
        return cfg

    @property
    def learns(self) -> bool:
        """The run learns its prior from the self-play trees."""
        return self.lr > 0


def start_model(cfg: PriorConfig) -> np.ndarray:
    """The model the run's prior starts from (float64); a bad file raises a ValueError naming it."""
    if cfg.start == "uniform":
        return M.uniform_model()
    return np.asarray(M.load_model(cfg.start or None), np.float64)


class PriorGradient:
    """Worker side: a game's sum over its learned moves of the cross-entropy gradient at one model, with the sums
    of the loss H(q, P_E) and of the target's entropy H(q)."""

    def __init__(self, model: np.ndarray):
        self.model = np.array(model, np.float64)
        self.grad = np.zeros(M.N_WEIGHTS)
        self.loss = self.entropy = 0.0
        self.positions = 0
        self._rows = np.empty((MAX_MOVES, M.N_GROUPS), np.int16)
        self._tactical = np.empty(MAX_MOVES, np.int8)
        self._scores = np.empty(MAX_MOVES)
        self._use = np.ones(M.N_GROUPS, np.bool_)

    def clear(self) -> None:
        """Forget the sums (a new game)."""
        self.grad[:] = 0.0
        self.loss = self.entropy = 0.0
        self.positions = 0

    def add(self, pos: np.ndarray, moves: np.ndarray, target: np.ndarray) -> float:
        """Add the term of one learned move: position pos (restored), the root's entered children `moves` and
        the target weights over them (normalised here); returns H(q, P_E)."""
        moves = np.ascontiguousarray(moves, np.int32)
        n = moves.shape[0]
        q = np.asarray(target, np.float64) / np.sum(target)
        M.position_features(pos, moves, n, self._rows, self._tactical)
        loss = position_cross_entropy(self._rows, 0, n, q, self.model, self._use, self._scores, self.grad, 1.0)
        self.loss += loss
        self.entropy -= float(np.sum(q[q > 0] * np.log(q[q > 0])))  # H(q)
        self.positions += 1
        return float(loss)

    def sparse(self) -> tuple[np.ndarray, np.ndarray]:
        """(indices, values) of the gradient sum's nonzero entries (int64, float64): a game's payload."""
        idx = np.flatnonzero(self.grad)
        return idx.astype(np.int64), self.grad[idx]


class PriorUpdate:
    """Run side: the prior's float64 model and its Adam state; one step per batch."""

    def __init__(self, state: dict, lr: float, l2: float):
        """From a state (PriorUpdate.state(), load_state): copies of its arrays."""
        self.lr, self.l2 = lr, l2
        self.w, self.m1, self.m2 = (np.array(state[k], np.float64) for k in ("w", "m1", "m2"))
        self.steps = np.array(state["steps"], np.int64)

    @classmethod
    def start(cls, model: np.ndarray, lr: float, l2: float) -> PriorUpdate:
        """A new prior at `model`: Adam's moments zero, no step taken."""
        zero = np.zeros(M.N_WEIGHTS)
        return cls({"w": model, "m1": zero, "m2": zero, "steps": np.zeros(1, np.int64)}, lr, l2)

    def step(self, parts: list[tuple[np.ndarray, np.ndarray]], positions: int) -> dict:
        """One Adam step on the mean gradient over `positions` learned moves of the games' sparse sums `parts`
        (added in the order given); no step without a learned move. Returns the gradient's and the step's norms."""
        g = np.zeros(M.N_WEIGHTS)
        for idx, val in parts:
            g[idx] += val  # a game's indices are distinct
        if positions == 0:
            return {"prior_grad_norm": 0.0, "prior_step_norm": 0.0}
        g /= positions
        before = self.w.copy()
        adam_step(self.w, g, self.m1, self.m2, self.steps, self.lr, self.l2)
        return {"prior_grad_norm": float(np.linalg.norm(g)), "prior_step_norm": float(np.linalg.norm(self.w - before))}

    def state(self) -> dict:
        """What a checkpoint keeps to continue exactly: the float64 model, the moments and the step count."""
        return {"w": self.w, "m1": self.m1, "m2": self.m2, "steps": self.steps}


class PriorStateError(ValueError):
    """A prior state file is unreadable, corrupt or does not fit the move prior's feature set."""

    def __init__(self, path, problem):
        super().__init__(f"prior state {path}: {problem}")


def save_state(path: Path, state: dict) -> None:
    """Write PriorUpdate.state() to `path` (np.savez via a temporary file and a rename: never half written)."""
    atomic_save(path, lambda f: np.savez(f, **state))


def load_state(path: Path) -> dict:
    """The arrays of a prior state file; PriorStateError naming the file and the problem when it is missing,
    unreadable, or an array is absent, of the wrong shape or type, or not finite."""
    raw = read_npz(path, PriorStateError)
    want = {"w": ((M.N_WEIGHTS,), "f"), "m1": ((M.N_WEIGHTS,), "f"), "m2": ((M.N_WEIGHTS,), "f"), "steps": ((1,), "i")}
    for name, (shape, kind) in want.items():
        a = raw.get(name)
        if a is None or a.shape != shape or a.dtype.kind != kind:
            what = "float" if kind == "f" else "int"
            raise PriorStateError(path, f"'{name}' missing or not a {what} array of shape {shape}")
        if kind == "f" and not np.all(np.isfinite(a)):
            raise PriorStateError(path, f"'{name}' contains NaN or infinity")
    return {name: raw[name] for name in want}
