"""In-process arena: shogi games between players of learn/match/players.py, no pipes, for strength experiments.

`python -m learn arena --player1 SPEC --player2 SPEC [--games N] ...` (docs/strength.md). A player SPEC is
`kind[:key=value,...]`:
  mcss       t (sets t_sel and t_back), t_sel, t_back, spread, policy (softmax|uct), c_uct, threads, hash (MB),
             graph (0|1), pick (root-policy temperature: 0 = best move; > 0 = sampled, as the learner plays),
             weights (this player's weight file: shipped name or path), and a per-move limit: samples,
             nodes or time (ms)  [default samples=1000]
  alphabeta  depth (1|2, default 2), qdepth (quiescence plies, default 8), weights
  material   (no keys)
every kind also takes name=... (default: the spec text).

Referee: the rules core's adjudicator (usi_engine/shogi/adjudicate.py), for the side to move, in this order:
  no legal move -> loses ("mate"); ply >= max_moves -> draw ("max-moves"); a winning entering-king
  declaration is available -> wins ("declaration": the referee declares for every player, so no player
  can forget to); the player's move: None -> loses ("resign"), not legal -> loses ("illegal"). After the
  move: under TryRule a king on the try square wins ("try"); the fourth occurrence of a position is a
  draw ("repetition") or a loss for the side that checked with every move of the cycle ("perpetual-check").
The players search under the same entering-king rule and length cap.

Openings: for every pair of games, `opening_plies` uniformly random legal moves from the start position
(seeded), re-drawn until the quiescence value of the result over the material table is within
`opening_balance` centipawns, so no game starts a piece down; each opening is played with both colours
(games 2k, 2k+1). Every game and player is seeded from --seed and the game index, so with samples/nodes
limits a run is reproducible whatever the load. Output: one line per game, then the learn/match summary
(W-L-D, score, trinomial and pentanomial Elo with 95 % intervals, LOS); --json writes it all.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass

from eval.make_material_weights import material_weights
from usi_engine.search.settings import POLICIES, Limits, SearchOptions
from usi_engine.shogi import Board, adjudicate
from usi_engine.shogi.adjudicate import DEFAULT_MAX_MOVES, GameRules, Verdict
from usi_engine.shogi.board import DECLARATION_RULES, declaration_rule_code
from usi_engine.shogi.sfen import move_to_usi
from usi_engine.shogi_eval.evalfile import load_weights
from usi_engine.shogi_search.game import make_params
from usi_engine.shogi_search.quiescence import DEFAULT_MAX_DEPTH as DEFAULT_QDEPTH
from usi_engine.shogi_search.quiescence import quiesce

from .match import Tally, format_summary, summarize
from .outcome import GameResult, other_side
from .players import AlphaBetaPlayer, MCSSPlayer, MaterialPlayer, Player

DEFAULT_OPENING_PLIES = 6
DEFAULT_OPENING_BALANCE = 150.0  # centipawns
OPENING_TRIES = 1000
GAME_SEED_STRIDE = 100003  # game seed = seed * stride + game index
DEFAULT_SAMPLES = 1000  # MCSS per-move limit when a spec gives none
DEFAULT_HASH_MB = 64.0
DEFAULT_AB_DEPTH = 2
MCSS_KEYS = {
    "t": float,
    "t_sel": float,
    "t_back": float,
    "spread": float,
    "policy": str,
    "c_uct": float,
    "threads": int,
    "hash": float,
    "graph": int,
    "samples": int,
    "nodes": int,
    "time": float,
    "pick": float,
    "weights": str,
}
AB_KEYS = {"depth": int, "qdepth": int, "weights": str}
KIND_KEYS = {"mcss": MCSS_KEYS, "alphabeta": AB_KEYS, "material": {}}


@dataclass(frozen=True)
class ArenaRules:
    max_moves: int = DEFAULT_MAX_MOVES  # 0 = no limit
    declaration_rule: str = "CSARule27"

    def __post_init__(self):
        self.game_rules()  # ValueError for an unknown declaration rule or a negative length

    def game_rules(self) -> GameRules:
        """The adjudicator's rules: the referee declares for the players."""
        return GameRules(self.declaration_rule, self.max_moves, auto_declare=True)


# --- player specs ----------------------------------------------------------------------------------------
def parse_spec(spec: str) -> tuple[str, dict]:
    """`kind:key=value,...` -> (kind, {key: typed value}); ValueError naming the bad part."""
    kind, _, rest = spec.strip().partition(":")
    if kind not in KIND_KEYS:
        raise ValueError(f"unknown player kind {kind!r} in {spec!r}; expected one of {', '.join(KIND_KEYS)}")
    keys = dict(KIND_KEYS[kind], name=str)
    values = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, text = item.partition("=")
        if not sep or key not in keys:
            raise ValueError(f"bad setting {item!r} for {kind}; keys: {', '.join(sorted(keys))}")
        try:
            values[key] = keys[key](text)
        except ValueError:
            raise ValueError(f"bad value for {key} in {spec!r}: {text!r}") from None
    return kind, values


def make_player(spec: str, weights, params) -> Player:
    """Build the player a spec describes (module docstring); `weights`/`params` go to searching players."""
    kind, v = parse_spec(spec)
    name = v.pop("name", spec)
    if "weights" in v:
        weights = load_weights(v.pop("weights"))
    if kind == "material":
        return MaterialPlayer(name)
    if kind == "alphabeta":
        return AlphaBetaPlayer(name, v.get("depth", DEFAULT_AB_DEPTH), weights, params, v.get("qdepth", DEFAULT_QDEPTH))
    if v.get("policy", "softmax") not in POLICIES:
        raise ValueError(f"unknown policy {v['policy']!r}; use one of {', '.join(POLICIES)}")
    t = v.get("t", SearchOptions.t_sel)
    options = SearchOptions(
        threads=v.get("threads", 1),
        hash_mb=v.get("hash", DEFAULT_HASH_MB),
        t_sel=v.get("t_sel", t),
        t_back=v.get("t_back", t),
        t_sel_spread=v.get("spread", 1.0),
        policy=v.get("policy", "softmax"),
        c_uct=v.get("c_uct", SearchOptions.c_uct),
        graph=bool(v.get("graph", 1)),
    )
    limit_keys = [k for k in ("samples", "nodes", "time") if k in v]
    if len(limit_keys) > 1:
        raise ValueError(f"give one of samples, nodes, time in {spec!r}")
    if limit_keys and v[limit_keys[0]] <= 0:
        raise ValueError(f"the {limit_keys[0]} limit must be positive in {spec!r}")
    limits = Limits(
        samples=v.get("samples", None if limit_keys else DEFAULT_SAMPLES),
        nodes=v.get("nodes"),
        time_ms=v.get("time"),
        stop_on_proven=True,
    )
    if v.get("pick", 0.0) < 0:
        raise ValueError(f"pick (root policy temperature) must be >= 0 in {spec!r}")
    return MCSSPlayer(name, options, limits, weights, params, pick=v.get("pick", 0.0))


# --- openings and the referee -----------------------------------------------------------------------------
def random_opening(rng: random.Random, plies: int, balance: float, material=None) -> list[str]:
    """`plies` random legal moves from the start position whose end is balanced (module docstring)."""
    material = material_weights() if material is None else material
    for _ in range(OPENING_TRIES):
        board, moves = Board(), []
        for _ in range(plies):
            legal = board.legal_moves()
            if not legal:
                break
            moves.append(rng.choice(legal))
            board.push_usi(moves[-1])
        if len(moves) == plies and board.legal_moves() and abs(quiesce(board.pos, material)[0]) <= balance:
            return moves
    raise ValueError(f"no balanced opening of {plies} plies within {balance} cp after {OPENING_TRIES} tries")


def play_in_process(
    players: dict[str, Player], board: Board, rules: ArenaRules, seed: int
) -> tuple[str | None, str, list[str]]:
    """Play one game between in-process players ({"b": Player, "w": Player}) on `board`, from its current
    position, refereed by adjudicate.play_out. Returns (winner "b"|"w"|None, reason, the players' moves in
    USI; an illegal move last, as its code in parentheses)."""
    for k, side in enumerate(("b", "w")):
        players[side].new_game(seed * 2 + k)
    moves: list[str] = []

    def turn(board: Board) -> Verdict | None:
        """The side to move's player moves; None (resignation) or an illegal move ends the game."""
        side = "b" if board.turn == 0 else "w"
        move = players[side].choose(board)
        if move is None:
            return Verdict(other_side(side), "resign")
        if not (board.legal_move_codes() == move).any():
            moves.append(f"({move})")
            return Verdict(other_side(side), "illegal")
        board.push_code(move)
        moves.append(move_to_usi(move))
        return None

    verdict = adjudicate.play_out(board, rules.game_rules(), turn)
    return verdict.winner, verdict.reason, moves


# --- the arena ----------------------------------------------------------------------------------------------
@dataclass
class ArenaConfig:
    player1: str
    player2: str
    games: int = 20
    seed: int = 1
    opening_plies: int = DEFAULT_OPENING_PLIES
    opening_balance: float = DEFAULT_OPENING_BALANCE
    rules: ArenaRules = ArenaRules()
    weights_path: str | None = None
    json_path: str | None = None

    def __post_init__(self):
        if self.games < 1:
            raise ValueError("games must be >= 1")
        if self.opening_plies < 0:
            raise ValueError("opening plies must be >= 0")


class Arena:
    """Plays `games` games player1 vs player2 in pairs of colours; results are player1's."""

    def __init__(self, config: ArenaConfig, out=sys.stdout):
        self.config, self.out = config, out
        weights = load_weights(config.weights_path)
        params = make_params(
            max_moves=config.rules.max_moves, entering_rule=declaration_rule_code(config.rules.declaration_rule)
        )
        self.players = (make_player(config.player1, weights, params), make_player(config.player2, weights, params))
        self.names = tuple(p.name for p in self.players)
        if self.names[0] == self.names[1]:
            raise ValueError("the two players need different names (add name=... to a spec)")
        self.tally = Tally()
        self.games: list[dict] = []
        self._material = material_weights()

    def opening(self, pair: int) -> list:
        rng = random.Random(self.config.seed * GAME_SEED_STRIDE + pair)
        return random_opening(rng, self.config.opening_plies, self.config.opening_balance, self._material)

    def play(self, index: int, opening: list) -> GameResult:
        first_is_black = index % 2 == 0
        p1, p2 = self.players
        players = {"b": p1, "w": p2} if first_is_black else {"b": p2, "w": p1}
        started = time.monotonic()
        board = Board()
        for move in opening:
            board.push_usi(move)
        winner, reason, moves = play_in_process(
            players, board, self.config.rules, self.config.seed * GAME_SEED_STRIDE + index
        )
        result = GameResult(
            index,
            first_is_black,
            winner,
            reason,
            plies=board.ply,
            opening=" ".join(opening),
            seconds=time.monotonic() - started,
        )
        self.games.append(
            dict(
                result.as_dict(),
                black=players["b"].name,
                white=players["w"].name,
                moves=moves,
                search={p.name: p.game_stats() for p in self.players if p.game_stats()},
            )
        )
        return result

    def run(self) -> dict:
        cfg = self.config
        started, cpu_started = time.monotonic(), time.process_time()
        self.out.write(
            f"arena {self.names[0]} vs {self.names[1]}: {cfg.games} games, {cfg.opening_plies} random "
            f"opening plies, max {cfg.rules.max_moves} plies, seed {cfg.seed}\n"
        )
        opening = []
        for index in range(cfg.games):
            if index % 2 == 0:
                opening = self.opening(index // 2)
            self.report(self.play(index, opening))
        summary = summarize(self.tally, self.names, None, 0.95, {})
        summary["seconds"] = round(time.monotonic() - started, 3)
        summary["cpu_seconds"] = round(time.process_time() - cpu_started, 3)
        summary["search"] = self.search_means()
        self.out.write(format_summary(summary) + "\n")
        for name, means in summary["search"].items():
            self.out.write(f"Search of {name} per move: " + ", ".join(f"{k} {v}" for k, v in means.items()) + "\n")
        if cfg.json_path:
            with open(cfg.json_path, "w", encoding="utf-8") as f:
                json.dump(
                    {
                        "player1": cfg.player1,
                        "player2": cfg.player2,
                        "seed": cfg.seed,
                        "opening_plies": cfg.opening_plies,
                        "max_moves": cfg.rules.max_moves,
                        "summary": summary,
                        "games": self.games,
                    },
                    f,
                    indent=1,
                )
        return summary

    def search_means(self) -> dict:
        """Per player: per-move means of the search statistics over all games (moves = total searches)."""
        out = {}
        for name in self.names:
            stats = [g["search"][name] for g in self.games if name in g["search"]]
            moves = sum(st["moves"] for st in stats)
            if moves:
                out[name] = {
                    "moves": moves,
                    **{k: round(sum(st[k] * st["moves"] for st in stats) / moves, 1) for k in stats[0] if k != "moves"},
                }
        return out

    def report(self, result: GameResult) -> None:
        self.tally.add(result)
        w, l, d = self.tally.wld()
        black, white = self.names if result.first_is_black else self.names[::-1]
        score = {None: "1/2-1/2", "b": "1-0", "w": "0-1"}[result.winner]
        self.out.write(
            f"game {result.index + 1:3d}/{self.config.games}: {black} vs {white}: {score} "
            f"({result.reason}, {result.plies} plies, {result.seconds:.1f} s) | {self.names[0]} "
            f"{w}-{l}-{d} {100 * (w + d / 2) / (w + l + d):.1f}%\n"
        )
        self.out.flush()


# --- command line -------------------------------------------------------------------------------------------
def add_arena_parser(sub) -> None:
    p = sub.add_parser(
        "arena",
        help="in-process shogi games between MCSS / alpha-beta / material players",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--player1", required=True, help="player spec (the one results are reported for)")
    p.add_argument("--player2", required=True, help="player spec")
    p.add_argument("--games", type=int, default=20, help="games (pairs of colours share an opening)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--opening-plies", type=int, default=DEFAULT_OPENING_PLIES)
    p.add_argument(
        "--opening-balance",
        type=float,
        default=DEFAULT_OPENING_BALANCE,
        help="max |quiescence material value| of an opening's end (cp)",
    )
    p.add_argument("--max-moves", type=int, default=DEFAULT_MAX_MOVES, help="draw at this ply (0 = none)")
    p.add_argument("--declaration-rule", choices=tuple(DECLARATION_RULES), default="CSARule27")
    p.add_argument("--weights", help="evaluation weights (.npz) for the searching players (default: shipped)")
    p.add_argument("--json", metavar="PATH", help="write the summary and every game as JSON")
    p.set_defaults(handler=run_arena)


def run_arena(a: argparse.Namespace) -> int:
    try:
        config = ArenaConfig(
            a.player1,
            a.player2,
            a.games,
            a.seed,
            a.opening_plies,
            a.opening_balance,
            ArenaRules(a.max_moves, a.declaration_rule),
            a.weights,
            a.json,
        )
        Arena(config).run()
    except (ValueError, OSError) as e:
        print(f"arena: error: {e}", file=sys.stderr)
        return 2
    return 0
