"""The Go player: which move to play (search setup, playout counts, pass and resignation rules) and the
analysis data, for any front-end (usi_engine/gtp.py speaks GTP on top of it).

Resignation: after at least RESIGN_MIN_PLAYOUTS playouts, when the root winrate is below `resign`.
Passing: when the opponent has just passed and the dead-stone-aware score estimate (GoBoard.final_score,
the same one GTP `final_score` answers) says we win, we pass at once; when the search proposes a pass that
the estimate says loses, we play the best other move instead (the tree scores passes by Tromp-Taylor
with every stone alive, a referee removes dead stones).

Start-up: `warm_up()` loads the search and scoring kernels from numba's cache, or compiles them on a first
start (tens of seconds), with the player's own search settings and a second search after a move, so that
no timed move pays for a compile (tree reuse included).
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from . import layout as L
from .goboard import GoBoard

if TYPE_CHECKING:
    from usi_engine.search.searcher import Searcher

RESIGN_MIN_PLAYOUTS = 2000
WARMUP_SIZE = 5
WARMUP_SAMPLES = 2
WARMUP_SCORE_PLAYOUTS = 4
PLAYOUT_MOVE_DRAWS = 1000  # playouts whose first move playout_moves reports (Pachi draws as many)
# RAVE's prior weight, virtual MC and AMAF visits of the heuristic prior H (seed 000 eq. 49, 51), by board size:
# on large boards (playout.LARGE_BOARD and up) MC values of opening moves are noise at a few thousand playouts
# per move, so the prior's knowledge (open corners, the third line) must outweigh them for longer.
# With the learned move prior (moveprior.py, large boards) its knowledge leads the search for longer still.
PRIOR_VISITS_SMALL, PRIOR_AMAF_SMALL = 10.0, 20.0
PRIOR_VISITS_LARGE, PRIOR_AMAF_LARGE = 50.0, 50.0
PRIOR_VISITS_MOVES, PRIOR_AMAF_MOVES = 400.0, 400.0
# RAVE's bias b (seed 000 eq. 47) by board size: b^2 = 1/4000 (~ the hand schedule's k = 1000) on large boards; on
# small boards a larger b hands the children over to their MC values sooner (against Pachi at 2 s/move on 9x9: 35 of
# 100 with 0.03 against 26 of 100 with 0.016, docs/go.md "Against Pachi 12.90").
RAVE_BIAS_SMALL, RAVE_BIAS_LARGE = 0.03, 0.016
# How RAVE's prior weighs its children (PlayerSettings.prior_counts): "shared", one pair of virtual visit counts for
# every child (prior_weight); "per-move", each child its own, the sum of its prior terms' (game._prior_experience:
# the heuristic rule's, the learned move prior's 20 + 300 sqrt(P)); "auto", per-move below LARGE_BOARD (Pachi's form
# of the 9x9 move prior, measured there) and shared from it (the 19x19 prior's measured form).
PRIOR_COUNTS = ("auto", "shared", "per-move")
# How RAVE picks the children it simulates at an expansion (PlayerSettings.rave_children; index = game.RAVE_UNIFORM,
# game.RAVE_POLICY, game.RAVE_NONE, game.RAVE_TOP): drawn uniformly, the moves the playout policy would start a playout
# from the node with, none (the expansion only sets priors; with expand_visits the search plays from the node itself),
# or the children of the highest prior.
RAVE_CHILDREN = ("uniform", "policy", "none", "top")


@dataclass
class PlayerSettings:
    """Search and play settings (the GTP command line's options)."""

    policy: str = "rave"  # SearchOptions.policy: softmax (MCSS), uct or rave
    threads: int = 1
    hash_mb: float = 256.0
    playouts: int | None = None  # children evaluated per move (None: time only)
    leaf_playouts: int = 1  # playouts per child for softmax/uct leaves (K)
    rave_playouts: int = 4  # RAVE: children given a playout per expansion (+ tactical ones; 0 = all)
    rave_children: str = "uniform"  # RAVE: drawn uniformly, by the playout policy ("policy"), "none" or "top"
    expand_after: int = 0  # RAVE: playouts from a leaf itself until its edge has this many, then expand (0: at once)
    # RAVE progressive widening: a node's children in prior order take part in selection, the first
    # widen + floor(log_growth(1 + N / widen_visits)) after N real visits (0: all of them)
    widen: int = 0
    widen_visits: float = 40.0
    widen_growth: float = 1.4
    t_sel: float = 300.0
    t_back: float = 300.0
    c_uct: float = 300.0
    c_rave: float = 0.0
    rave_bias: float | None = None  # RAVE: bias b of seed 000 eq. 47 (None: by board size, bias)
    amaf_distance: float = 0.0  # RAVE: AMAF credit weights from 1 + d after a node down to 1 (Pachi's distance_rave)
    graph: bool = True
    seed: int = 0
    resign: float = 0.05  # resign below this winrate (0 = never)
    leaf: str = "playouts"  # softmax/uct leaf value: "playouts" or "learned" (usi_engine/go/value.py)
    prior_mix: float = 0.0  # RAVE prior: weight of the learned value against the heuristic prior
    td_share: float = 0.0  # Dyna-2: share of each move's time spent on TD search before the tree search
    value_weights: str | None = None  # Go value weight file (None: the shipped one for the board size)
    # playout rule 5: "on" MoGo's 3x3 patterns around the last move, "off", or "moggy" Pachi's patterns drawn by their
    # gammas around the last two moves (moggy3.py)
    playout_patterns: str = "on"
    playout_tactics: bool = False  # playouts use the local tactics: 2 liberties, nakade, ko (playout.py rules 0, 3, 4)
    playout_softmax: bool = False  # playouts' random rule draws by the move model's 3x3 gammas (softplayout.py)
    playout_softmax_beta: float = 1.0  # exponent of those gammas (gamma ** beta; 0 = uniform)
    playout_ladders: bool = False  # playouts' atari escapes (rule 1) do not run into a working ladder
    # playouts refuse bad single-stone self-ataris (tactics.bad_selfatari): "off", "on", or "redirect" (and play an
    # approach move instead in the random rule)
    playout_selfatari: str = "off"
    # playouts may play a killing sacrifice: 2-6 stones in atari that leave the opponent a dead eye space
    # (tactics.killing_sacrifice)
    playout_sacrifice: bool = False
    # playouts answer the last move's ataris and two-liberty blocks in Pachi's form (tactics.moggy_atari_moves,
    # moggy_two_lib_moves): "mogo" or "pachi"
    playout_local: str = "mogo"
    # playouts play the last good reply to the previous move or two when it is still playable, learned from the
    # search's own playouts (Baier & Drake's LGRF-2; playout.POLICY_LGRF)
    playout_lgrf: bool = False
    playout_weights: str | None = None  # softmax playouts with these shape weights (learn go-balance) instead
    prior_patterns: bool = True  # RAVE prior: PRIOR_PATTERN for pattern moves next to the last move
    prior_ladders: bool = False  # RAVE prior: PRIOR_LADDERED for escapes into a working ladder
    prior_moves: float = 1.0  # RAVE prior (large boards): weight of the learned move prior (moveprior.py)
    prior_moves_small: float = 1.0  # the same below LARGE_BOARD, with the shipped 9x9 model
    move_model: str | None = None  # learned move prior file (None: the shipped one)
    prior_visits: float | None = None  # RAVE prior: virtual MC visits (None: by board size, prior_weight)
    prior_amaf: float | None = None  # RAVE prior: virtual AMAF visits (None: by board size, prior_weight)
    prior_counts: str = "auto"  # RAVE prior: "shared" virtual visits for every child, "per-move", or by board size
    prior_moves_amaf: float = 0.0  # per-move counts: share of the move prior's visits that are AMAF visits too

    def per_move_counts(self, size: int) -> bool:
        """Does each child of RAVE's prior carry its own virtual visits on a size x size board?"""
        from .playout import LARGE_BOARD

        if self.prior_counts == "auto":
            return size < LARGE_BOARD
        return self.prior_counts == "per-move"

    def moves_weight(self, size: int) -> float:
        """Weight b of the learned move prior on a size x size board (0: the heuristic prior alone)."""
        from .playout import LARGE_BOARD

        return self.prior_moves if size >= LARGE_BOARD else self.prior_moves_small

    def bias(self, size: int) -> float:
        """RAVE's bias b of seed 000 eq. 47 on a size x size board."""
        from .playout import LARGE_BOARD

        if self.rave_bias is not None:
            return self.rave_bias
        return RAVE_BIAS_LARGE if size >= LARGE_BOARD else RAVE_BIAS_SMALL

    def prior_weight(self, size: int) -> tuple[float, float]:
        """(virtual MC visits, virtual AMAF visits) of RAVE's prior on a size x size board: every child's under
        shared counts, the heuristic prior's base (scaled by each rule's factor) under per-move counts, where the
        learned move prior brings its own visits."""
        from .playout import LARGE_BOARD

        large = size >= LARGE_BOARD
        visits = PRIOR_VISITS_LARGE if large else PRIOR_VISITS_SMALL
        amaf = PRIOR_AMAF_LARGE if large else PRIOR_AMAF_SMALL
        if self.moves_weight(size) > 0 and not self.per_move_counts(size):
            visits, amaf = PRIOR_VISITS_MOVES, PRIOR_AMAF_MOVES
        return (
            visits if self.prior_visits is None else self.prior_visits,
            amaf if self.prior_amaf is None else self.prior_amaf,
        )

    def uses_value(self) -> bool:
        return self.leaf == "learned" or self.prior_mix > 0 or self.td_share > 0


class GoPlayer:
    """Chooses moves and streams analysis for positions of a GoBoard; one search at a time."""

    def __init__(self, settings: PlayerSettings):
        self.settings = settings
        self.searcher: Searcher | None = None
        self._value_size: int | None = None  # board size the adapter's learned value was loaded for
        self.ready = threading.Event()  # set once warm_up has run

    # --- search setup ------------------------------------------------------------------------------
    def _searcher(self, size: int) -> Searcher:
        from .game import (
            P_MOVES_AMAF,
            P_MOVES_EVEN,
            P_MOVES_WINS,
            P_PRIOR_BASE_AMAF,
            P_PRIOR_BASE_N,
            P_PRIOR_MOVES,
            moves_form,
        )

        if self.searcher is not None and self.searcher.options.prior_counts != self.settings.per_move_counts(size):
            # the pool's per-edge prior counts exist or not by board size (--prior-counts auto): a new searcher
            self.searcher, self._value_size = None, None
        if self.searcher is None:
            from usi_engine.search.searcher import Searcher
            from usi_engine.search.settings import SearchOptions

            from .game import LEAF_LEARNED, LEAF_PLAYOUTS, GoAdapter, default_params

            s = self.settings
            leaf = LEAF_LEARNED if s.leaf == "learned" else LEAF_PLAYOUTS
            gammas = None
            softmax = s.playout_softmax or s.playout_weights is not None
            if softmax:  # a missing or bad model or weights file raises: the option asks for these playouts
                from .softplayout import playout_table, weights_table

                if s.playout_weights is not None:
                    gammas = weights_table(s.playout_weights, s.playout_softmax_beta)
                else:
                    gammas = playout_table(s.move_model, s.playout_softmax_beta)
            adapter = GoAdapter(
                size,
                default_params(
                    playouts=s.leaf_playouts,
                    rave_playouts=s.rave_playouts,
                    rave_children=RAVE_CHILDREN.index(s.rave_children),
                    leaf=leaf,
                    prior_mix=s.prior_mix,
                    playout_patterns=s.playout_patterns != "off",
                    playout_moggy=s.playout_patterns == "moggy",
                    playout_tactics=s.playout_tactics,
                    playout_ladders=s.playout_ladders,
                    playout_selfatari=s.playout_selfatari != "off",
                    playout_redirect=s.playout_selfatari == "redirect",
                    playout_sacrifice=s.playout_sacrifice,
                    playout_local=s.playout_local == "pachi",
                    playout_lgrf=s.playout_lgrf,
                    playout_softmax=softmax,
                    prior_patterns=s.prior_patterns,
                    prior_ladders=s.prior_ladders,
                    prior_moves=s.prior_moves,
                    prior_counts=s.per_move_counts(size),
                    order_prior=s.widen > 0,
                ),
                playout_gammas=gammas,
            )
            self.searcher = Searcher(
                adapter,
                SearchOptions(
                    threads=s.threads,
                    hash_mb=s.hash_mb,
                    t_sel=s.t_sel,
                    t_back=s.t_back,
                    policy=s.policy,
                    c_uct=s.c_uct,
                    c_rave=s.c_rave,
                    rave_bias=s.bias(size),
                    amaf_distance=s.amaf_distance,
                    graph=s.graph,
                    seed=s.seed,
                    prior_counts=s.per_move_counts(size),
                    expand_visits=s.expand_after,
                    widen_k0=s.widen,
                    widen_a=s.widen_visits,
                    widen_b=s.widen_growth,
                ),
            )
        self.searcher.adapter.size = size
        options = self.searcher.options
        options.prior_visits, options.prior_amaf = self.settings.prior_weight(size)
        options.rave_bias = self.settings.bias(size)
        params = self.searcher.adapter.params  # the heuristic prior's base under per-move counts
        params[P_PRIOR_BASE_N], params[P_PRIOR_BASE_AMAF] = options.prior_visits, options.prior_amaf
        params[P_PRIOR_MOVES] = self.settings.moves_weight(size)
        params[P_MOVES_EVEN], params[P_MOVES_WINS] = moves_form(size)  # Pachi's constants by board size
        params[P_MOVES_AMAF] = self.settings.prior_moves_amaf
        if self._value_size != size:
            self._load_value(size)
        return self.searcher

    def _load_value(self, size: int) -> None:
        """Give the adapter the learned value for this board size (when an option uses it); a size without a
        weight file plays on without it, saying so on stderr."""
        from .value import read_value_weights, shipped_weights

        assert self.searcher is not None
        self._value_size = size
        adapter = self.searcher.adapter
        adapter.clear_value_weights()
        self._load_move_model(size)
        if self.settings.uses_value():
            path = self.settings.value_weights or shipped_weights(size)
            try:
                adapter.set_value_weights(read_value_weights(path, size)[0])
            except ValueError as e:
                print(f"learned value off: {e}", file=sys.stderr)

    def _load_move_model(self, size: int) -> None:
        """Give the adapter the learned move prior when --prior-moves (large boards) or --prior-moves-small asks
        for it; a missing or bad file plays on without it, saying so on stderr."""
        from .moveprior import read_model, shipped_model

        assert self.searcher is not None
        model = None
        if self.settings.moves_weight(size) > 0:
            path = self.settings.move_model or shipped_model(size)
            try:
                model = read_model(path)[0]
            except ValueError as e:
                print(f"learned move prior off: {e}", file=sys.stderr)
        self.searcher.adapter.set_move_model(model)

    def warm_up(self) -> None:
        """Load or compile every kernel a move needs (see the module docstring); sets `ready` even on error."""
        try:
            from usi_engine.search.settings import Limits

            board = GoBoard(WARMUP_SIZE, 0.5)
            board.final_score(playouts=WARMUP_SCORE_PLAYOUTS)
            searcher = self._searcher(WARMUP_SIZE)
            result = searcher.search(board.pos, Limits(samples=WARMUP_SAMPLES))
            if result.best_move is not None:
                board.play(board.to_move, board.vertex(result.best_move))
                searcher.search(board.pos, Limits(samples=WARMUP_SAMPLES))
            if self.settings.td_share > 0:  # the TD-search kernels too
                from .shapes import n_weights, shape_tables

                searcher.adapter.set_value_weights(np.zeros(n_weights(shape_tables(WARMUP_SIZE))))
                searcher.adapter.td_think(board.pos, 0.001)
                self._value_size = None
            searcher.clear()
        finally:
            self.ready.set()

    def new_game(self) -> None:
        """Forget the search tree."""
        if self.searcher is not None:
            self.searcher.clear()
            self.searcher.adapter.reset_short_term()

    # --- moves -------------------------------------------------------------------------------------
    @staticmethod
    def expected_moves_left(board: GoBoard) -> float:
        """Moves `board`'s side to move still has to play (for the time plan)."""
        return max(1.0, 0.5 * (0.75 * board.size * board.size - board.move_number / 2.0))

    def choose_move(self, board: GoBoard, colour: int, seconds: float | None, cleanup: bool = False) -> int | None:
        """The move for `colour` (a point index or L.PASS), or None to resign; searches `seconds` (None: no
        time limit, the playout count must end it), counted from this call: waiting for the kernels and the
        dead-stone estimate after a pass come out of it. `cleanup`: capture dead stones before passing
        (kgs-genmove_cleanup)."""
        start = time.monotonic()
        pos = position_for(board, colour)
        self.ready.wait()
        if board.passes >= 1 and not cleanup and self._estimate_wins(board, colour):
            return L.PASS
        if seconds is not None:
            seconds = max(0.0, seconds - (time.monotonic() - start))
        result = self._search(board.size, pos, seconds, multipv=L.BOARD_CAP + 1)
        if result.best_move is None:  # the time went on loading the kernels: expand the root at least
            from usi_engine.search.settings import Limits

            result = self._searcher(board.size).search(pos, Limits(samples=1), multipv=L.BOARD_CAP + 1)
        if result.best_move is None:  # the game is over (two passes): nothing to search
            return L.PASS
        s = self.settings
        scale = self._searcher(board.size).adapter.value_scale
        if s.resign > 0 and result.children >= RESIGN_MIN_PLAYOUTS and self.winrate(result, scale) < s.resign:
            return None
        legal = self.legal_choices(board, colour, result)
        move = legal[0]
        if move == L.PASS and len(legal) > 1:
            dead_opponent = cleanup and any(st == "dead" and c != colour for st, c, _ in board.statuses())
            if dead_opponent or not self._estimate_wins(board, colour):
                move = legal[1]
        return move

    @staticmethod
    def legal_choices(board: GoBoard, colour: int, result) -> list[int]:
        """The move to play and its fallback: the search's best root move (its best move, then the root moves in
        rank order) that `colour` may play on `board`, with the pass before it when the pass ranks first and after
        it otherwise; [PASS] when no move is legal. A node reached by a transposition carries the children its
        first path generated, so under another game history one of them may repeat a position (positional
        superko): the move played is the best legal one."""
        for m in [result.best_move] + [r.move for r in result.root]:
            if m != L.PASS and board.is_legal(colour, board.vertex(m)):
                return [L.PASS, m] if result.best_move == L.PASS else [m, L.PASS]
        return [L.PASS]

    def _search(self, size, pos, seconds, multipv):
        from usi_engine.search.settings import Limits

        searcher = self._searcher(size)
        start = time.monotonic()
        searcher.adapter.update_ownership(pos)  # the move prior's ownership context, when its model uses one
        if seconds is not None:
            seconds = max(0.0, seconds - (time.monotonic() - start))
        if self.settings.td_share > 0 and seconds is not None:  # Dyna-2: TD search first
            think = self.settings.td_share * seconds
            searcher.adapter.td_think(pos, think)
            seconds -= think
        limits = Limits(time_ms=None if seconds is None else 1000.0 * seconds, children=self.settings.playouts)
        return searcher.search(pos, limits, multipv=multipv)

    @staticmethod
    def winrate(result, value_scale: float) -> float:
        """The root's winning probability for the side to move of a search result (values on `value_scale`)."""
        from usi_engine.search.values import is_proven

        if is_proven(result.value):
            return 1.0 if result.value > 0 else 0.0
        if result.root:
            return result.root[0].winrate
        return 0.5 + 0.5 * result.value / value_scale

    @staticmethod
    def _estimate_wins(board: GoBoard, colour: int) -> bool:
        """Does `colour` win the game as it stands, dead stones removed by playout ownership?"""
        score = board.final_score_value()
        return score > 0 if colour == L.BLACK else score < 0

    def playout_moves(self, board: GoBoard, colour: int, draws: int = PLAYOUT_MOVE_DRAWS) -> list[tuple[int, int]]:
        """The first moves of `draws` seeded playouts of the engine's own playout policy from the position, `colour`
        to move: (move, times drawn) pairs, most drawn first (GoGui's "Playout Moves", as Pachi's
        gogui-playout_moves; `learn go-playout-moves` compares two programs' policies with it)."""
        from .game import P_PLAYOUT_POLICY
        from .playout import NO_GAMMAS, first_move_counts

        pos = position_for(board, colour)
        self.ready.wait()
        adapter = self._searcher(board.size).adapter
        gammas = NO_GAMMAS if adapter.playout_gammas is None else adapter.playout_gammas
        policy = int(adapter.params[P_PLAYOUT_POLICY])
        return first_move_counts(pos, policy, draws, self.settings.seed + 1, gammas)

    # --- analysis ----------------------------------------------------------------------------------
    def analyze(self, board: GoBoard, colour: int, on_info: Callable, interval: float, multipv: int) -> Analysis:
        """Start an endless search for `colour`; `on_info(result)` gets its root statistics (SearchResult.root,
        best first) every `interval` s. Returns the running analysis (stop it with `Analysis.stop`)."""
        from usi_engine.search.settings import Limits

        pos = position_for(board, colour)
        self.ready.wait()
        searcher = self._searcher(board.size)
        searcher.adapter.update_ownership(pos)

        def report(result):
            if result.root:
                on_info(result)

        worker = threading.Thread(
            target=searcher.search,
            args=(pos, Limits(infinite=True)),
            kwargs=dict(on_info=report, multipv=multipv, info_interval=interval),
            daemon=True,
        )
        worker.start()
        return Analysis(searcher, worker)


@dataclass
class Analysis:
    """A running analysis search."""

    searcher: Searcher
    worker: threading.Thread

    def stop(self) -> None:
        """End the search and wait for it."""
        self.searcher.stop()
        self.worker.join()


def position_for(board: GoBoard, colour: int):
    """board.pos with `colour` to move (GTP allows either colour to move)."""
    pos = board.pos
    if pos[L.SIDE] != colour:
        pos = pos.copy()
        pos[L.SIDE], pos[L.KO] = colour, 0
    return pos
