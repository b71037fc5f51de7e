"""Game records: CSA (V2.2) and KIF for shogi, SGF for Go.

The shogi writers replay the referee-validated USI moves on a minimal SFEN board (no legality, only
piece bookkeeping) to name the moving piece, which both formats need. Termination codes follow the
CSA standard (%TORYO, %TSUMI, %TIME_UP, %SENNICHITE, %OUTE_SENNICHITE, %KACHI, %MAX_MOVES,
%+ILLEGAL_ACTION / %-ILLEGAL_ACTION naming the offender); KIF ends with the matching Japanese word
and the usual "まで N手で先手の勝ち" line; `.kif` is written in Shift_JIS (cp932). SGF is written with sgfmill.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from usi_engine.shogi.sfen import STARTPOS

HAND_ORDER = "RBGSNLP"
CSA_PIECES = {
    "P": "FU",
    "L": "KY",
    "N": "KE",
    "S": "GI",
    "G": "KI",
    "B": "KA",
    "R": "HI",
    "K": "OU",
    "+P": "TO",
    "+L": "NY",
    "+N": "NK",
    "+S": "NG",
    "+B": "UM",
    "+R": "RY",
}
KIF_PIECES = {
    "P": "歩",
    "L": "香",
    "N": "桂",
    "S": "銀",
    "G": "金",
    "B": "角",
    "R": "飛",
    "K": "玉",
    "+P": "と",
    "+L": "成香",
    "+N": "成桂",
    "+S": "成銀",
    "+B": "馬",
    "+R": "龍",
}
KIF_BOARD_PIECES = {**KIF_PIECES, "+L": "杏", "+N": "圭", "+S": "全"}  # one character per square
KIF_FILES = "１２３４５６７８９"
KIF_RANKS = "一二三四五六七八九"
KIF_COUNTS = [
    "",
    "",
    "二",
    "三",
    "四",
    "五",
    "六",
    "七",
    "八",
    "九",
    "十",
    "十一",
    "十二",
    "十三",
    "十四",
    "十五",
    "十六",
    "十七",
    "十八",
]
RANK_LETTERS = "abcdefghi"
KIF_ENCODING = "cp932"  # `.kif` files are Shift_JIS by convention (`.kifu` would be UTF-8); readers rely on it

# reason -> (CSA code, KIF word). "{side}" is + or - of the side the code is about.
CSA_ENDINGS = {
    "resign": "%TORYO",
    "mate": "%TSUMI",
    "time": "%TIME_UP",
    "hang": "%TIME_UP",
    "repetition": "%SENNICHITE",
    "perpetual-check": "%OUTE_SENNICHITE",
    "declaration": "%KACHI",
    "max-moves": "%MAX_MOVES",
    "declaration-draw": "%JISHOGI",
    "illegal": "%{side}ILLEGAL_ACTION",
    "false-declaration": "%{side}ILLEGAL_ACTION",
    "crash": "%{side}ILLEGAL_ACTION",
    "protocol": "%{side}ILLEGAL_ACTION",
}
KIF_ENDINGS = {
    "resign": "投了",
    "mate": "詰み",
    "time": "切れ負け",
    "hang": "切れ負け",
    "repetition": "千日手",
    "perpetual-check": "反則勝ち",
    "declaration": "入玉勝ち",
    "max-moves": "持将棋",
    "declaration-draw": "持将棋",
    "illegal": "反則負け",
    "false-declaration": "反則負け",
    "crash": "反則負け",
    "protocol": "反則負け",
}
KIF_SIDE_TO_MOVE_LOSES = ("投了", "詰み", "切れ負け", "反則負け")  # words saying the side to move lost


@dataclass
class SfenBoard:
    """Squares keyed by (file 1-9, rank 1-9) -> piece ('P', '+p', ...; upper case = Black)."""

    squares: dict = field(default_factory=dict)
    side: str = "b"
    hands: dict = field(default_factory=lambda: {"b": {}, "w": {}})
    move_number: int = 1

    @classmethod
    def from_sfen(cls, sfen: str | None) -> "SfenBoard":
        fields = (sfen or STARTPOS).split()
        if len(fields) < 3:
            raise ValueError(f"bad SFEN {sfen!r}")
        board = cls(side=fields[1], move_number=int(fields[3]) if len(fields) > 3 else 1)
        for r, row in enumerate(fields[0].split("/"), start=1):
            f, promo = 9, ""
            for ch in row:
                if ch.isdigit():
                    f -= int(ch)
                elif ch == "+":
                    promo = "+"
                else:
                    board.squares[(f, r)] = promo + ch
                    f, promo = f - 1, ""
        count = ""
        for ch in fields[2] if fields[2] != "-" else "":
            if ch.isdigit():
                count += ch
            else:
                hand = board.hands["b" if ch.isupper() else "w"]
                hand[ch.upper()] = hand.get(ch.upper(), 0) + int(count or 1)
                count = ""
        return board

    def piece_at(self, file: int, rank: int) -> str | None:
        return self.squares.get((file, rank))

    def push_usi(self, move: str) -> tuple[str, tuple[int, int], tuple[int, int] | None]:
        """Apply a (validated) USI move; return (piece after the move, upper case; to; from or None)."""
        to = (int(move[2]), RANK_LETTERS.index(move[3]) + 1)
        black = self.side == "b"
        if move[1] == "*":
            kind, frm = move[0].upper(), None
            self.hands[self.side][kind] -= 1
        else:
            frm = (int(move[0]), RANK_LETTERS.index(move[1]) + 1)
            kind = self.squares.pop(frm).upper()
            if move.endswith("+"):
                kind = "+" + kind
        captured = self.squares.get(to)
        if captured:
            base = captured.upper().lstrip("+")
            self.hands[self.side][base] = self.hands[self.side].get(base, 0) + 1
        self.squares[to] = kind if black else kind.lower()
        self.side = "w" if black else "b"
        return kind, to, frm


@dataclass
class ShogiRecord:
    """What a record needs: names, start, moves with their times, the result."""

    black: str
    white: str
    start_sfen: str | None  # None = the normal start position
    moves: list  # USI strings, referee-validated
    seconds: list  # thinking time per move (same length as moves)
    winner: str | None  # "b", "w" or None (draw / no result)
    reason: str
    loser: str | None = None  # side at fault for ILLEGAL_ACTION codes
    start_time: str = ""
    event: str = ""
    comment: str = ""


def _csa_square(sq) -> str:
    return "00" if sq is None else f"{sq[0]}{sq[1]}"


def _csa_position(board: SfenBoard) -> list[str]:
    lines = []
    for r in range(1, 10):
        row = "".join(
            " * " if (p := board.piece_at(f, r)) is None else ("+" if p.isupper() else "-") + CSA_PIECES[p.upper()]
            for f in range(9, 0, -1)
        )
        lines.append(f"P{r}{row}")
    for side, sign in (("b", "+"), ("w", "-")):
        hand = "".join(f"00{CSA_PIECES[k]}" * n for k in HAND_ORDER for n in [board.hands[side].get(k, 0)])
        if hand:
            lines.append(f"P{sign}{hand}")
    lines.append("+" if board.side == "b" else "-")
    return lines


def write_csa(rec: ShogiRecord) -> str:
    board = SfenBoard.from_sfen(rec.start_sfen)
    lines = ["V2.2", f"N+{rec.black}", f"N-{rec.white}"]
    if rec.event:
        lines.append(f"$EVENT:{rec.event}")
    if rec.start_time:
        lines.append(f"$START_TIME:{rec.start_time}")
    lines += ["PI", "+"] if rec.start_sfen is None else _csa_position(board)
    for move, secs in zip(rec.moves, rec.seconds):
        sign = "+" if board.side == "b" else "-"
        kind, to, frm = board.push_usi(move)
        lines.append(f"{sign}{_csa_square(frm)}{_csa_square(to)}{CSA_PIECES[kind]}")
        lines.append(f"T{int(secs)}")
    code = CSA_ENDINGS.get(rec.reason)
    if code:
        lines.append(code.format(side="+" if rec.loser == "b" else "-"))
    if rec.comment:
        lines.append(f"'{rec.comment}")
    return "\n".join(lines) + "\n"


def _kif_clock(secs: float, total: float) -> str:
    s, t = int(secs), int(total)
    return f"({s // 60:2d}:{s % 60:02d}/{t // 3600:02d}:{t // 60 % 60:02d}:{t % 60:02d})"


def _kif_hand(hand: dict) -> str:
    parts = [KIF_PIECES[k] + KIF_COUNTS[n] for k in HAND_ORDER if (n := hand.get(k, 0))]
    return "　".join(parts) + "　" if parts else "なし"


def _kif_board(board: SfenBoard) -> list[str]:
    lines = [
        f"後手の持駒：{_kif_hand(board.hands['w'])}",
        "  ９ ８ ７ ６ ５ ４ ３ ２ １",
        "+---------------------------+",
    ]
    for r in range(1, 10):
        cells = "".join(
            " ・"
            if (p := board.piece_at(f, r)) is None
            else (" " if p.isupper() else "v") + KIF_BOARD_PIECES[p.upper()]
            for f in range(9, 0, -1)
        )
        lines.append(f"|{cells}|{KIF_RANKS[r - 1]}")
    lines += ["+---------------------------+", f"先手の持駒：{_kif_hand(board.hands['b'])}"]
    if board.side == "w":
        lines.append("後手番")
    return lines


def write_kif(rec: ShogiRecord) -> str:
    board = SfenBoard.from_sfen(rec.start_sfen)
    lines = ["#KIF version=2.0 encoding=Shift_JIS"]
    if rec.start_time:
        lines.append(f"開始日時：{rec.start_time}")
    if rec.event:
        lines.append(f"棋戦：{rec.event}")
    lines += ["手合割：平手"] if rec.start_sfen is None else _kif_board(board)
    lines += [f"先手：{rec.black}", f"後手：{rec.white}", "手数----指手---------消費時間--"]
    totals = {"b": 0.0, "w": 0.0}
    for n, (move, secs) in enumerate(zip(rec.moves, rec.seconds), start=1):
        side = board.side
        kind, to, frm = board.push_usi(move)
        base = kind if frm is None or not move.endswith("+") else kind[1:]
        text = f"{KIF_FILES[to[0] - 1]}{KIF_RANKS[to[1] - 1]}{KIF_PIECES[base]}"
        text += "打" if frm is None else ("成" if move.endswith("+") else "") + f"({frm[0]}{frm[1]})"
        totals[side] += secs
        lines.append(f"{n:4d} {text}   {_kif_clock(secs, totals[side])}")
    word = KIF_ENDINGS.get(rec.reason)
    mover_won = rec.winner == board.side
    if word == "反則勝ち" and not mover_won or word in KIF_SIDE_TO_MOVE_LOSES and mover_won:
        word = "反則負け" if word == "反則勝ち" else "反則勝ち"  # the fault was the other side's
    if word:
        lines.append(f"{len(rec.moves) + 1:4d} {word}")
    if rec.winner is not None:
        lines.append(f"まで{len(rec.moves)}手で{'先手' if rec.winner == 'b' else '後手'}の勝ち")
    elif rec.reason in ("repetition", "max-moves", "declaration-draw"):
        lines.append(f"まで{len(rec.moves)}手で{'千日手' if rec.reason == 'repetition' else '持将棋'}")
    if rec.comment:
        lines.append(f"*{rec.comment}")
    return "\n".join(lines) + "\n"


def write_sgf(
    size: int, komi: float, black: str, white: str, moves, result: str, comment: str = "", date: str = ""
) -> bytes:
    """SGF of a Go game. `moves` are (colour 'b'/'w', (row, col) from the bottom-left or None = pass)."""
    from sgfmill import sgf  # runtime dependency of Go matches only

    game = sgf.Sgf_game(size=size)
    root = game.get_root()
    root.set("KM", komi)
    root.set("PB", black)
    root.set("PW", white)
    root.set("RE", result)
    if date:
        root.set("DT", date)
    if comment:
        root.set("C", comment)
    for colour, point in moves:
        game.extend_main_sequence().set_move(colour, point)
    return game.serialise()
