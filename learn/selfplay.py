"""Self-play shogi games with MCSS for PG-expectation learning (seed 001 §5; learn/pg.py).

One game, in-process (no USI pipes: the trees are needed):
1. Opening diversity: a random number of opening plies in [opening_min, opening_max], each drawn from a
   softmax over the one-ply quiescence values at temperature `opening_temp` (varied but not absurd
   openings); no learning on these plies.
2. Every later move: an MCSS search with a fixed number of samples (deterministic given the seed, and
   independent of machine speed), one thread, tree mode (no transpositions: each leaf has one path,
   so the tree's values are exactly the recursion the gradient differentiates), tree reuse between moves.
   `qsearch_see` = the engine's QSearchSEE (captures with a negative static exchange left out of the
   quiescence search); the gradient kernels recompute every leaf with the same setting.
   The move is drawn from the learner's root policy pi_a(a) = exp(E*(a)/T_learn)/Z (eq. 12-13) and the
   eligibility e(t) (eq. 15) of the drawn move is accumulated into the mover's dense gradient sum.
   A proven win plays the best move; a proven loss resigns (proven values do not depend on w).
3. The game is played out by the rules core's adjudicator (usi_engine/shogi/adjudicate.py `play_out`) under the
   entering-king rule `declaration_rule` (the searches use it too): mate (no legal move), a winning declaration
   (taken for the side that has it), a try under the try rule, sennichite (fourth occurrence: draw, or a loss
   for the perpetual checker); resignation (optional value threshold held for some moves), or the length cap
   (a draw, or adjudicated by the searched value when `adjudicate_cp` > 0: the cap is self-play's own, after
   the search, not the adjudicator's).

The caller gets the result and, per side, an AdvantageSum: the update is sum_t A_t e(t) with the advantage

    A_t = sum_{j >= t} lam^(j-t) (b_{j+1} - b_j),   b_n = r (the game result),

over the side's own moves t, j = 0..n-1, where b_t = tanh(E(root)/(2 * baseline_scale)) is the mover's
expected result predicted by its own search (0 when baseline_scale is 0). With lam = 1 this is
A_t = r - b_t: eq. 14 with a baseline (E[e(t)] = 0 under pi_a, so subtracting a value that does not depend on
the drawn move leaves the expected gradient unchanged and removes the part of the reward the position
already predicted). With lam < 1 later searched values stand in for part of the result (the lambda-return
of TD(lambda), as in generalised advantage estimation): much less variance, some bias toward the current
evaluation; lam = 0 rewards a move by how the mover's next search rates the position, b_{t+1} - b_t.

Critic term (ours, `value_weight` > 0): the evaluation is the actor's policy and its own critic, so each
move adds value_weight * db_t/dw (db_t/dw = (1 - b_t^2) / (2 * baseline_scale) * dE(root)/dw, computed over the
same tree by the same recursion, pg.eligibility_coefs) to e(t). Multiplied by the same A_t this is the
offline TD(lam) update of the searched value b_t toward its lambda-return (TDLeaf(lam) of Baxter, Tridgell
and Weaver, with the whole softmax tree in place of the PV leaf): it teaches the evaluation to predict the
result, which the engine's best-value move choice profits from directly.

Progressive widening (`widen_k0` > 0, the engine's WidenChildren; `prior_beta` its MovePriorBias): the searches
enter a node's children in the order of a move prior (usi_engine/shogi_search/moveprior.py), the one the run gives
(`SelfPlayer.set_prior`), k0 at expansion and more as the node's samples grow (docs/search.md). A child that has not
entered takes part in neither selection nor the backup, so the tree's values are the recursion over the entered
children, which is what the gradient kernels differentiate (they walk the entered children only). Off (0) by
default: every child enters at expansion, as before widening existed.

The move prior's target (learn/selfplay_prior.py): at each learned move, the root policy pi_a over the root's
entered children that the move is drawn from; `play` hands it to a PriorGradient when the run learns its prior.

Search bootstrapping (ours, `strap_weight` > 0; the "regression toward the searched value" of the paper
author's learner): after each move, every inner node of its tree pulls its static value toward its searched
value (pg.shogi_strap_gradients). It needs no result, so it goes to the result-free row of AdvantageSum.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from usi_engine.search import layout
from usi_engine.search.policy import root_policy
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions
from usi_engine.search.values import MATE_THRESHOLD
from usi_engine.shogi import Board, adjudicate, move_to_usi
from usi_engine.shogi.adjudicate import Verdict
from usi_engine.shogi.board import declaration_rule_code
from usi_engine.shogi.layout import MAX_MOVES
from usi_engine.shogi_search.game import ShogiAdapter, expand, make_params

from . import pg
from .match.records import KIF_ENCODING, ShogiRecord, write_csa, write_kif
from .selfplay_prior import PriorGradient


@dataclass
class SelfPlayConfig:
    samples: int = 200  # MCSS samples per move
    t_sel: float = 92.0  # selection temperature (centipawns)
    t_back: float = 92.0  # backup temperature: the tree's pi in the gradient factors
    t_learn: float = 92.0  # learner's root policy temperature T_a (move choice and eq. 15)
    hash_mb: float = 16.0
    qdepth: int = 8
    qsearch_see: bool = False  # SEE pruning in the quiescence search (the engine's QSearchSEE), also in the gradients
    method: str = "sampled"  # sampled | exact | pgleaf (learn/pg.py)
    mode: str = "full"  # full (both sides differentiate) | paper (opponent pi_b fixed)
    grad_samples: int = 256  # sampled paths per eligibility term
    clip: float = pg.DEFAULT_CLIP
    opening_min: int = 0
    opening_max: int = 8
    opening_temp: float = 300.0
    max_moves: int = 256  # game length cap (plies)
    declaration_rule: str = "CSARule27"  # entering-king rule of the games and their searches (incl. TryRule)
    adjudicate_cp: float = 0.0  # > 0: at the cap, |E(root)| >= this decides the game; else a draw
    resign_cp: float = 0.0  # > 0: resign after resign_moves own moves with E(root) <= -resign_cp
    resign_moves: int = 3
    baseline_scale: float = 0.0  # > 0: reward baseline b_t = tanh(E(root) / (2 * baseline_scale)), centipawns
    lam: float = 1.0  # advantage lambda: 1 = game result minus baseline; < 1 bootstraps (docstring)
    value_weight: float = 0.0  # > 0: critic term, each move adds value_weight * db_t/dw to e(t) (TD(lam) on b_t)
    strap_weight: float = 0.0  # > 0: search bootstrapping, static values regressed toward the tree's values
    pg_weight: float = 1.0  # weight of sum_t A_t e(t) (policy term, with the critic); 0 = bootstrapping only
    widen_k0: int = 0  # > 0: progressive widening, children entered at expansion (WidenChildren); 0 = all at once
    prior_beta: float = 0.0  # progressive bias under widening: a child weighs p^prior_beta more (MovePriorBias / 100)

    @classmethod
    def from_dict(cls, d: dict) -> "SelfPlayConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown self-play setting(s): {', '.join(sorted(unknown))}")
        cfg = cls(**d)
        declaration_rule_code(cfg.declaration_rule)  # ValueError naming the rules
        if not isinstance(cfg.qsearch_see, bool):
            raise ValueError(f"qsearch_see {cfg.qsearch_see!r}: expected true or false")
        if cfg.method not in pg.METHODS:
            raise ValueError(f"method {cfg.method!r}: expected one of {', '.join(pg.METHODS)}")
        if cfg.mode not in pg.MODES:
            raise ValueError(f"mode {cfg.mode!r}: expected one of {', '.join(pg.MODES)}")
        if min(cfg.samples, cfg.grad_samples, cfg.max_moves) < 1 or cfg.opening_min > cfg.opening_max:
            raise ValueError("samples, grad_samples, max_moves must be >= 1 and opening_min <= opening_max")
        if min(cfg.t_sel, cfg.t_back, cfg.t_learn, cfg.opening_temp) <= 0:
            raise ValueError("temperatures must be > 0")
        if cfg.baseline_scale < 0:
            raise ValueError("baseline_scale must be >= 0 (0: no baseline)")
        if not 0.0 <= cfg.lam <= 1.0:
            raise ValueError("lam must be in [0, 1]")
        if cfg.lam < 1.0 and cfg.baseline_scale == 0:
            raise ValueError("lam < 1 needs baseline_scale > 0 (the searched values it bootstraps from)")
        for name in ("value_weight", "strap_weight"):
            if getattr(cfg, name) < 0 or (getattr(cfg, name) > 0 and cfg.baseline_scale == 0):
                raise ValueError(f"{name} must be >= 0, and > 0 needs baseline_scale > 0 (its value scale)")
        if cfg.pg_weight < 0 or cfg.pg_weight == cfg.strap_weight == 0:
            raise ValueError("pg_weight must be >= 0, and pg_weight = strap_weight = 0 learns nothing")
        if cfg.widen_k0 < 0 or not cfg.prior_beta >= 0:
            raise ValueError("widen_k0 and prior_beta must be >= 0 (0: no widening, no progressive bias)")
        return cfg


@dataclass
class GameOutcome:
    moves: list  # USI strings from the start position
    winner: str | None  # "b", "w" or None
    reason: str
    learned_moves: int = 0  # moves with an eligibility
    nodes: int = 0  # positions evaluated by the searches
    samples: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # CPU time of the playing process during the game (all its threads)
    log_pi: list = field(default_factory=list)  # (side "b"/"w", log pi_a(a_t), baseline b_t) of each learned move
    leaf_mismatch: float = 0.0  # largest |recomputed - stored| leaf value (should be ~0)
    lam: float = 1.0  # the advantage lambda the game was learned with

    def reward(self, side: str) -> float:
        return 0.0 if self.winner is None else (1.0 if self.winner == side else -1.0)

    def advantages(self) -> list:
        """A_t of each learned move, in log_pi order (A_t = b_{t+1} - b_t + lam * A_{t+1} per side, b_n = r)."""
        out = [0.0] * len(self.log_pi)
        for side in "bw":
            nxt_b, nxt_a = self.reward(side), 0.0
            for i in range(len(self.log_pi) - 1, -1, -1):
                s, _, b = self.log_pi[i]
                if s == side:
                    nxt_a = out[i] = nxt_b - b + self.lam * nxt_a
                    nxt_b = b
        return out

    def pg_loss(self) -> float:
        """Surrogate loss -mean_t A_t log pi_a(a_t) (its gradient is -(1/L) sum A_t e(t), eq. 14)."""
        if not self.log_pi:
            return 0.0
        return -float(np.mean([a * lp for a, (_, lp, _) in zip(self.advantages(), self.log_pi)]))

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("log_pi")
        d["loss"] = self.pg_loss()
        return d


def opening_move(pos, weights, params, rng, temp, moves, values, flags):
    """A move drawn by exp(x/temp) over the one-ply (quiescence) values x of the children; None if none."""
    n, _ = expand(pos, weights, params, np.zeros(1, np.uint64), moves, values, flags)
    if n == 0:
        return None
    x = -values[:n] / temp
    p = np.exp(x - x.max())
    return int(moves[rng.choice(n, p=p / p.sum())])


class AdvantageSum:
    """sum_t A_t e(t) for one side (module docstring) without storing the e(t): a trace Z = sum_t lam^(n-1-t) e(t)
    (row 0) and the result-free part P (row 1), so that the sum is r * Z + P once the result r is known.
    Before each move j: P += (1 - lam) b_j Z, Z *= lam; then e(j) is added with scales (1, -b_j)."""

    def __init__(self, n_weights: int, lam: float):
        self.rows = np.zeros((2, n_weights))
        self.lam = lam

    def clear(self) -> None:
        self.rows[:] = 0.0

    def scales_for_move(self, b: float) -> tuple:
        """Advance the trace to a new own move with baseline b; the row scales for its e(t)."""
        if self.lam < 1.0:
            z, p = self.rows
            p += (1.0 - self.lam) * b * z
            z *= self.lam
        return 1.0, -b

    def total(self, r: float):
        """The side's sum_t A_t e(t) for game result r (+1 / -1 / 0)."""
        return r * self.rows[0] + self.rows[1]


class SelfPlayer:
    """Plays self-play games with one set of weights (and, under progressive widening, one move prior); keeps the
    searcher and gradient scratch between games."""

    def __init__(self, weights, cfg: SelfPlayConfig, seed: int = 0, prior=None):
        self.cfg = cfg
        self.weights = weights
        params = make_params(
            qsearch_depth=cfg.qdepth,
            entering_rule=declaration_rule_code(cfg.declaration_rule),
            qsearch_see=cfg.qsearch_see,
        )
        self.adapter = ShogiAdapter(weights, params)  # its params carry P_PP_ZERO for the weights
        # the length cap is handled in play() (a draw or adjudicated by the searched value)
        self.rules = adjudicate.GameRules(cfg.declaration_rule, max_moves=0, auto_declare=True)
        self.searcher = Searcher(
            self.adapter,
            SearchOptions(
                threads=1,
                hash_mb=cfg.hash_mb,
                t_sel=cfg.t_sel,
                t_back=cfg.t_back,
                graph=False,
                reuse=True,
                seed=seed,
                widen_k0=cfg.widen_k0,
                prior_beta=cfg.prior_beta,
            ),
        )
        self.set_prior(prior)
        self.tg: pg.TreeGradient | None = None  # eligibility scratch, sized to the search's pool
        self._buf = (np.zeros(MAX_MOVES, np.int32), np.zeros(MAX_MOVES, np.float64), np.zeros(MAX_MOVES, np.int8))

    def set_weights(self, weights):
        self.weights = weights
        self.adapter.weights = weights
        self.searcher.clear()

    def set_prior(self, model) -> None:
        """The move prior (moveprior.py's model array; None: none) progressive widening orders moves by; without
        widening (widen_k0 = 0) the searches use no prior."""
        self.adapter.move_model = model if self.cfg.widen_k0 > 0 else None
        self.searcher.clear()

    def play(self, seed: int, grads: dict, prior: PriorGradient | None = None) -> GameOutcome:
        """One game; grads = {"b": AdvantageSum, "w": AdvantageSum} (cleared by the caller) receive each side's
        eligibilities, `prior` (cleared by the caller) the move prior's target at each learned move."""
        cfg = self.cfg
        start, cpu_start = time.perf_counter(), time.process_time()
        rng = np.random.default_rng(seed)
        srng = np.array([rng.integers(1, 2**63)], np.uint64)
        self.searcher.options.seed = int(rng.integers(0, 2**31))
        self.searcher.clear()
        board = Board()
        out = GameOutcome([], None, "", log_pi=[], lam=cfg.lam)
        for _ in range(int(rng.integers(cfg.opening_min, cfg.opening_max + 1))):
            m = opening_move(board.pos, self.weights, self.adapter.params, rng, cfg.opening_temp, *self._buf)
            if m is None:
                break
            board.push_code(m)
            out.moves.append(move_to_usi(m))
        losing_streak = {"b": 0, "w": 0}

        def turn(board: Board) -> Verdict | None:
            """Search; end the game at the length cap or by resignation, else play the learner's move."""
            side = "b" if board.turn == 0 else "w"
            other = "w" if side == "b" else "b"
            res = self.searcher.search(board.pos, Limits(samples=cfg.samples, stop_on_proven=True))
            out.nodes += res.nodes
            out.samples += res.samples
            if board.ply >= cfg.max_moves:
                if cfg.adjudicate_cp > 0 and abs(res.value) >= cfg.adjudicate_cp:
                    return Verdict(side if res.value > 0 else other, "adjudication")
                return Verdict(None, "max-moves")
            if res.value <= -MATE_THRESHOLD:
                return Verdict(other, "resign")
            losing_streak[side] = losing_streak[side] + 1 if cfg.resign_cp > 0 and res.value <= -cfg.resign_cp else 0
            if cfg.resign_cp > 0 and losing_streak[side] >= cfg.resign_moves:
                return Verdict(other, "resign")
            move = self._learn_move(board, res, rng, srng, grads[side], side, out, prior)
            board.push_code(move)
            out.moves.append(move_to_usi(move))
            return None

        verdict = adjudicate.play_out(board, self.rules, turn)
        out.winner, out.reason = verdict.winner, verdict.reason
        out.seconds = time.perf_counter() - start
        out.cpu_seconds = time.process_time() - cpu_start
        return out

    def _learn_move(self, board, res, rng, srng, grad: AdvantageSum, side, out, prior: PriorGradient | None) -> int:
        """The move to play: drawn from pi_a (eq. 12-13) with its eligibility added to grad and pi_a over the
        root's children given to `prior` as its target; the best move when the root is proven (no gradient
        there)."""
        cfg = self.cfg
        pool = self.searcher.pool
        assert pool is not None  # the move was searched
        tree = pool.tree
        if res.value >= MATE_THRESHOLD:
            return int(res.best_move)
        edges, p = root_policy(tree, 0, cfg.t_learn)
        b = float(np.tanh(res.value / (2.0 * cfg.baseline_scale))) if cfg.baseline_scale > 0 else 0.0
        db_de = (1.0 - b * b) / (2.0 * cfg.baseline_scale) if cfg.baseline_scale > 0 else 0.0
        a = int(rng.choice(len(p), p=p / p.sum()))
        capacity = pool.node_capacity
        if self.tg is None or self.tg.capacity != capacity:
            self.tg = pg.TreeGradient(capacity)
        tg = self.tg
        if cfg.pg_weight > 0:
            scales = tuple(cfg.pg_weight * x for x in grad.scales_for_move(b))
            _, worst = tg.shogi_eligibility(
                tree,
                0,
                board.pos,
                self.weights,
                cfg.qdepth,
                int(edges[a]),
                cfg.method,
                cfg.t_back,
                cfg.t_learn,
                cfg.mode,
                cfg.grad_samples,
                cfg.clip,
                srng,
                grad.rows,
                scales,
                value_coef=cfg.value_weight * db_de,
                see_prune=cfg.qsearch_see,
                pp_zero=self.adapter.pp_zero,
            )
            out.leaf_mismatch = max(out.leaf_mismatch, worst)
        if cfg.strap_weight > 0:  # result-free: the P row (AdvantageSum.total = r * Z + P)
            tg.shogi_strap(
                tree,
                0,
                int(pool.ctl[layout.C_NODES]),
                board.pos,
                self.weights,
                cfg.qdepth,
                cfg.baseline_scale,
                cfg.strap_weight,
                grad.rows[1],
                see_prune=cfg.qsearch_see,
                pp_zero=self.adapter.pp_zero,
            )
        if prior is not None:
            prior.add(board.pos, tree[layout.T_EMOVE][edges], p)
        out.learned_moves += 1
        out.log_pi.append((side, float(np.log(max(p[a], 1e-300))), b))
        return int(tree[layout.T_EMOVE][edges[a]])


def record_bytes(outcome: GameOutcome, event: str = "selfplay") -> tuple:
    """(CSA, KIF) file contents of a self-play game (learn/match/records.py writers), as bytes."""
    loser = None if outcome.winner is None else ("w" if outcome.winner == "b" else "b")
    reason = {"adjudication": "resign"}.get(outcome.reason, outcome.reason)
    rec = ShogiRecord(
        "selfplay",
        "selfplay",
        None,
        outcome.moves,
        [0.0] * len(outcome.moves),
        outcome.winner,
        reason,
        loser,
        time.strftime("%Y/%m/%d %H:%M:%S"),
        event=event,
        comment=f"reason {outcome.reason}",
    )
    return write_csa(rec).encode(), write_kif(rec).encode(KIF_ENCODING, errors="replace")
