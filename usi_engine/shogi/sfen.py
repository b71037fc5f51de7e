"""SFEN and USI move text <-> the ``pos`` array and packed moves (Python, not hot); the position line
``startpos|sfen SFEN [moves ...]`` that USI's `position` command, game records and labelled positions share.

Parsing accepts what GUIs send (a missing move counter, multi-digit hand counts such as ``10p``,
positions without one or both kings for tsume problems) and rejects malformed or impossible
positions with a ValueError that says what is wrong.
"""

import numpy as np

from .layout import (
    BOARD,
    DROP_BASE,
    HAND,
    HAND_ORDER_SFEN,
    HIST,
    H_CHECK,
    H_KEY,
    KEY,
    KING,
    KING_SQ,
    KNIGHT,
    LANCE,
    MOVE_FROM_SHIFT,
    MOVE_NUMBER,
    MOVE_PROMO_BIT,
    MOVE_TO_MASK,
    PAWN,
    PIECE_LETTERS,
    PLY,
    PROMOTABLE,
    PROMOTE,
    SIDE,
    WHITE_BIT,
    pos_size,
)

STARTPOS = "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1"
# Most pieces of each base type in a shogi set (king: one per side).
PIECE_SET = {1: 18, 2: 4, 3: 4, 4: 4, 5: 2, 6: 2, 7: 4, 8: 2}
RANK_LETTERS = "abcdefghi"


def _letter_to_ptype(letter):
    ptype = PIECE_LETTERS.find(letter.upper())
    if ptype <= 0:
        raise ValueError(f"invalid piece letter {letter!r}")
    return ptype


def _parse_board(text, pos):
    ranks = text.split("/")
    if len(ranks) != 9:
        raise ValueError(f"SFEN board must have 9 ranks separated by '/', got {len(ranks)}")
    for r, rank_text in enumerate(ranks):
        file = 9
        promoted = False
        for ch in rank_text:
            if ch == "+":
                if promoted:
                    raise ValueError(f"double '+' in rank {r + 1}")
                promoted = True
                continue
            if ch.isdigit():
                if promoted:
                    raise ValueError(f"'+' before a digit in rank {r + 1}")
                file -= int(ch)
                if int(ch) == 0:
                    raise ValueError(f"empty-square count 0 in rank {r + 1}")
            else:
                if file < 1:
                    raise ValueError(f"rank {r + 1} has more than 9 squares")
                ptype = _letter_to_ptype(ch)
                if promoted:
                    if not PROMOTABLE[ptype]:
                        raise ValueError(f"piece {ch!r} cannot be promoted")
                    ptype |= PROMOTE
                    promoted = False
                colour = 0 if ch.isupper() else 1
                pos[BOARD + (file - 1) * 9 + r] = ptype + WHITE_BIT * colour
                file -= 1
            if file < 0:
                raise ValueError(f"rank {r + 1} has more than 9 squares")
        if promoted:
            raise ValueError(f"dangling '+' at the end of rank {r + 1}")
        if file != 0:
            raise ValueError(f"rank {r + 1} has {9 - file} squares instead of 9")


def _parse_hand(text, pos):
    if text == "-":
        return
    count_text = ""
    for ch in text:
        if ch.isdigit():
            count_text += ch
            continue
        ptype = _letter_to_ptype(ch)
        if ptype == KING:
            raise ValueError("a king cannot be in hand")
        count = int(count_text) if count_text else 1
        if count == 0:
            raise ValueError(f"hand count 0 for {ch!r}")
        pos[HAND + 8 * (0 if ch.isupper() else 1) + ptype] += count
        count_text = ""
    if count_text:
        raise ValueError(f"hand ends with a count and no piece: {text!r}")


def _check_position(pos):
    """Reject positions that cannot arise: too many pieces, two kings of a colour, nifu, dead pieces."""
    totals = dict.fromkeys(PIECE_SET, 0)
    for colour in (0, 1):
        kings = 0
        pawn_files = set()
        for sq in range(81):
            piece = int(pos[BOARD + sq])
            if piece == 0 or piece >> 4 != colour:
                continue
            ptype = piece & 15
            base = ptype if ptype == KING else (ptype & 7 if ptype > KING else ptype)
            totals[base] += 1
            rank = sq % 9 if colour == 0 else 8 - sq % 9  # 0 = last rank for this colour
            name = square_name(sq)
            if ptype == KING:
                kings += 1
                pos[KING_SQ + colour] = sq
            if ptype in (PAWN, LANCE) and rank == 0 or ptype == KNIGHT and rank < 2:
                raise ValueError(f"{'black' if colour == 0 else 'white'} piece on {name} can never move")
            if ptype == PAWN:
                if sq // 9 in pawn_files:
                    side = "black" if colour == 0 else "white"
                    raise ValueError(f"two unpromoted {side} pawns on file {sq // 9 + 1}")
                pawn_files.add(sq // 9)
        if kings > 1:
            raise ValueError(f"{'black' if colour == 0 else 'white'} has {kings} kings")
        for ptype in range(1, 8):
            totals[ptype] += int(pos[HAND + 8 * colour + ptype])
    for base, count in totals.items():
        if count > PIECE_SET[base]:
            raise ValueError(f"{count} pieces of type {PIECE_LETTERS[base]} (a set has {PIECE_SET[base]})")


def parse_sfen(sfen, history_capacity=None):
    """A new ``pos`` array for the SFEN string (the 'sfen ' prefix and move counter are optional)."""
    from .position import compute_key, in_check

    if not isinstance(sfen, str):
        raise ValueError("SFEN must be a string")
    fields = sfen.split()
    if fields and fields[0] == "sfen":
        fields = fields[1:]
    if len(fields) not in (3, 4):
        raise ValueError(f"SFEN needs board, side, hand and an optional move number; got {len(fields)} fields")
    pos = np.zeros(pos_size() if history_capacity is None else pos_size(history_capacity), dtype=np.int64)
    pos[KING_SQ] = pos[KING_SQ + 1] = -1
    _parse_board(fields[0], pos)
    if fields[1] not in ("b", "w"):
        raise ValueError(f"side to move must be 'b' or 'w', got {fields[1]!r}")
    pos[SIDE] = 0 if fields[1] == "b" else 1
    _parse_hand(fields[2], pos)
    if len(fields) == 4:
        if not fields[3].isdigit() or int(fields[3]) < 1:
            raise ValueError(f"move number must be a positive integer, got {fields[3]!r}")
        pos[MOVE_NUMBER] = int(fields[3])
    else:
        pos[MOVE_NUMBER] = 1
    _check_position(pos)
    pos[PLY] = 0
    pos[KEY] = compute_key(pos)
    pos[HIST + H_KEY] = pos[KEY]
    pos[HIST + H_CHECK] = 1 if in_check(pos) else 0
    return pos


def format_sfen(pos):
    """The SFEN string of the current position, move counter included."""
    rows = []
    for r in range(9):
        row, empty = "", 0
        for file in range(9, 0, -1):
            piece = int(pos[BOARD + (file - 1) * 9 + r])
            if piece == 0:
                empty += 1
                continue
            if empty:
                row += str(empty)
                empty = 0
            ptype = piece & 15
            letter = PIECE_LETTERS[ptype & 7 if ptype > KING else ptype]
            row += ("+" if ptype > KING else "") + (letter if piece >> 4 == 0 else letter.lower())
        rows.append(row + (str(empty) if empty else ""))
    hand = ""
    for colour in (0, 1):
        for ptype in HAND_ORDER_SFEN:
            count = int(pos[HAND + 8 * colour + ptype])
            if count:
                letter = PIECE_LETTERS[ptype] if colour == 0 else PIECE_LETTERS[ptype].lower()
                hand += (str(count) if count > 1 else "") + letter
    side = "b" if pos[SIDE] == 0 else "w"
    return f"{'/'.join(rows)} {side} {hand or '-'} {int(pos[MOVE_NUMBER] + pos[PLY])}"


def square_name(sq):
    return f"{sq // 9 + 1}{RANK_LETTERS[sq % 9]}"


def parse_square(text):
    if len(text) != 2 or text[0] not in "123456789" or text[1] not in RANK_LETTERS:
        raise ValueError(f"invalid square {text!r}")
    return (int(text[0]) - 1) * 9 + RANK_LETTERS.index(text[1])


def move_to_usi(move):
    """USI text of a packed move: '7g7f', '8h2b+', 'P*5e'."""
    move = int(move)
    to = move & MOVE_TO_MASK
    frm = (move >> MOVE_FROM_SHIFT) & 0x7F
    if frm > DROP_BASE:
        return f"{PIECE_LETTERS[frm - DROP_BASE]}*{square_name(to)}"
    return f"{square_name(frm)}{square_name(to)}{'+' if move & MOVE_PROMO_BIT else ''}"


def usi_to_move(text):
    """Packed move of USI text (syntax only: legality is the board's business)."""
    if not isinstance(text, str):
        raise ValueError("a move must be a string")
    if len(text) == 4 and text[1] == "*":
        ptype = PIECE_LETTERS.find(text[0])
        if not 1 <= ptype <= 7:
            raise ValueError(f"invalid drop piece in {text!r}")
        return parse_square(text[2:]) | ((DROP_BASE + ptype) << MOVE_FROM_SHIFT)
    if len(text) in (4, 5) and (len(text) == 4 or text[4] == "+"):
        frm, to = parse_square(text[:2]), parse_square(text[2:4])
        return to | (frm << MOVE_FROM_SHIFT) | (MOVE_PROMO_BIT if len(text) == 5 else 0)
    raise ValueError(f"invalid USI move {text!r}")


def parse_position(tokens: list[str]) -> tuple[str | None, list[str]]:
    """The tokens of a position line `startpos|sfen <sfen> [moves ...]` -> (SFEN or None for the start position,
    the moves); ValueError when the line names neither. Syntax only: the SFEN and the moves are checked when they
    are played (parse_sfen, usi_to_move, the board)."""
    if "moves" in tokens:
        k = tokens.index("moves")
        head, moves = tokens[:k], tokens[k + 1 :]
    else:
        head, moves = tokens, []
    if head == ["startpos"]:
        return None, moves
    if head and head[0] == "sfen":
        return " ".join(head[1:]), moves
    raise ValueError("expected 'startpos' or 'sfen <sfen>'")
