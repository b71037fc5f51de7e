"""Python face of the Go rules for GTP and tests: ``GoBoard`` over one ``pos`` array.

Vertices are GTP strings ("D4", "pass"; columns A..T without I, row 1 at the bottom, any case).
Colours are "b"/"black"/"w"/"white" (any case) or the layout codes BLACK/WHITE.

Dead stones (final_status / final_score) are estimated from playout ownership: from the final
position, ``playouts`` random playouts are run; a block is dead when its stones end up owned by the
opponent in more playouts than by its own colour (mean ownership from its own side < 0), and in
seki when it is alive and in most playouts its stones end in a block touching a neutral point
(a liberty neither side could fill without self-atari).
The score is then the Tromp-Taylor area score of the board without the dead stones, minus komi.
"""

import numpy as np

from usi_engine.go import board as kb
from usi_engine.go import layout as L
from usi_engine.go.playout import POLICY_PLAIN, move_cap, run_playouts, seed_rng
from usi_engine.go.workspace import new_workspace

COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"
DEFAULT_STATUS_PLAYOUTS = 400
DEAD_THRESHOLD = 0.0  # mean own-side ownership below this -> dead
SEKI_FRACTION = 0.5  # fraction of playouts a block ends in seki -> seki
_KO_RULES = {"positional": L.KO_POSITIONAL, "simple": L.KO_SIMPLE, "situational": L.KO_SITUATIONAL}


def parse_colour(colour) -> int:
    """BLACK or WHITE from "b"/"black"/"w"/"white" (any case) or the integer code."""
    if colour in (L.BLACK, L.WHITE) and not isinstance(colour, bool):
        return int(colour)
    text = str(colour).strip().lower()
    if text in ("b", "black"):
        return L.BLACK
    if text in ("w", "white"):
        return L.WHITE
    raise ValueError(f"invalid color: {colour!r}")


def vertex_str(move: int, size: int) -> str:
    """GTP vertex of a point index or PASS on a size x size board."""
    if move == L.PASS:
        return "pass"
    w = size + 1
    return f"{COLUMNS[move % w]}{move // w}"


def format_score(score: float) -> str:
    """GTP final_score text: "B+3.5", "W+2", "0"."""
    if score == 0:
        return "0"
    return f"{'B' if score > 0 else 'W'}+{abs(score):g}"


class GoBoard:
    """A Go game: board, side to move, history (for superko and undo), komi and rules."""

    def __init__(
        self,
        size: int = 9,
        komi: float = 7.0,
        ko_rule: str = "positional",
        suicide: bool = False,
        history: int = L.DEFAULT_HISTORY,
    ):
        if ko_rule not in _KO_RULES:
            raise ValueError(f"unknown ko rule {ko_rule!r}")
        self.pos = L.new_pos(size, komi, history, _KO_RULES[ko_rule], suicide)

    # --- basic properties ---------------------------------------------------------------------
    @property
    def size(self) -> int:
        return int(self.pos[L.SIZE])

    @property
    def komi(self) -> float:
        return int(self.pos[L.KOMI_MILLI]) / 1000.0

    @komi.setter
    def komi(self, value: float) -> None:
        self.pos[L.KOMI_MILLI] = int(round(float(value) * 1000))

    @property
    def to_move(self) -> int:
        return int(self.pos[L.SIDE])

    @to_move.setter
    def to_move(self, colour) -> None:
        self.pos[L.SIDE] = parse_colour(colour)

    @property
    def move_number(self) -> int:
        return int(self.pos[L.PLY])

    @property
    def passes(self) -> int:
        return int(self.pos[L.PASSES])

    def is_over(self) -> bool:
        return self.passes >= 2

    def stone(self, vertex: str) -> int:
        """EMPTY/BLACK/WHITE at a vertex."""
        p = self.parse_vertex(vertex)
        if p == L.PASS:
            raise ValueError("pass is not a point")
        return int(self.pos[L.BOARD + p])

    def moves(self) -> list:
        """(colour, vertex) of every move played, in order."""
        out = []
        for i in range(self.move_number):
            e = L.HIST + L.HIST_STRIDE * i
            out.append((int(self.pos[e + L.H_SIDE]), self.vertex(int(self.pos[e + L.H_MOVE]))))
        return out

    # --- vertices --------------------------------------------------------------------------------
    def parse_vertex(self, vertex: str) -> int:
        """Point index (or PASS) of a GTP vertex; ValueError when malformed or off the board."""
        text = str(vertex).strip().upper()
        if text == "PASS":
            return L.PASS
        if len(text) < 2 or text[0] not in COLUMNS or not text[1:].isdigit():
            raise ValueError(f"invalid coordinate: {vertex!r}")
        x, y = COLUMNS.index(text[0]), int(text[1:]) - 1
        if not (0 <= x < self.size and 0 <= y < self.size):
            raise ValueError(f"invalid coordinate: {vertex!r}")
        return L.point(self.size, x, y)

    def vertex(self, move: int) -> str:
        """GTP vertex of a point index or PASS."""
        return vertex_str(move, self.size)

    # --- moves -----------------------------------------------------------------------------------
    def play(self, colour, vertex: str, allow_superko: bool = False) -> None:
        """Play a move for `colour` (out of turn allowed, as in GTP: the side to move is switched
        first, which undo does not revert). ValueError on an illegal move (occupied, suicide,
        ko/superko) or bad input; the board is then unchanged. allow_superko accepts a move whose only
        fault is repeating an earlier position (superko), for moves a controller has already accepted."""
        c = parse_colour(colour)
        move = self.parse_vertex(vertex)
        probe = self.pos
        if c != probe[L.SIDE]:
            probe = probe.copy()
            probe[L.SIDE], probe[L.KO] = c, 0  # a simple-ko ban binds only the other player
        status = kb.move_status(probe, move)
        if status != kb.LEGAL and not (allow_superko and status == kb.SUPERKO):
            raise ValueError(f"illegal move: {self.vertex(move)} ({kb.STATUS_TEXT[status]})")
        if probe[L.PLY] >= probe[L.HIST_CAP] - 1:
            probe = L.grow_history(probe, 2 * int(probe[L.HIST_CAP]))
        kb.do_move(probe, np.int32(move))
        self.pos = probe

    def undo(self) -> None:
        """Take back the last move; ValueError when there is none."""
        if self.move_number == 0:
            raise ValueError("cannot undo")
        kb.undo_move(self.pos)

    def legal_moves(self) -> list:
        """GTP vertices of the legal moves of the side to move, "pass" last."""
        out = np.empty(L.BOARD_CAP + 1, dtype=np.int32)
        n = kb.gen_moves(self.pos, out)
        return [self.vertex(int(m)) for m in out[:n]]

    def is_legal(self, colour, vertex: str) -> bool:
        try:
            c, move = parse_colour(colour), self.parse_vertex(vertex)
        except ValueError:
            return False
        probe = self.pos.copy()
        if c != probe[L.SIDE]:
            probe[L.SIDE], probe[L.KO] = c, 0
        return kb.move_status(probe, move) == kb.LEGAL

    def key(self) -> int:
        return int(kb.pos_key(self.pos))

    # --- display ---------------------------------------------------------------------------------
    def to_string(self) -> str:
        """showboard-style diagram: X black, O white, . empty, row 1 at the bottom."""
        n = self.size
        letters = "   " + " ".join(COLUMNS[:n])
        lines = [letters]
        for y in range(n - 1, -1, -1):
            row = " ".join(".XO"[int(self.pos[L.BOARD + L.point(n, x, y)])] for x in range(n))
            lines.append(f"{y + 1:2d} {row} {y + 1}")
        lines.append(letters)
        side = "Black" if self.to_move == L.BLACK else "White"
        lines.append(f"{side} to move, komi {self.komi:g}, move {self.move_number}")
        return "\n".join(lines)

    # --- scoring ---------------------------------------------------------------------------------
    def area_score(self) -> float:
        """Black minus White Tromp-Taylor area minus komi, every stone counted alive."""
        return float(kb.area_score(self.pos))

    def ownership(self, playouts: int = DEFAULT_STATUS_PLAYOUTS, seed: int = 1):
        """(mean ownership per point in [-1, 1], +1 = Black; fraction of playouts in seki)."""
        own = np.zeros(L.BOARD_CAP, dtype=np.float64)
        seki = np.zeros(L.BOARD_CAP, dtype=np.float64)
        start = self.pos.copy()
        start[L.PASSES] = 0  # play on from a finished game: the passes only ended it
        run_playouts(start, new_workspace(), seed_rng(seed), playouts, move_cap(self.size), own, seki, POLICY_PLAIN)
        return own / playouts, seki / playouts

    def _blocks(self) -> list:
        """(colour, [points]) of every block on the board."""
        n, w = self.size, self.size + 1
        board = self.pos[L.BOARD : L.BOARD + L.BOARD_CAP]
        seen = set()
        blocks = []
        for y in range(n):
            for x in range(n):
                p = L.point(n, x, y)
                c = int(board[p])
                if c in (L.BLACK, L.WHITE) and p not in seen:
                    stones, todo = [], [p]
                    seen.add(p)
                    while todo:
                        s = todo.pop()
                        stones.append(s)
                        for q in (s + 1, s - 1, s + w, s - w):
                            if board[q] == c and q not in seen:
                                seen.add(q)
                                todo.append(q)
                    blocks.append((c, sorted(stones)))
        return blocks

    def statuses(self, playouts: int = DEFAULT_STATUS_PLAYOUTS, seed: int = 1) -> list:
        """("alive"|"dead"|"seki", colour, [points]) for every block, from playout ownership."""
        own, seki = self.ownership(playouts, seed)
        out = []
        for c, stones in self._blocks():
            sign = 1.0 if c == L.BLACK else -1.0
            if sign * float(np.mean(own[stones])) < DEAD_THRESHOLD:
                out.append(("dead", c, stones))
                continue
            in_seki = float(np.mean(seki[stones])) > SEKI_FRACTION
            out.append(("seki" if in_seki else "alive", c, stones))
        return out

    def final_status(self, status: str, playouts: int = DEFAULT_STATUS_PLAYOUTS, seed: int = 1) -> list:
        """GTP final_status_list: one list of vertices per block with that status."""
        if status not in ("alive", "dead", "seki"):
            raise ValueError(f"invalid status: {status!r}")
        return [[self.vertex(p) for p in stones] for st, _, stones in self.statuses(playouts, seed) if st == status]

    def final_score_value(self, playouts: int = DEFAULT_STATUS_PLAYOUTS, seed: int = 1) -> float:
        """Black minus White area minus komi after removing the estimated dead stones."""
        clean = self.pos.copy()
        for st, _, stones in self.statuses(playouts, seed):
            if st == "dead":
                clean[L.BOARD + np.asarray(stones)] = L.EMPTY
        return float(kb.area_score(clean))

    def final_score(self, playouts: int = DEFAULT_STATUS_PLAYOUTS, seed: int = 1) -> str:
        """GTP final_score text ("B+3.5", "W+0.5", "0") after dead-stone removal."""
        return format_score(self.final_score_value(playouts, seed))
