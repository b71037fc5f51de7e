"""The one game-end adjudicator: a position and the game's rules -> who won and why.

Every place that plays a shogi game plays it through `play_out`: the referee of engine matches
(learn/match/shogi_game.py), the in-process arena (learn/match/arena.py) and self-play (learn/selfplay.py);
they differ only in how a move is found (an engine over pipes, an in-process player, a search whose tree is
learned from). The rules are the kernels of
position.py (`repetition`, `declaration`, `try_reached`, `game_length`), the same ones the search's terminal
rule (usi_engine/shogi_search/game.py `terminal_value`) calls, so a game ends where the search thinks it does.

A game is judged at two moments:
  `before_move(board, rules)`: the side to move has no legal move -> it loses ("mate"; in shogi this
      includes having no move without being in check); the game has reached `max_moves` plies (counted from
      the game's start: the SFEN move number + plies played, YaneuraOu's MaxMovesToDraw) -> draw
      ("max-moves"); with `auto_declare`, a winning entering-king declaration of the side to move ends the
      game as if it had declared ("declaration"; a 24-point draw is left to the player, who may play on).
  `after_move(board, rules)`: under the try rule, the mover's king reached the opponent king's start square
      -> the mover wins ("try"); the `repetitions`-th occurrence of the position -> draw ("repetition"), or
      a loss for the side that gave check with every move of the cycle ("perpetual-check").
`declare(board, rules)` judges an explicit declaration (USI `bestmove win`) by the side to move: a win,
a draw (24-point rule, 24-30 points) or a false declaration, which loses.
`play_out(board, rules, turn)` plays a game to its verdict: `before_move`, the mover's turn (a move played,
or the verdict of a resignation, an illegal move, a lost clock...), `after_move`, until one gives a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import position
from .board import GAME_REPETITIONS, Board, declaration_rule_code

DEFAULT_MAX_MOVES = 320  # game length in plies before a draw (0 = no limit)


@dataclass(frozen=True)
class GameRules:
    """The rules that end a game: entering-king rule (a DECLARATION_RULES name), length cap in plies (0 = no
    limit), occurrences of a position that end the game (4 = sennichite), and whether the side to move's
    winning declaration ends the game without being asked for (players that cannot say `win`)."""

    declaration_rule: str = "CSARule27"
    max_moves: int = DEFAULT_MAX_MOVES
    repetitions: int = GAME_REPETITIONS
    auto_declare: bool = False

    def __post_init__(self):
        declaration_rule_code(self.declaration_rule)  # ValueError naming the rules for an unknown one
        if self.max_moves < 0 or self.repetitions < 2:
            raise ValueError("max_moves must be >= 0 and repetitions >= 2")


@dataclass(frozen=True)
class Verdict:
    """The end of a game: winner "b" | "w" | None (draw), a reason word and a free-text detail."""

    winner: str | None
    reason: str
    detail: str = ""


def _side(colour: int) -> str:
    return "b" if colour == 0 else "w"


def before_move(board: Board, rules: GameRules) -> Verdict | None:
    """The verdict on the side to move before it plays, or None when it must move (module docstring)."""
    them = _side(1 - board.turn)
    if board.legal_move_codes().size == 0:
        return Verdict(them, "mate")
    if rules.max_moves and position.game_length(board.pos) >= rules.max_moves:
        return Verdict(None, "max-moves", f"{rules.max_moves} moves")
    if rules.auto_declare:
        verdict = declare(board, rules)
        if verdict.reason == "declaration":
            return verdict
    return None


def declare(board: Board, rules: GameRules) -> Verdict:
    """The verdict on a declaration by the side to move (USI `bestmove win`) under rules.declaration_rule."""
    us = _side(board.turn)
    judged = board.declaration_result(rules.declaration_rule)
    if judged == "win":
        return Verdict(us, "declaration", rules.declaration_rule)
    if judged == "draw":
        return Verdict(None, "declaration-draw", rules.declaration_rule)
    return Verdict(_side(1 - board.turn), "false-declaration", f"{rules.declaration_rule}: {board.sfen()}")


def after_move(board: Board, rules: GameRules) -> Verdict | None:
    """The verdict on the position a move just reached, or None when the game goes on (module docstring)."""
    mover = _side(1 - board.turn)
    to_move = _side(board.turn)
    if rules.declaration_rule == "TryRule" and position.try_reached(board.pos):
        return Verdict(mover, "try")
    repetition = position.repetition(board.pos, rules.repetitions)
    if repetition == position.REP_DRAW:
        return Verdict(None, "repetition")
    if repetition == position.REP_WIN:  # the mover checked with every move of the cycle
        return Verdict(to_move, "perpetual-check")
    if repetition == position.REP_LOSS:
        return Verdict(mover, "perpetual-check")
    return None


def play_out(board: Board, rules: GameRules, turn: Callable[[Board], Verdict | None]) -> Verdict:
    """Play the game on `board` (from its current position) to its verdict. `turn(board)` either plays the
    side to move's move on `board` and returns None, or returns the verdict that ends the game instead (a
    resignation, an illegal move, a lost clock, a declaration)."""
    while True:
        verdict = before_move(board, rules) or turn(board) or after_move(board, rules)
        if verdict is not None:
            return verdict
