"""The shogi referee: plays one game between two USI engines and judges it strictly.

The project's rules core (usi_engine.shogi.Board) is the referee's board and its adjudicator
(usi_engine/shogi/adjudicate.py, `play_out`) plays the game to its end. Rules enforced, in order, for the side
to move:
  adjudicate.before_move: no legal move -> loses ("mate"); game length reached (SFEN move number + plies
  >= max_moves, YaneuraOu MaxMovesToDraw) -> draw ("max-moves");
  then its engine's answer: no answer within the clock (+ margin) -> time loss ("hang" if it does not
  answer `stop` either, and the process is killed); process gone -> "crash"; `bestmove resign`;
  `bestmove win` judged by adjudicate.declare: win, draw (24-point rule, 24-30 points) or false
  declaration = loss; a move not in the legal list -> "illegal" loss.
After each move, adjudicate.after_move: under TryRule a king reaching the opponent king's start square
wins; the fourth occurrence of a position is a draw, or a loss for the side that gave check with every move
of the cycle. Both engines get `gameover win|lose|draw` from their own point of view.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from usi_engine.shogi import Board, adjudicate
from usi_engine.shogi.adjudicate import DEFAULT_MAX_MOVES, GameRules, Verdict
from usi_engine.shogi.board import DECLARATION_RULES

from .clock import RefereeClock, TimeControl
from .engines import EngineError
from .openings import Opening
from .outcome import GameResult, other_side
from .records import ShogiRecord

__all__ = ["DECLARATION_RULES", "DEFAULT_MAX_MOVES", "DEFAULT_STOP_GRACE_S", "ShogiGame", "ShogiRules"]
DEFAULT_STOP_GRACE_S = 1.0


@dataclass(frozen=True)
class ShogiRules:
    declaration_rule: str = "CSARule27"
    max_moves: int = DEFAULT_MAX_MOVES  # 0 = no limit
    stop_grace_s: float = DEFAULT_STOP_GRACE_S  # wait for `bestmove` after `stop` on a time loss

    def __post_init__(self):
        self.game_rules()  # ValueError for an unknown declaration rule or a negative length

    def game_rules(self) -> GameRules:
        """The adjudicator's rules (engines declare themselves with `bestmove win`)."""
        return GameRules(self.declaration_rule, self.max_moves)


def opening_board(opening: Opening) -> Board:
    """The opening's position; ValueError naming the opening when a move is illegal."""
    board = Board(opening.sfen)
    for move in opening.moves:
        try:
            board.push_usi(move)
        except ValueError as e:
            raise ValueError(f"opening {opening.label!r}: {e}") from None
    return board


def position_command(opening: Opening, moves: list) -> str:
    base = "position startpos" if opening.sfen is None else f"position sfen {opening.sfen}"
    return f"{base} moves {' '.join(moves)}" if moves else base


class ShogiGame:
    """One game; `play()` returns the GameResult and the record."""

    def __init__(
        self, index: int, engines: dict, opening: Opening, tc: TimeControl, rules: ShogiRules, first_is_black: bool
    ):
        self.index, self.engines, self.opening = index, engines, opening
        self.tc, self.rules, self.first_is_black = tc, rules, first_is_black
        self.board = opening_board(opening)
        self.moves = list(opening.moves)
        self.seconds = [0.0] * len(self.moves)
        self.slowest = {"b": 0.0, "w": 0.0}  # each side's longest answer, s
        self.game_rules = rules.game_rules()

    def play(self) -> tuple[GameResult, ShogiRecord]:
        started = time.monotonic()
        winner, reason, detail = self._run()
        self._send_gameover(winner)
        result = GameResult.of_game(self, winner, reason, detail, started)
        loser = None if winner is None else other_side(winner)
        record = ShogiRecord(
            self.engines["b"].name,
            self.engines["w"].name,
            self.opening.sfen,
            self.moves,
            self.seconds,
            winner,
            reason,
            loser,
            time.strftime("%Y/%m/%d %H:%M:%S"),
            comment=detail,
        )
        return result, record

    def _run(self) -> tuple[str | None, str, str]:
        """(winner or None, reason, detail) of the game."""
        for side in ("b", "w"):
            engine = self.engines[side]
            try:
                engine.ensure_started()
                engine.new_game()
            except EngineError as e:
                engine.kill()
                return other_side(side), e.kind if e.kind != "timeout" else "hang", str(e)
        clock = RefereeClock(self.tc)
        verdict = adjudicate.play_out(self.board, self.game_rules, lambda _board: self._turn(clock))
        return verdict.winner, verdict.reason, self.moves[-1] if verdict.reason == "try" else verdict.detail

    def _turn(self, clock: RefereeClock) -> Verdict | None:
        """Ask the side to move for a move and play it; the verdict when its answer ends the game."""
        side = "b" if self.board.turn == 0 else "w"
        engine = self.engines[side]
        allowance_s = clock.allowance_ms(side) / 1000.0
        asked = time.monotonic()
        try:
            tokens, elapsed = engine.go(position_command(self.opening, self.moves), clock.usi_go(), allowance_s)
        except EngineError as e:
            self.slowest[side] = max(self.slowest[side], time.monotonic() - asked)  # until the referee gave up
            if e.kind == "timeout" and engine.stop_search(self.rules.stop_grace_s):
                return Verdict(other_side(side), "time", f"no move within {allowance_s:.3f} s")
            engine.kill()
            reason = {"timeout": "hang", "crash": "crash"}.get(e.kind, "protocol")
            return Verdict(other_side(side), reason, str(e))
        self.slowest[side] = max(self.slowest[side], elapsed)
        if not clock.on_time(side, elapsed * 1000.0):
            return Verdict(other_side(side), "time", f"{elapsed:.3f} s > {allowance_s:.3f} s")
        move = tokens[0]
        if move == "resign":
            return Verdict(other_side(side), "resign")
        if move == "win":
            return adjudicate.declare(self.board, self.game_rules)
        if move not in self.board.legal_moves():
            return Verdict(other_side(side), "illegal", f"{move} in {self.board.sfen()}")
        clock.spend(side, elapsed * 1000.0)
        self.board.push_usi(move)
        self.moves.append(move)
        self.seconds.append(elapsed)
        return None

    def _send_gameover(self, winner: str | None) -> None:
        for side, engine in self.engines.items():
            if engine.proc is not None and engine.proc.alive():
                engine.gameover("draw" if winner is None else "win" if winner == side else "lose")
