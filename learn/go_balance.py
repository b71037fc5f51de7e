"""`python -m learn go-balance`: simulation balancing of the Go playouts' shape weights, and playouts as evaluators.

A playout policy is good for Monte-Carlo search when the mean outcome of its playouts from a position is close to
the position's true value, not when it plays strong moves (seed 000 §6: "the key idea of simulation balancing is
to minimise the error between the Monte-Carlo value and an oracle value computed by deep search"). This command
fits the weights theta of rule 6's softmax draw (one weight per 3x3 shape class, usi_engine/go/softplayout.py;
rules 0-5 stay as they are) to oracle values V*(s) made by `learn go-label`, by policy-gradient simulation
balancing (Silver & Tesauro 2009, the algorithm of Huang, Coulom & Lin 2010):

    V(s) = E[z | s]                                   (z = 1 for a Black win, 1/2 a tie; Black's view throughout)
    grad V(s) = E[(z - b) psi],  psi = sum over the rule-6 moves t of d log pi(a_t | s_t) / d theta
    theta <- theta + alpha * sum_s (V*(s) - V^(s)) g^(s) - alpha * l2 * theta

with V^ the mean of `--value-playouts` playouts and g^ the mean of (z - V^) psi over `--grad-playouts` other
playouts (independent of V^, so the product is an unbiased estimate of the gradient of -(V* - V)^2 / 2; the
baseline V^ does not bias g^ since E[psi] = 0). Both colours draw with the same mover-relative weights, so psi
sums over both sides' moves. The positions are split by record into training and held-out sets; each epoch
reports the mean squared error on both (`--eval-playouts` playouts per held-out position), and a checkpoint (the
weights file, readable by `--playout-weights`) is written after each epoch; `--resume` continues from it.

`--evaluate` only measures: for each playout policy (plain, MoGo patterns, patterns and tactics, patterns and the
move model's softmax, patterns and the self-atari judgement, Pachi's moggy patterns alone and with the tactics and
the self-atari redirection, the killing sacrifices with the plain policy, the patterns, the patterns and tactics, and
all of Pachi's rules, and the given `--weights`), the mean squared error (also without the binomial noise of
the playout count), bias and correlation of its playout values against the labels. `--engine-policy CMD` measures a
GTP engine's genmove as a playout policy on the same positions (each playout's moves asked of it one by one), so
another program's playouts (Pachi's `-e replay runs=1`: one draw of its policy per genmove) compare with ours.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from usi_engine.go.goboard import GoBoard
from usi_engine.go.layout import SIZE
from usi_engine.go.moveprior import N_SHAPE3
from usi_engine.go.playout import POLICY_SOFTMAX, move_cap, playout_policy, run_playout, run_playouts, seed_rng
from usi_engine.go.softplayout import (
    draw_table,
    playout_table,
    read_playout_weights,
    score_classes,
    shape_gammas,
    weights_table,
    write_playout_weights,
)
from usi_engine.go.workspace import new_workspace

from .match.engines import EngineError, GtpEngine, GtpError
from .match.go_label import Label, sample_labels, set_position
from .match.go_review import read_sgf
from .match.openings import format_vertex

NONE = np.empty(0, np.float64)


@njit(cache=True, nogil=True)
def _outcome(score):
    """Black's result of a playout score: 1 win, 1/2 tie, 0 loss."""
    return 1.0 if score > 0 else (0.5 if score == 0 else 0.0)


@njit(cache=True, nogil=True)
def position_gradient(pos, ws, rng, n_value, n_grad, max_moves, policy, table, classes, psi, grad):
    """V^ (mean of n_value playouts) of pos; grad += the mean over n_grad further playouts of (z - V^) psi
    (module docstring). Returns V^."""
    none = np.empty(0, np.float64)
    trace = np.empty(0, np.int32)
    v = 0.0
    for _ in range(n_value):
        score, _ = run_playout(pos, ws, rng, max_moves, none, none, trace, policy, table)
        v += _outcome(score)
    v /= n_value
    for _ in range(n_grad):
        psi[:] = 0.0
        score, _ = run_playout(pos, ws, rng, max_moves, none, none, trace, policy, table, classes, psi)
        grad += (_outcome(score) - v) / n_grad * psi
    return v


def label_board(lab: Label, records: dict) -> GoBoard:
    """A label's position on a fresh GoBoard, replayed from its record (records caches the records read)."""
    if lab.record not in records:
        records[lab.record] = read_sgf(lab.record)
    rec = records[lab.record]
    board = GoBoard(rec.size, rec.komi)
    for colour, stone in rec.setup:
        board.play(colour, format_vertex(stone))
    for colour, point in rec.moves[: lab.moves]:
        board.play(colour, format_vertex(point), allow_superko=True)
    board.to_move = lab.to_move
    return board


def positions(labels: list[Label]) -> list[np.ndarray]:
    """The position array (GoBoard.pos) of each label, replayed from its record (read once per record)."""
    records: dict = {}
    return [label_board(lab, records).pos.copy() for lab in labels]


def holdout_mask(labels: list[Label], fraction: float) -> np.ndarray:
    """True for the labels of held-out records: a record is held out when a hash of its path falls below
    `fraction` (whole records, so that no game's positions sit on both sides)."""

    def frac(path: str) -> float:
        return int(hashlib.sha256(path.encode()).hexdigest()[:8], 16) / 16**8

    return np.array([frac(lab.record) < fraction for lab in labels], bool)


def playout_values(pos_list, policy: int, table, n: int, seed: int, threads: int = 1) -> np.ndarray:
    """Black's mean playout outcome from each position (n playouts each)."""

    def chunk(idx):
        ws, rng = new_workspace(), seed_rng(int(seed + 7919 * idx[0] + 1))
        res = []
        for i in idx:
            cap = move_cap(_size(pos_list[i]))
            wins, _, _ = run_playouts(pos_list[i], ws, rng, n, cap, NONE, NONE, policy, table)
            res.append(wins / n)
        return res

    parts = np.array_split(np.arange(len(pos_list)), max(1, threads))
    with ThreadPoolExecutor(max_workers=max(1, threads)) as ex:
        out = [v for part in ex.map(chunk, [list(p) for p in parts if len(p)]) for v in part]
    return np.array(out)


def _size(pos: np.ndarray) -> int:
    return int(pos[SIZE])


def errors(values: np.ndarray, targets: np.ndarray, playouts: int = 0) -> dict:
    """Mean squared error, bias (mean of value - target), correlation and count. With `playouts` (> 1, the playouts
    behind each value) also `mse_exact`: the error with the binomial noise of that many playouts taken out, mse -
    mean(v (1 - v)) / (playouts - 1), since E[v^(1 - v^)] = V (1 - V) (n - 1) / n for the mean v^ of n outcomes."""
    diff = values - targets
    corr = float(np.corrcoef(values, targets)[0, 1]) if len(values) > 2 and values.std() > 0 else float("nan")
    out = {"n": int(len(values)), "mse": float(np.mean(diff**2)), "bias": float(np.mean(diff)), "corr": corr}
    if playouts > 1:
        out["mse_exact"] = out["mse"] - float(np.mean(values * (1.0 - values))) / (playouts - 1)
    return out


def engine_playout_values(engine: GtpEngine, labels: list[Label], n: int) -> np.ndarray:
    """Black's mean outcome of n playouts from each labelled position in which a GTP engine's genmove plays both
    sides to the end (two passes, or playout.move_cap moves): an engine whose genmove is one draw of its playout
    policy (e.g. Pachi's `-e replay runs=1`) is so measured as a playout policy, on the positions and scale of ours.
    Each playout is mirrored on a GoBoard and scored by area, every stone alive (the playout has ended); a
    resignation loses for the side that resigns."""
    records: dict = {}
    out = []
    for lab in labels:
        wins = 0.0
        for _ in range(n):
            board = label_board(lab, records)
            rec = records[lab.record]
            set_position(engine, rec, lab.moves)
            colour, passes, z = lab.to_move, 0, -1.0
            for _ in range(move_cap(rec.size)):
                vertex = engine.command_ok(f"genmove {colour}").lower()
                if vertex == "resign":
                    z = 0.0 if colour == "b" else 1.0
                    break
                board.play(colour, vertex, allow_superko=True)
                passes = passes + 1 if vertex == "pass" else 0
                if passes == 2:
                    break
                colour = "w" if colour == "b" else "b"
            if z < 0.0:
                score = board.area_score()
                z = 1.0 if score > 0 else 0.5 if score == 0 else 0.0
            wins += z
        out.append(wins / n)
    return np.array(out)


class Balancer:
    """Simulation balancing state: the weights theta, the table and score classes the kernels read, one workspace,
    RNG, psi and gradient buffer per thread."""

    def __init__(self, theta: np.ndarray, policy: int, threads: int, seed: int):
        self.theta = np.array(theta, np.float64)
        self.policy = policy | POLICY_SOFTMAX
        self.classes = score_classes()
        self.threads = max(1, threads)
        self.work = [
            (new_workspace(), seed_rng(seed + 104729 * k + 1), np.zeros(N_SHAPE3), np.zeros(N_SHAPE3))
            for k in range(self.threads)
        ]
        self.table = draw_table(shape_gammas(self.theta))

    def batch(self, pos_list, targets, n_value: int, n_grad: int) -> tuple[np.ndarray, np.ndarray]:
        """(V^ of each position, sum over them of (V* - V^) g^), the positions shared among the threads."""

        def run(k):
            ws, rng, psi, grad = self.work[k]
            step = np.zeros(N_SHAPE3)
            values = []
            for i in range(k, len(pos_list), self.threads):
                grad[:] = 0.0
                cap = move_cap(_size(pos_list[i]))
                v = position_gradient(
                    pos_list[i], ws, rng, n_value, n_grad, cap, self.policy, self.table, self.classes, psi, grad
                )
                step += (targets[i] - v) * grad
                values.append((i, v))
            return step, values

        with ThreadPoolExecutor(max_workers=self.threads) as ex:
            parts = list(ex.map(run, range(self.threads)))
        values = np.zeros(len(pos_list))
        step = np.zeros(N_SHAPE3)
        for part_step, part_values in parts:
            step += part_step
            for i, v in part_values:
                values[i] = v
        return values, step

    def apply(self, step: np.ndarray, lr: float, l2: float) -> None:
        """theta <- theta + lr * step - lr * l2 * theta; the kernels' table follows."""
        self.theta += lr * step - lr * l2 * self.theta
        self.table = draw_table(shape_gammas(self.theta))


def standard_policies() -> dict[str, tuple[int, np.ndarray | None]]:
    """Our playout policies measured against other references (name -> policy bitmask, softmax table or None):
    plain, MoGo patterns, with tactics, with the move model's softmax, with the self-atari judgement, Pachi's moggy
    patterns alone and with the tactics and the self-atari redirection, and the killing sacrifices (with the plain
    policy, the patterns, patterns and tactics, and all of Pachi's rules)."""
    return {
        "plain": (playout_policy(False, False), None),
        "patterns": (playout_policy(True, False), None),
        "patterns+tactics": (playout_policy(True, True), None),
        "patterns+softmax(move model)": (playout_policy(True, False, True), playout_table()),
        "patterns+selfatari": (playout_policy(True, False, selfatari=True), None),
        "moggy": (playout_policy(False, False, moggy=True), None),
        "moggy+tactics+redirect": (playout_policy(False, True, redirect=True, moggy=True), None),
        "plain+sacrifice": (playout_policy(False, False, sacrifice=True), None),
        "patterns+sacrifice": (playout_policy(True, False, sacrifice=True), None),
        "patterns+tactics+sacrifice": (playout_policy(True, True, sacrifice=True), None),
        "moggy+tactics+redirect+sacrifice": (
            playout_policy(False, True, redirect=True, moggy=True, sacrifice=True),
            None,
        ),
        "moggy-local+tactics+redirect+sacrifice": (
            playout_policy(False, True, redirect=True, moggy=True, sacrifice=True, moggy_local=True),
            None,
        ),
    }


def evaluate(
    pos_list, targets, weights: str | None, n: int, threads: int, seed: int, engine_values=None, out=sys.stdout
) -> dict:
    """Playout values of the standard policies (and of a weights file, and of an engine's playouts already made:
    engine_values) against the targets; one line each."""
    policies = standard_policies()
    if weights:
        policies[f"patterns+softmax({os.path.basename(weights)})"] = (
            playout_policy(True, False, True),
            weights_table(weights),
        )
    values = {
        name: playout_values(pos_list, policy, table, n, seed, threads) for name, (policy, table) in policies.items()
    }
    if engine_values is not None:
        values["engine"] = engine_values
    report = {}
    for name, v in values.items():
        e = errors(v, targets, n)
        report[name] = e
        print(
            f"{name}: mse {e['mse']:.4f} (without the playouts' noise {e['mse_exact']:.4f}) bias {e['bias']:+.3f} "
            f"corr {e['corr']:.3f} ({e['n']} positions)",
            file=out,
        )
    return report


def add_go_balance_parser(sub) -> None:
    p = sub.add_parser(
        "go-balance", help="simulation balancing of Go playouts (or --evaluate)", description=__doc__.splitlines()[0]
    )
    p.add_argument("labels", help="a go-label file (JSON lines)")
    p.add_argument("--out", help="the weights file written after each epoch (needed unless --evaluate)")
    p.add_argument("--evaluate", action="store_true", help="only measure the playout policies against the labels")
    p.add_argument("--weights", help="with --evaluate: a playout-weights file to measure too")
    p.add_argument(
        "--engine-policy",
        help="with --evaluate: also measure this GTP engine's genmove as a playout policy (e.g. an engine that answers"
        " with one draw of its playout policy)",
    )
    p.add_argument(
        "--positions", type=int, default=0, help="with --evaluate: a seeded draw of this many labels (0: all)"
    )
    p.add_argument("--resume", action="store_true", help="continue from --out's weights and epoch count")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch", type=int, default=32, help="positions per step (default 32)")
    p.add_argument("--lr", type=float, default=1.0, help="step size alpha (default 1)")
    p.add_argument("--l2", type=float, default=0.0001, help="weight decay per step (default 1e-4)")
    p.add_argument("--value-playouts", type=int, default=32, help="playouts for V^ per position (default 32)")
    p.add_argument("--grad-playouts", type=int, default=32, help="playouts for g^ per position (default 32)")
    p.add_argument("--eval-playouts", type=int, default=256, help="playouts per held-out position (default 256)")
    p.add_argument("--holdout", type=float, default=0.2, help="fraction of records held out (default 0.2)")
    p.add_argument(
        "--playout-patterns", choices=("on", "off"), default="on", help="with MoGo patterns, rule 5 (default on)"
    )
    p.add_argument("--playout-tactics", action="store_true", help="balance under the tactics rules too")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(handler=run_go_balance)


def _fail(message: str) -> int:
    print(f"go-balance: {message}", file=sys.stderr)
    return 2


def run_go_balance(a: argparse.Namespace) -> int:
    try:
        labels = sample_labels(a.labels, a.positions if a.evaluate else 0, a.seed)
    except ValueError as e:
        return _fail(str(e))
    try:
        pos_list = positions(labels)
    except (OSError, ValueError) as e:  # a record gone or changed since labelling
        return _fail(f"cannot replay a labelled record ({e})")
    targets = np.array([lab.black for lab in labels])
    if a.evaluate:
        engine_values = None
        if a.engine_policy:
            engine = GtpEngine(a.engine_policy, "policy")
            try:
                engine_values = engine_playout_values(engine, labels, a.eval_playouts)
            except (EngineError, GtpError, ValueError) as e:  # a refused move, a crash, an unreadable answer
                return _fail(f"the policy engine failed: {e}")
            finally:
                engine.stop_process()
        try:
            evaluate(pos_list, targets, a.weights, a.eval_playouts, a.threads, a.seed, engine_values)
        except ValueError as e:
            return _fail(str(e))
        return 0
    if not a.out:
        return _fail("--out is needed to train")
    if min(a.epochs, a.batch, a.value_playouts, a.grad_playouts, a.eval_playouts) < 1 or a.lr <= 0:
        return _fail("--epochs, --batch and the playout counts must be >= 1, --lr > 0")
    held = holdout_mask(labels, a.holdout)
    train = np.flatnonzero(~held)
    test = np.flatnonzero(held)
    if len(train) == 0:
        return _fail("no training position (lower --holdout)")
    theta, done, history = np.zeros(N_SHAPE3), 0, []
    if a.resume and os.path.exists(a.out):
        try:
            theta, meta = read_playout_weights(a.out)
        except ValueError as e:
            return _fail(str(e))
        done, history = int(meta.get("epochs", 0)), list(meta.get("history", []))
    policy = playout_policy(a.playout_patterns == "on", a.playout_tactics, True)
    bal = Balancer(theta, policy, a.threads, a.seed + 1000 * done)
    rng = np.random.default_rng(a.seed + done)

    def held_out() -> dict | None:
        if len(test) == 0:
            return None
        values = playout_values([pos_list[i] for i in test], bal.policy, bal.table, a.eval_playouts, a.seed, a.threads)
        return errors(values, targets[test])

    if done == 0 and not history:
        history.append({"epoch": 0, "test": held_out(), "seconds": 0.0})
        print(f"go-balance: epoch 0 held-out {history[-1]['test']}", flush=True)
    for epoch in range(done + 1, a.epochs + 1):
        start = time.perf_counter()
        order = rng.permutation(train)
        sq = []
        for lo in range(0, len(order), a.batch):
            idx = order[lo : lo + a.batch]
            values, step = bal.batch([pos_list[i] for i in idx], targets[idx], a.value_playouts, a.grad_playouts)
            bal.apply(step / len(idx), a.lr, a.l2)
            sq += list((values - targets[idx]) ** 2)
        row = {
            "epoch": epoch,
            "train_mse": float(np.mean(sq)),  # V^ from value-playouts each, so it includes their sampling noise
            "test": held_out(),
            "seconds": round(time.perf_counter() - start, 1),
        }
        history.append(row)
        write_playout_weights(
            a.out,
            bal.theta,
            epochs=epoch,
            history=history,
            labels=os.path.basename(a.labels),
            positions=int(len(train)),
            settings={k: getattr(a, k) for k in ("batch", "lr", "l2", "value_playouts", "grad_playouts", "seed")},
            playout_patterns=a.playout_patterns == "on",
            playout_tactics=bool(a.playout_tactics),
        )
        print(f"go-balance: {json.dumps(row)}", flush=True)
    return 0
