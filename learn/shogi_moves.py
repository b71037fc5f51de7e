"""`python -m learn shogi-moves OUT --games FILE_OR_DIR ... [--positions FILE ...]`: fit the shogi move prior
(usi_engine/shogi_search/moveprior.py) to game records and teacher-labelled positions by maximum likelihood.

Inputs (--games: files, folders searched recursively, .zip archives of either):
- CSA records (V2.x, `.csa`; several games in one file separated by a `/` line): the start position (`PI` with
  its optional removals, `P1`..`P9`, `P+`/`P-` pieces, the side to move), the moves up to the first `%` code
  (%TORYO, %SENNICHITE, ...: the end of the game, not a move), Floodgate's `'black_rate:NAME:RATE` and
  `'white_rate:...` comments. KIF is not read.
- USI game lines (any other file): every line whose last TAB-separated field is a USI position,
  `startpos moves ...` or `sfen ... moves ...`, is one game.
- --positions: files of `POSITION<TAB>MOVE` lines, POSITION an SFEN optionally followed by `moves ...` (the
  moves that led to it, for the last-move features), MOVE the USI move a teacher chose there.
A game is used when its replay by our rules is legal (it is cut at the first illegal move), it has at least
--min-plies moves, and every rating its header gives is at least --min-rate. Positions whose move is not a
search move (movegen.gen_search_moves: a dominated plain twin) are left out.

Split: a seeded shuffle of the games puts --test-games of them in the held-out test set, whose positions never
enter training (without games, --test-games labelled positions are held out instead); of each training game a
--sample fraction of the positions is used; labelled positions always train.

Fitting: the softmax model's negative log-likelihood of the moves played, sum_t -log P(m_t) + l2/2 |w|^2 per
position, by Adam over mini-batches of positions; the features of every search move of every position are
extracted once by the kernel the engine runs (moveprior.position_features). Prints per epoch the training loss
and the test set's mean -log P and top-1 / top-5 / top-10 accuracy, then the same figures of three baselines on
the same test positions: uniform; MVV-LVA (captures by victim, then by the least valuable attacker,
quiescence.order_key; every other move tied); the engine's static evaluation of each child (the default
weights, usi_engine/shogi_eval/features.py) as a softmax. The baselines' temperatures are fitted on training positions;
ties count as broken at random (expected accuracy). --ablate refits once per feature group with that group
left out and prints what each group is worth. Writes the model to OUT (a checksummed weight archive; metadata:
the settings and the test figures).
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numba import njit

from learn.movefit import NO_TARGETS, contains, record_files, record_members, train_epoch
from usi_engine.shogi.layout import (
    BOARD,
    DROP_BASE,
    MAX_MOVES,
    MOVE_FROM_SHIFT,
    MOVE_PROMO_BIT,
    MOVE_TO_MASK,
    PIECE_LETTERS,
    PROMOTE,
)
from usi_engine.shogi.movegen import gen_legal, gen_search_moves
from usi_engine.shogi.position import do_move, undo_move
from usi_engine.shogi.sfen import STARTPOS, format_sfen, move_to_usi, parse_position, parse_sfen, usi_to_move
from usi_engine.shogi_eval.evalfile import load_weights
from usi_engine.shogi_eval.incremental import N_EACC, N_EIDX, inc_init, inc_record, inc_value, pp_block_zero
from usi_engine.shogi_search import moveprior as M
from usi_engine.shogi_search.quiescence import order_key

CSA_TYPES = {"FU": 1, "KY": 2, "KE": 3, "GI": 4, "KA": 5, "HI": 6, "KI": 7, "OU": 8}
CSA_TYPES |= {"TO": 9, "NY": 10, "NK": 11, "NG": 12, "UM": 13, "RY": 14}
CSA_MOVE = re.compile(r"^([+-])(\d)(\d)(\d)(\d)([A-Z]{2})")
TARGET_SHIFT = 16  # a record move: packed move | the CSA piece type after the move << 16 (0: promotion known)
START_SET = {  # (file, rank) -> piece of the start position, for CSA's PI line
    **{(f, 7): (0, 1) for f in range(1, 10)},
    **{(f, 3): (1, 1) for f in range(1, 10)},
    **{(f, r): (c, t) for c, r in ((0, 9), (1, 1)) for f, t in zip(range(1, 10), (2, 3, 4, 7, 8, 7, 4, 3, 2))},
    (8, 8): (0, 5), (2, 8): (0, 6), (2, 2): (1, 5), (8, 2): (1, 6),
}  # fmt: skip
FIXTURE_POSITIONS = 300  # --write-test-positions
CALIBRATION_POSITIONS = 20000  # training positions on which the baselines' temperatures are fitted
ROW_DTYPE = np.int16
assert M.N_WEIGHTS < np.iinfo(ROW_DTYPE).max


def add_shogi_moves_parser(sub) -> None:
    p = sub.add_parser(
        "shogi-moves", help="fit the shogi move prior to game records", description=__doc__.splitlines()[0]
    )
    p.add_argument("out", help="model file to write (.npz)")
    p.add_argument("--games", nargs="*", default=[], help="CSA files, USI game-line files, .zip of them, folders")
    p.add_argument("--positions", nargs="*", default=[], help="files of SFEN<TAB>USI-MOVE lines (teacher labels)")
    p.add_argument("--max-games", type=int, default=100000, help="games used in all (test games included)")
    p.add_argument("--test-games", type=int, default=500)
    p.add_argument("--min-rate", type=float, default=2500.0, help="both players' ratings, when the record has them")
    p.add_argument("--min-plies", type=int, default=40, help="moves a game must have")
    p.add_argument("--sample", type=float, default=0.5, help="fraction of a training game's positions used")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch", type=int, default=256, help="positions per Adam step")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--l2", type=float, default=1e-5, help="L2 penalty per weight and position")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ablate", action="store_true", help="refit without each feature group in turn")
    p.add_argument(
        "--write-test-positions", metavar="FILE", help=f"write {FIXTURE_POSITIONS} test positions as POSITION<TAB>MOVE"
    )
    p.set_defaults(handler=run_shogi_moves)


# --- records ---------------------------------------------------------------------------------------------------
@dataclass
class Game:
    """One unit of data: a start position and the record moves from it; `label` marks a teacher-labelled
    position (only its last move is a training target)."""

    start: str
    moves: list = field(default_factory=list)
    rates: list = field(default_factory=list)
    label: bool = False


def _csa_sfen(squares: dict, hands: list, side: int) -> str:
    rows = []
    for r in range(1, 10):
        row, empty = "", 0
        for f in range(9, 0, -1):
            if (f, r) not in squares:
                empty += 1
                continue
            c, t = squares[(f, r)]
            letter = ("+" if t > 8 else "") + PIECE_LETTERS[t - 8 if t > 8 else t]
            row += (str(empty) if empty else "") + (letter if c == 0 else letter.lower())
            empty = 0
        rows.append(row + (str(empty) if empty else ""))
    hand = ""
    for c in (0, 1):
        for t in (6, 5, 7, 4, 3, 2, 1):
            n = hands[c].get(t, 0)
            hand += (str(n) if n > 1 else "") + (PIECE_LETTERS[t] if c == 0 else PIECE_LETTERS[t].lower()) if n else ""
    return f"{'/'.join(rows)} {'bw'[side]} {hand or '-'} 1"


def parse_csa(text: str) -> list[Game]:
    """The games of a CSA text (games separated by a `/` line); a game whose position lines are malformed is
    left out."""
    games = []
    for chunk in re.split(r"^/\s*$", text, flags=re.M):
        try:
            game = _parse_csa_game(chunk)
        except (ValueError, KeyError, IndexError):
            continue
        if game is not None:
            games.append(game)
    return games


def _parse_csa_game(text: str) -> Game | None:
    squares: dict = {}
    hands: list = [{}, {}]
    side = 0
    seen_position = False
    moves: list = []
    rates: list = []
    for raw in text.splitlines():
        for stmt in raw.strip().split(","):
            if not stmt:
                continue
            if stmt.startswith("'"):
                m = re.match(r"'(black|white)_rate:(.*):([-0-9.]+)\s*$", stmt)
                if m:
                    rates.append(float(m.group(3)))
            elif stmt.startswith("%"):
                return _game(squares, hands, side, seen_position, moves, rates)
            elif stmt.startswith("PI"):
                seen_position = True
                squares = dict(START_SET)
                for k in range(2, len(stmt) - 3, 4):
                    squares.pop((int(stmt[k]), int(stmt[k + 1])))
            elif re.match(r"^P[1-9]", stmt):
                seen_position = True
                r = int(stmt[1])
                for i in range(9):
                    cell = stmt[2 + 3 * i : 5 + 3 * i]
                    if cell.strip() not in ("*", ""):
                        squares[(9 - i, r)] = ("+-".index(cell[0]), CSA_TYPES[cell[1:3]])
            elif stmt.startswith(("P+", "P-")):
                seen_position = True
                c = "+-".index(stmt[1])
                for k in range(2, len(stmt) - 3, 4):
                    f, r, name = int(stmt[k]), int(stmt[k + 1]), stmt[k + 2 : k + 4]
                    if name == "AL":
                        _rest_to_hand(squares, hands, c)
                    elif f == 0:
                        hands[c][CSA_TYPES[name]] = hands[c].get(CSA_TYPES[name], 0) + 1
                    else:
                        squares[(f, r)] = (c, CSA_TYPES[name])
            elif stmt in ("+", "-") and not moves:
                side = "+-".index(stmt)
            elif m := CSA_MOVE.match(stmt):
                ff, fr, tf, tr = (int(m.group(i)) for i in range(2, 6))
                target = CSA_TYPES[m.group(6)]
                to = (tf - 1) * 9 + tr - 1
                frm = DROP_BASE + target if ff == 0 else (ff - 1) * 9 + fr - 1
                moves.append(to | frm << MOVE_FROM_SHIFT | target << TARGET_SHIFT)
    return _game(squares, hands, side, seen_position, moves, rates)


def _rest_to_hand(squares: dict, hands: list, c: int) -> None:
    """CSA's `00AL`: every piece neither on the board nor in a hand goes to colour c's hand."""
    full = {1: 18, 2: 4, 3: 4, 4: 4, 5: 2, 6: 2, 7: 4}
    for _, t in squares.values():
        if t != 8:
            full[t - 8 if t > 8 else t] -= 1
    for h in hands:
        for t, n in h.items():
            full[t] -= n
    for t, n in full.items():
        if n > 0:
            hands[c][t] = hands[c].get(t, 0) + n


def _game(squares, hands, side, seen_position, moves, rates) -> Game | None:
    if not moves and not seen_position:
        return None
    start = _csa_sfen(squares, hands, side) if seen_position else STARTPOS
    return Game(start, moves, rates)


def parse_usi_lines(text: str) -> list[Game]:
    """The games of a file of USI game lines (the last TAB-separated field of a line a USI position, `startpos
    moves ...` or `sfen SFEN moves ...`); malformed lines are left out."""
    games = []
    for line in text.splitlines():
        tokens = line.rsplit("\t", 1)[-1].split()
        if tokens[:1] == ["position"]:
            tokens = tokens[1:]
        if tokens[:1] not in (["startpos"], ["sfen"]):
            continue
        try:
            start, moves = parse_position(tokens)
            parse_sfen(start or STARTPOS)  # raises ValueError on a malformed SFEN
            record = [usi_to_move(m) for m in moves]
        except ValueError:
            continue
        games.append(Game(start or STARTPOS, record))
    return games


def parse_positions(text: str) -> list[Game]:
    """The teacher-labelled positions of a file of POSITION<TAB>MOVE lines (moveprior.parse_labelled; malformed
    lines and `#` comments are left out)."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        try:
            start, moves, move = M.parse_labelled(line)
            parse_sfen(start or STARTPOS)
            record = [usi_to_move(m) for m in moves + [move]]
        except ValueError:
            continue
        out.append(Game(start or STARTPOS, record, label=True))
    return out


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp932", "replace")  # Japanese records are often Shift_JIS


def read_games(paths, min_rate: float, min_plies: int, limit: int) -> tuple[list[Game], int]:
    """(up to `limit` games that pass the filters, the number of games filtered out) from files and folders."""
    games: list[Game] = []
    dropped = 0
    for f in record_files(paths):
        for name, data in record_members(f):
            text = _decode(data)
            found = parse_csa(text) if name.lower().endswith(".csa") else parse_usi_lines(text)
            for g in found:
                if len(g.moves) < min_plies or any(r < min_rate for r in g.rates):
                    dropped += 1
                    continue
                games.append(g)
                if len(games) >= limit:
                    return games, dropped
    return games, dropped


def read_positions(paths) -> list[Game]:
    """The teacher-labelled positions of the files named (parse_positions)."""
    return [g for p in paths for g in parse_positions(_decode(Path(p).read_bytes()))]


# --- features of the positions of a game -----------------------------------------------------------------------
@njit(cache=True)
def _resolve(pos, code):
    """The packed move of a record move (TARGET_SHIFT); 0 when the piece named is neither the board's piece nor
    its promotion."""
    target = code >> TARGET_SHIFT
    move = code & ((1 << TARGET_SHIFT) - 1)
    frm = (move >> MOVE_FROM_SHIFT) & 0x7F
    if target == 0 or frm > DROP_BASE:
        return move
    pt = pos[BOARD + frm] & 15
    if pt == target:
        return move
    return move | MOVE_PROMO_BIT if pt | PROMOTE == target else 0


@njit(cache=True)
def _replay(pos, record, keep, rows, starts, played, base, keys, static, w, pp_zero):
    """Replay record moves from pos. For each kept position whose move is a search move: the feature rows of
    its search moves (moveprior.position_features) go to rows from row `base` on, the position's first row to
    starts, the index of the move played among them to played; with keys / static non-empty, also the MVV-LVA
    key (captures: quiescence.order_key, else 0) and the static value after each move from the mover's view
    (weights w). Stops at an illegal move. Returns (positions written, rows written, moves replayed)."""
    legal = np.empty(MAX_MOVES, np.int32)
    search = np.empty(MAX_MOVES, np.int32)
    tactical = np.empty(MAX_MOVES, np.int8)
    eacc = np.empty((2, N_EACC))
    eidx = np.empty((2, N_EIDX), np.int64)
    n_pos = 0
    r = base
    t = 0
    while t < record.shape[0]:
        m = _resolve(pos, record[t])
        if not contains(legal, gen_legal(pos, legal), m):
            break
        if keep[t]:
            n = gen_search_moves(pos, search)
            k = -1
            for i in range(n):
                if search[i] == m:
                    k = i
            if k >= 0:
                M.position_features(pos, search, n, rows[r : r + n], tactical)
                starts[n_pos] = r
                played[n_pos] = k
                if keys.shape[0] > 0:
                    inc_init(pos, w, eacc, eidx, 0, pp_zero)
                    for i in range(n):
                        mv = search[i]
                        keys[r + i] = order_key(pos, mv) if pos[BOARD + (mv & MOVE_TO_MASK)] != 0 else 0
                        inc_record(pos, mv, w, eacc, eidx, 0)
                        do_move(pos, mv)
                        static[r + i] = -inc_value(pos, w, eacc, eidx, 1)
                        undo_move(pos)
                r += n
                n_pos += 1
        do_move(pos, m)
        t += 1
    return n_pos, r - base, t


@dataclass
class Data:
    """Feature rows of positions: rows[starts[t]:starts[t + 1]] are position t's search moves, played[t] the
    index of the move played among them; keys / static: the baselines' values per row (empty when not
    computed)."""

    rows: np.ndarray
    starts: np.ndarray
    played: np.ndarray
    keys: np.ndarray
    static: np.ndarray

    @property
    def positions(self) -> int:
        return len(self.played)


def extract(games: list[Game], sample: float, rng: np.random.Generator, baselines: bool = False) -> Data:
    """The Data of the games' positions: a `sample` fraction of each game's positions (every labelled position);
    with baselines, the MVV-LVA keys and static values too."""
    keeps = []
    for g in games:
        keep = np.zeros(len(g.moves), np.bool_)
        if g.label:
            keep[-1] = True
        else:
            keep[:] = rng.random(len(g.moves)) < sample
        keeps.append(keep)
    total = int(sum(k.sum() for k in keeps))
    capacity = max(1024, total * 100)
    rows = np.empty((capacity, M.N_GROUPS), ROW_DTYPE)
    starts = np.empty(total + 1, np.int64)
    played = np.empty(total, np.int64)
    w = load_weights() if baselines else np.zeros(0)
    pp_zero = bool(baselines and pp_block_zero(w))
    keys = np.zeros(capacity if baselines else 0, np.float32)
    static = np.zeros(capacity if baselines else 0, np.float32)
    n_pos = n_rows = 0
    for g, keep in zip(games, keeps):
        need = n_rows + int(keep.sum()) * MAX_MOVES
        if need > rows.shape[0]:
            grow = max(need, 2 * rows.shape[0])
            rows = np.concatenate([rows, np.empty((grow - rows.shape[0], M.N_GROUPS), ROW_DTYPE)])
            if baselines:
                keys = np.concatenate([keys, np.zeros(grow - keys.shape[0], np.float32)])
                static = np.concatenate([static, np.zeros(grow - static.shape[0], np.float32)])
        pos = parse_sfen(g.start, history_capacity=len(g.moves) + 8)
        record = np.array(g.moves, np.int64)
        p, r, _ = _replay(pos, record, keep, rows, starts[n_pos:], played[n_pos:], n_rows, keys, static, w, pp_zero)
        n_pos += p
        n_rows += r
    starts[n_pos] = n_rows
    return Data(rows[:n_rows], starts[: n_pos + 1], played[:n_pos], keys[:n_rows], static[:n_rows])


# --- fitting ---------------------------------------------------------------------------------------------------
@njit(cache=True)
def row_scores(rows, w, use):
    """The model's score of every row (the groups with use[g] only)."""
    out = np.empty(rows.shape[0])
    for r in range(rows.shape[0]):
        v = 0.0
        for g in range(rows.shape[1]):
            if use[g]:
                v += w[rows[r, g]]
        out[r] = v
    return out


@njit(cache=True)
def rank_figures(values, starts, played, beta):
    """(mean -log P of the move played under the softmax of beta * values, and its expected top-1, top-5 and
    top-10 accuracy when the moves are ranked by value, ties broken at random) over the positions."""
    out = np.zeros(4)
    n = played.shape[0]
    for t in range(n):
        a, b = starts[t], starts[t + 1]
        v = values[a + played[t]]
        top = -np.inf
        for r in range(a, b):
            top = max(top, beta * values[r])
        total = 0.0
        above = 0
        tied = 0
        for r in range(a, b):
            total += np.exp(beta * values[r] - top)
            above += values[r] > v
            tied += values[r] == v
        out[0] += top + np.log(total) - beta * v
        out[1] += min(1.0, max(0.0, (1 - above) / tied))
        out[2] += min(1.0, max(0.0, (5 - above) / tied))
        out[3] += min(1.0, max(0.0, (10 - above) / tied))
    return out / max(1, n)


def fit_temperature(values: np.ndarray, data: Data) -> float:
    """The inverse temperature beta minimising the mean -log P of the softmax of beta * values (golden-section
    search on log beta: the loss is convex in beta)."""
    lo, hi = np.log(1e-5), np.log(1e2)
    ratio = (np.sqrt(5.0) - 1.0) / 2.0

    def loss(x: float) -> float:
        return float(rank_figures(values, data.starts, data.played, np.exp(x))[0])

    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = loss(a), loss(b)
    for _ in range(60):
        if fa < fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = loss(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = loss(b)
    return float(np.exp((lo + hi) / 2.0))


def fit(
    train: Data, test: Data, epochs: int, batch: int, lr: float, l2: float, seed: int, use=None, log=print
) -> tuple[np.ndarray, list]:
    """(weights, per-epoch rows of (train -log P, test -log P, top-1, top-5, top-10)) fitted from zero; use: the
    groups to fit (default all)."""
    use = np.ones(M.N_GROUPS, np.bool_) if use is None else use
    w = np.zeros(M.N_WEIGHTS)
    m1, m2, step = np.zeros_like(w), np.zeros_like(w), np.zeros(1, np.int64)
    rng = np.random.default_rng(seed)
    curve = []
    for epoch in range(1, epochs + 1):
        t0 = time.time()
        loss = train_epoch(train.rows, train.starts, train.played, NO_TARGETS, rng.permutation(train.positions), w,
                           use, m1, m2, step, lr, l2, batch, MAX_MOVES)  # fmt: skip
        nll, top1, top5, top10 = rank_figures(row_scores(test.rows, w, use), test.starts, test.played, 1.0)
        curve.append((float(loss), float(nll), float(top1), float(top5), float(top10)))
        log(
            f"epoch {epoch}: train -log P {loss:.3f}  test -log P {nll:.3f}  top-1 {top1:.1%}  top-5 {top5:.1%}"
            f"  top-10 {top10:.1%}  ({time.time() - t0:.1f} s)"
        )
    return w, curve


def baselines(test: Data, calibration: Data) -> dict:
    """{name: (beta, -log P, top-1, top-5, top-10)} of the uniform, MVV-LVA and static-evaluation baselines on
    the test positions, each temperature fitted on the calibration positions."""
    out = {"uniform": (0.0, *rank_figures(np.zeros(len(test.rows)), test.starts, test.played, 1.0))}
    for name, attr in (("MVV-LVA", "keys"), ("static evaluation", "static")):
        beta = fit_temperature(getattr(calibration, attr), calibration)
        out[name] = (beta, *rank_figures(getattr(test, attr), test.starts, test.played, beta))
    return out


def ablation(train: Data, test: Data, args, full: tuple, log=print) -> dict:
    """{group name: (test -log P, top-1) without it} and the full model's figures beside them, printed."""
    out = {}
    log(f"ablation (each group left out; full model: test -log P {full[0]:.3f}, top-1 {full[1]:.1%}):")
    for g, name in enumerate(M.GROUP_NAMES):
        use = np.ones(M.N_GROUPS, np.bool_)
        use[g] = False
        _, curve = fit(train, test, args.epochs, args.batch, args.lr, args.l2, args.seed, use, log=lambda _: None)
        nll, top1 = curve[-1][1], curve[-1][2]
        out[name] = (nll, top1)
        log(f"  without {name:<10}  -log P {nll:.3f} ({nll - full[0]:+.3f})  top-1 {top1:.1%} ({top1 - full[1]:+.1%})")
    return out


def print_figures(figures: dict, positions: int, models: set, log=print) -> None:
    """The held-out table: per row {name: (beta, -log P, top-1, top-5, top-10)} (rank_figures), the temperature
    1 / beta shown for the baselines (not for the rows named in `models`, whose scores are logits)."""
    log(f"held out: {positions} positions; ties broken at random (expected accuracy)")
    log(f"  {'':<20} {'-log P':>7} {'top-1':>7} {'top-5':>7} {'top-10':>7}  temperature")
    for name, (beta, nll, top1, top5, top10) in figures.items():
        temp = f"{1.0 / beta:.3g}" if beta and name not in models else "-"
        log(f"  {name:<20} {nll:7.3f} {top1:7.1%} {top5:7.1%} {top10:7.1%}  {temp}")


def test_positions(games: list[Game], count: int, rng: np.random.Generator) -> list[str]:
    """`count` positions of the games drawn at random (in game order), as labelled-position lines
    (moveprior.parse_labelled): `sfen SFEN moves LAST<TAB>MOVE` with SFEN the position before the opponent's last
    move (the start position and no moves at a game's start); only positions whose move is a search move."""
    candidates = []
    legal = np.empty(MAX_MOVES, np.int32)
    search = np.empty(MAX_MOVES, np.int32)
    for g in games:
        pos = parse_sfen(g.start, history_capacity=len(g.moves) + 8)
        before, last = g.start, None
        for code in g.moves:
            move = _resolve(pos, code)
            if move not in legal[: gen_legal(pos, legal)]:
                break
            if move in search[: gen_search_moves(pos, search)]:
                head = f"sfen {before}" + (f" moves {move_to_usi(last)}" if last is not None else "")
                candidates.append(f"{head}\t{move_to_usi(move)}")
            before, last = format_sfen(pos), move
            do_move(pos, move)
    keep = np.sort(rng.choice(len(candidates), size=min(count, len(candidates)), replace=False))
    return [candidates[i] for i in keep]


def run_shogi_moves(args) -> int:
    t0 = time.time()
    games, dropped = read_games(args.games, args.min_rate, args.min_plies, args.max_games)
    labelled = read_positions(args.positions)
    t_read = time.time()
    rng = np.random.default_rng(args.seed)
    pool = games if games else labelled
    if len(pool) <= args.test_games:
        print(f"shogi-moves: {len(pool)} usable games or positions, need more than --test-games {args.test_games}",
              file=sys.stderr)  # fmt: skip
        return 2
    order = rng.permutation(len(pool))
    test_units = [pool[i] for i in order[: args.test_games]]
    train_units = [pool[i] for i in order[args.test_games :]] + (labelled if games else [])
    train = extract(train_units, args.sample, rng)
    test = extract(test_units, 1.0, rng, baselines=True)
    calibration_units = train_units[: max(1, CALIBRATION_POSITIONS // 100)]
    calibration = extract(calibration_units, 1.0, rng, baselines=True)
    t1 = time.time()
    print(
        f"{len(games)} games ({dropped} filtered out), {len(labelled)} labelled positions; training: {train.positions}"
        f" positions ({len(train.rows)} moves), test: {len(test_units)} {'games' if games else 'positions'}"
        f" ({test.positions} positions, {len(test.rows)} moves); reading {t_read - t0:.0f} s, extraction"
        f" {t1 - t_read:.0f} s"
    )
    w, curve = fit(train, test, args.epochs, args.batch, args.lr, args.l2, args.seed)
    t2 = time.time()
    print(f"fitting {t2 - t1:.0f} s")
    figures = baselines(test, calibration)
    figures["move prior"] = (1.0, *curve[-1][1:])
    print_figures(figures, test.positions, {"move prior"})
    notes = {}
    if args.write_test_positions:
        lines = test_positions(test_units, FIXTURE_POSITIONS, np.random.default_rng(args.seed))
        Path(args.write_test_positions).write_text("\n".join(lines) + "\n")
        print(f"wrote {len(lines)} test positions to {args.write_test_positions}")
    if args.ablate:
        notes["ablation"] = ablation(train, test, args, curve[-1][1:3])
    M.save_model(
        args.out,
        w,
        games=len(games),
        labelled_positions=len(labelled),
        test_units=args.test_games,
        train_positions=train.positions,
        test_positions=test.positions,
        min_rate=args.min_rate,
        min_plies=args.min_plies,
        sample=args.sample,
        epochs=args.epochs,
        lr=args.lr,
        l2=args.l2,
        seed=args.seed,
        sources=[Path(g).name for g in args.games + args.positions],
        test=figures,
        **notes,
    )
    print(f"wrote {args.out} ({time.time() - t0:.0f} s)")
    return 0
