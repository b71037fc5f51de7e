"""`python -m learn go-moves OUT --games FILE ...`: fit the learned Go move prior (usi_engine/go/moveprior.py) to
game records by maximum likelihood.

Records: SGF files (one game each, 19x19 or the --size given, no setup stones) and TYGEM-style month files
("<game id> TAB ;B[pd];W[dd];..." one game per line, plain or in a .zip), both with SGF coordinates. Games are
split by a seeded shuffle into a test set (--test-games) and training games; of each training game a random
--sample fraction of the positions is used (positions of one game are alike).

Fitting: the softmax model's negative log-likelihood of the moves played, sum_t -log P(m_t) + l2/2 |w|^2, by
Adam over mini-batches of positions. The shape vocabularies (12- and 24-point shapes) are the shapes of the
moves played in the training games (all their positions, not only the sampled ones) seen at least --min-count
times, the most frequent first, up to the model's capacity. Prints per epoch the training loss and the test
set's mean -log P and top-1 / top-5 accuracy, and writes the model to OUT (a checksummed weight archive,
metadata: the command's settings and the test figures).
A run takes minutes; an interrupted one is simply started again.

With --teacher FILE instead of records (read_teacher: one position a line, its moves from the empty board and a
teacher's probabilities of its moves, e.g. another program's move prior): the model is fitted to the teacher's
distributions, sum_t H(q_t, P) = -sum_t sum_m q_t(m) log P(m) + l2/2 |w|^2 (its gradient sum_m (P(m) - q_t(m))
times the move's features), a distillation; the positions are split by the seeded shuffle into --test-games test
positions and the rest, the shape vocabularies are those of the teacher's most probable moves, and the test
figures are those of the teacher's most probable move (as if played) and the KL divergence KL(q || P) =
H(q, P) - H(q).
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

from learn.movefit import (
    NO_TARGETS,
    contains,
    position_cross_entropy,
    position_nll,
    record_files,
    record_members,
    train_epoch,
)
from usi_engine.go import moveprior as M
from usi_engine.go.board import do_move, gen_moves
from usi_engine.go.game import P_PLAYOUT_POLICY, default_params
from usi_engine.go.goboard import GoBoard
from usi_engine.go.ladder import S_ROWS
from usi_engine.go.layout import BOARD_CAP, PASS, SIDE, SIZE, STRIDE, new_pos, point
from usi_engine.go.playout import DEFAULT_CAP_FACTOR, run_playouts, seed_rng
from usi_engine.go.workspace import WS_ROWS, _setup

MOVE_RE = re.compile(r";\s*([BW])\[([a-t]{2})?\]")


def add_go_moves_parser(sub) -> None:
    p = sub.add_parser("go-moves", help="fit the Go move prior to game records", description=__doc__.splitlines()[0])
    p.add_argument("out", help="model file to write (.npz)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--games", nargs="+", help="SGF files, TYGEM month files or .zip of them, folders")
    src.add_argument(
        "--teacher",
        help="JSON-lines file of positions with a teacher's move probabilities to fit instead of moves played",
    )
    p.add_argument("--size", type=int, default=19)
    p.add_argument("--max-games", type=int, default=2000, help="games used in all (test games included)")
    p.add_argument("--test-games", type=int, default=200, help="games (with --teacher: positions) held out")
    p.add_argument("--sample", type=float, default=0.3, help="fraction of a training game's positions used")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch", type=int, default=256, help="positions per Adam step")
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--l2", type=float, default=1e-5, help="L2 penalty per weight and position")
    p.add_argument("--min-count", type=int, default=3, help="occurrences of a 12-point shape to enter the vocabulary")
    p.add_argument(
        "--owner-playouts",
        type=int,
        default=0,
        help="playouts per position for the ownership feature (moveprior.G_OWNER; 0: without it)",
    )
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(handler=run_go_moves)


# --- records ---------------------------------------------------------------------------------------------------
def parse_moves(text: str, size: int) -> np.ndarray | None:
    """The moves of one game record (point indices, PASS for a pass) or None when it is no plain game: setup
    stones, another board size, colours that do not alternate from Black, or fewer than 10 moves."""
    if re.search(r"\b(AB|AW)\[", text):
        return None
    m = re.search(r"SZ\[(\d+)\]", text)
    if m and int(m.group(1)) != size:
        return None
    out = []
    for i, (colour, xy) in enumerate(MOVE_RE.findall(text)):
        if colour != "BW"[i % 2]:
            return None
        if not xy or (xy == "tt" and size <= 19):  # "tt" is a pass on boards up to 19x19
            out.append(PASS)
            continue
        x, y = ord(xy[0]) - 97, ord(xy[1]) - 97
        if not (0 <= x < size and 0 <= y < size):
            return None
        out.append(point(size, x, size - 1 - y))  # SGF rows count from the top
    return np.array(out, np.int64) if len(out) >= 10 else None


def _texts(path: Path):
    """Game record texts in a file: an SGF file is one, a month file one per line, a .zip holds either."""
    for _, data in record_members(path):
        yield from _split(data.decode("utf-8", "replace"))


def _split(text: str):
    if text.lstrip().startswith("("):
        yield text
    else:
        for line in text.splitlines():
            if ";B[" in line:
                yield line


def read_games(paths, size: int, limit: int) -> list:
    """Up to `limit` plain games (parse_moves) from files and folders, in file order."""
    games = []
    for f in record_files(paths):
        for text in _texts(f):
            moves = parse_moves(text, size)
            if moves is not None:
                games.append(moves)
                if len(games) >= limit:
                    return games
    return games


def read_teacher(path: Path, size: int) -> list[tuple[np.ndarray, dict[int, float]]]:
    """Positions and a teacher's move distributions from a JSON-lines file, one position a line:
    {"moves": ["E5", "C4", "pass", ...], "probs": {"C5": 0.43, "C6": 0.24, ...}}: the moves from the empty board
    (Black first, GTP vertices) and the teacher's probabilities of the stone moves of the position they reach
    (moves not named 0, pass left out, normalised to sum 1). Returns per line (the moves as point indices with
    the teacher's most probable move appended, {point: probability}). A line that is not such a position (bad
    JSON, an illegal move, no positive probability of a legal move) is a ValueError naming the file and line."""
    out = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                board = GoBoard(size)
                moves = [board.parse_vertex(str(v)) for v in item["moves"]]
                for v in item["moves"]:
                    board.play(board.to_move, str(v))
                probs: dict[int, float] = {}
                for v, x in item["probs"].items():
                    if str(v).lower() == "pass":
                        continue
                    if not board.is_legal(board.to_move, str(v)) or not float(x) >= 0.0:
                        raise ValueError(f"{v}: {x} is no probability of a legal move")
                    probs[board.parse_vertex(str(v))] = float(x)
                total = sum(probs.values())
                if not total > 0.0:
                    raise ValueError("no positive probability of a stone move")
            except (ValueError, KeyError, TypeError, AttributeError) as exc:
                raise ValueError(f"{path}:{number}: not a teacher position ({exc})") from exc
            probs = {m: x / total for m, x in probs.items()}
            top = max(probs, key=lambda m: probs[m])
            out.append((np.array(moves + [top], np.int64), probs))
    return out


def teacher_targets(probs: list, starts: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Per-row targets (movefit.train_epoch's q) of extracted teacher positions: row r of position t gets the
    teacher's probability of its move, probs[t] as read_teacher returns them."""
    q = np.zeros(len(points))
    for t, dist in enumerate(probs):
        for r in range(int(starts[t]), int(starts[t + 1])):
            q[r] = dist.get(int(points[r]), 0.0)
    return q


# --- features of the positions of a game -----------------------------------------------------------------------
@njit(cache=True)
def _replay(pos, moves, keep, model, rows, points, starts, played, codes, owner_playouts, policy, rng):
    """Replay a game from pos (the empty board). For each kept position whose move is a legal stone move: with
    codes (played moves only), the raw 12- and 24-point codes of the move played go to codes[0 / 1]; without,
    the weight indices (moveprior.weight_indices) of every legal stone move go to rows and its point to points,
    the first row of each position to starts and the index of the move played among its rows to played, with the
    position's ownership
    context (moveprior.G_OWNER) from owner_playouts playouts of the playout policy (bitmask `policy`, random state
    rng) when owner_playouts > 0. Returns (positions, rows) written; stops at an illegal move."""
    legal = np.empty(BOARD_CAP + 1, np.int32)
    ws = np.empty((WS_ROWS, BOARD_CAP), np.int64)
    ws_playouts = np.zeros((WS_ROWS, BOARD_CAP), np.int64)  # as workspace.new_workspace: the playouts need zeros
    own = np.zeros(BOARD_CAP)
    context = np.zeros(1 + BOARD_CAP)
    none = np.zeros(0)
    cap = max(1, int(DEFAULT_CAP_FACTOR * pos[SIZE] * pos[SIZE]))  # playout.move_cap, inline in a kernel
    sc = np.zeros((S_ROWS, BOARD_CAP), np.int64)
    stamp = np.zeros(2, np.int64)
    f = np.empty(M.N_GROUPS, np.int64)
    w, size = pos[STRIDE], pos[SIZE]
    only_played = codes.shape[1] > 0
    n_pos = 0
    n_rows = 0
    for t in range(moves.shape[0]):
        m = moves[t]
        n = gen_moves(pos, legal)
        if not contains(legal, n, m):
            break
        if keep[t] and m != PASS:
            if owner_playouts > 0 and not only_played:
                own[:] = 0.0
                run_playouts(pos, ws_playouts, rng, owner_playouts, cap, own, none, policy)
                context[0] = 1.0
                context[1:] = own / owner_playouts
            _setup(pos, ws)
            last, prev = M.last_moves(pos)
            if only_played:
                M.candidate_features(ws, sc, stamp, w, size, m, pos[SIDE], last, prev, none, f)
                codes[0, n_pos], codes[1, n_pos] = f[M.G_SHAPE12], f[M.G_SHAPE24]
            else:
                starts[n_pos] = n_rows
                for i in range(n):
                    p = legal[i]
                    if p == PASS:
                        continue
                    if p == m:
                        played[n_pos] = n_rows - starts[n_pos]
                    M.candidate_features(ws, sc, stamp, w, size, p, pos[SIDE], last, prev, context, f)
                    M.weight_indices(model, f)
                    rows[n_rows, :] = f
                    points[n_rows] = p
                    n_rows += 1
            n_pos += 1
        do_move(pos, np.int32(m))
    return n_pos, n_rows


def _keeps(games: list, sample: float, rng: np.random.Generator) -> list:
    return [rng.random(len(moves)) < sample for moves in games]


def played_codes(games: list, keeps: list, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The raw 12- and 24-point shape codes of the moves played at the kept positions."""
    out12, out24 = [], []
    none_i, none_r = np.zeros(0, np.int64), np.zeros((0, M.N_GROUPS), np.int32)
    for moves, keep in zip(games, keeps):
        codes = np.zeros((2, int(keep.sum()) + 1), np.int64)
        pos = new_pos(size, history_capacity=len(moves) + 8)
        n_pos, _ = _replay(pos, moves, keep, M.new_model(), none_r, none_i, none_i, none_i, codes, 0, 0, seed_rng(0))
        out12.append(codes[0, :n_pos])
        out24.append(codes[1, :n_pos])
    return np.concatenate(out12), np.concatenate(out24)


def vocabulary(codes: np.ndarray, min_count: int, capacity: int, no_key: float) -> np.ndarray:
    """A key block: the codes seen >= min_count times, the most frequent `capacity` of them, ascending, padded
    with no_key."""
    values, counts = np.unique(codes, return_counts=True)
    often = counts >= min_count
    chosen = values[often]
    if len(chosen) > capacity:
        chosen = chosen[np.argsort(-counts[often], kind="stable")[:capacity]]
    keys = np.full(capacity, no_key)
    keys[: len(chosen)] = np.sort(chosen)
    return keys


def extract(games: list, keeps: list, size: int, model: np.ndarray, owner_playouts: int = 0, seed: int = 1):
    """(rows int32 [R, N_GROUPS] of weight indices, starts [P + 1], played [P], points [R]: each row's move) of
    the kept positions; with owner_playouts > 0 each position's G_OWNER from that many playouts of the default
    playout policy."""
    chunks_r, chunks_s, chunks_p, chunks_m = [], [], [], []
    policy = int(default_params()[P_PLAYOUT_POLICY])
    rng = seed_rng(seed)
    base = 0
    none = np.zeros((2, 0), np.int64)
    for moves, keep in zip(games, keeps):
        cap = int(keep.sum())
        rows = np.empty((max(1, cap * size * size), M.N_GROUPS), np.int32)
        points = np.empty(rows.shape[0], np.int64)
        starts = np.zeros(cap + 1, np.int64)
        played = np.zeros(cap + 1, np.int64)
        pos = new_pos(size, history_capacity=len(moves) + 8)
        n_pos, n_rows = _replay(
            pos, moves, keep, model, rows, points, starts, played, none, owner_playouts, policy, rng
        )
        chunks_r.append(rows[:n_rows])
        chunks_m.append(points[:n_rows])
        chunks_s.append(starts[:n_pos] + base)
        chunks_p.append(played[:n_pos])
        base += n_rows
    starts = np.concatenate(chunks_s + [np.array([base], np.int64)])
    return np.concatenate(chunks_r), starts, np.concatenate(chunks_p), np.concatenate(chunks_m)


# --- fitting ---------------------------------------------------------------------------------------------------
@njit(cache=True)
def _position_nll(rows, a, b, k, w, p, grad, scale):
    """-log P(row a + k) among rows a..b under weights w (eq. 1 of moveprior; movefit.position_nll); with scale
    != 0, adds scale * d(-log P)/dw to grad. p is scratch. Returns (nll, rank of the played row: rows scoring
    higher)."""
    nll = position_nll(rows, a, b, k, w, np.ones(rows.shape[1], np.bool_), p, grad, scale)
    rank = 0
    for r in range(b - a):
        if p[r] > p[k]:
            rank += 1
    return nll, rank


@njit(cache=True)
def score(rows, starts, played, w):
    """(mean -log P of the moves played, top-1 and top-5 accuracy) over all positions."""
    p = np.empty(BOARD_CAP + 1)
    none = np.zeros(0)
    nll = 0.0
    top1 = 0
    top5 = 0
    n = played.shape[0]
    for t in range(n):
        x, rank = _position_nll(rows, starts[t], starts[t + 1], played[t], w, p, none, 0.0)
        nll += x
        top1 += rank == 0
        top5 += rank < 5
    return nll / max(1, n), top1 / max(1, n), top5 / max(1, n)


@njit(cache=True)
def cross_entropy(rows, starts, q, w):
    """Mean over positions of the cross-entropy -sum_r q[r] log P(r) to per-row targets q."""
    p = np.empty(BOARD_CAP + 1)
    none = np.zeros(0)
    use = np.ones(rows.shape[1], np.bool_)
    n = starts.shape[0] - 1
    total = 0.0
    for t in range(n):
        a, b = starts[t], starts[t + 1]
        total += position_cross_entropy(rows, a, b, q[a:b], w, use, p, none, 0.0)
    return total / max(1, n)


def entropy(starts: np.ndarray, q: np.ndarray) -> float:
    """Mean over positions of the entropy -sum_r q[r] log q[r] of per-row targets (the least cross-entropy)."""
    terms = np.where(q > 0.0, -q * np.log(np.where(q > 0.0, q, 1.0)), 0.0)
    return float(np.sum(terms)) / max(1, len(starts) - 1)


def fit(train, test, model, epochs: int, batch: int, lr: float, l2: float, seed: int, log=print,
        q=NO_TARGETS, test_q=NO_TARGETS) -> list:  # fmt: skip
    """Train the weights of model (its keys set) from zero, in place, on the moves played or, with per-row
    targets q, on them; returns per-epoch rows of (train loss, test nll, top1, top5), and with test_q a fifth,
    the test positions' KL divergence from their targets."""
    rows, starts, played = train[:3]
    w = model[M.KEYS : M.OWN_AT]
    w[:] = 0.0
    m1, m2, step = np.zeros_like(w), np.zeros_like(w), np.zeros(1, np.int64)
    use = np.ones(M.N_GROUPS, np.bool_)
    rng = np.random.default_rng(seed)
    curve = []
    for epoch in range(1, epochs + 1):
        t0 = time.time()
        loss = train_epoch(rows, starts, played, q, rng.permutation(len(played)), w, use, m1, m2, step, lr, l2,
                           batch, BOARD_CAP + 1)  # fmt: skip
        nll, top1, top5 = score(test[0], test[1], test[2], w)
        row: tuple[float, ...] = (float(loss), float(nll), float(top1), float(top5))
        kl = ""
        if test_q.shape[0] > 0:
            divergence = float(cross_entropy(test[0], test[1], test_q, w)) - entropy(test[1], test_q)
            row += (divergence,)
            kl = f"  test KL {divergence:.3f}"
        curve.append(row)
        log(
            f"epoch {epoch}: train {'H(q, P)' if q.shape[0] else '-log P'} {loss:.3f}  test -log P {nll:.3f}"
            f"  top-1 {top1:.1%}  top-5 {top5:.1%}{kl}  ({time.time() - t0:.0f} s)"
        )
    return curve


def run_go_moves(args) -> int:
    t0 = time.time()
    rng = np.random.default_rng(args.seed)
    if args.teacher:
        items = read_teacher(Path(args.teacher), args.size)
        games, probs = [g for g, _ in items], [d for _, d in items]
        what = "positions"
    else:
        games, probs = read_games(args.games, args.size, args.max_games), []
        what = "games"
    if len(games) <= args.test_games:
        print(f"go-moves: {len(games)} usable {what}, need more than --test-games {args.test_games}", file=sys.stderr)
        return 2
    order = rng.permutation(len(games))
    test_games = [games[i] for i in order[: args.test_games]]
    train_games = [games[i] for i in order[args.test_games :]]
    if probs:  # one position per teacher line: the one before its appended most probable move
        keeps = [np.arange(len(g)) == len(g) - 1 for g in train_games]
        test_keeps = [np.arange(len(g)) == len(g) - 1 for g in test_games]
        codes12, codes24 = played_codes(train_games, keeps, args.size)
    else:
        keeps = _keeps(train_games, args.sample, rng)
        codes12, codes24 = played_codes(train_games, _keeps(train_games, 1.0, rng), args.size)
        test_keeps = _keeps(test_games, 1.0, rng)
    model = M.new_model()
    model[: M.SHAPE12_KEYS] = vocabulary(codes12, args.min_count, M.SHAPE12_KEYS, M.NO_KEY12)
    model[M.SHAPE12_KEYS : M.KEYS] = vocabulary(codes24, args.min_count, M.SHAPE24_KEYS, M.NO_KEY24)
    n12 = int(np.sum(model[: M.SHAPE12_KEYS] < M.NO_KEY12))
    n24 = int(np.sum(model[M.SHAPE12_KEYS : M.KEYS] < M.NO_KEY24))
    train = extract(train_games, keeps, args.size, model, args.owner_playouts, args.seed)
    test = extract(test_games, test_keeps, args.size, model, args.owner_playouts, args.seed + 1)
    q, test_q = NO_TARGETS, NO_TARGETS
    if probs:
        q = teacher_targets([probs[i] for i in order[args.test_games :]], train[1], train[3])
        test_q = teacher_targets([probs[i] for i in order[: args.test_games]], test[1], test[3])
    print(
        f"{len(train_games)} training {what} ({len(train[2])} positions, {len(train[0])} candidate moves), "
        f"{len(test_games)} test {what} ({len(test[2])} positions); {n12} 12-point and {n24} 24-point shapes "
        f"in the vocabulary ({time.time() - t0:.0f} s)"
    )
    curve = fit(train, test, model, args.epochs, args.batch, args.lr, args.l2, args.seed, q=q, test_q=test_q)
    nll, top1, top5 = curve[-1][1:4]
    M.save_model(
        args.out,
        model,
        size=args.size,
        games=len(games),
        test_games=args.test_games,
        positions=len(train[2]),
        shapes12=n12,
        shapes24=n24,
        epochs=args.epochs,
        lr=args.lr,
        l2=args.l2,
        sample=args.sample,
        owner_playouts=args.owner_playouts,
        seed=args.seed,
        sources=[Path(g).name for g in (args.games or [args.teacher])],
        teacher=bool(probs),
        test_kl=curve[-1][4] if probs else 0.0,
        test_nll=nll,
        test_top1=top1,
        test_top5=top5,
    )
    print(f"wrote {args.out} ({time.time() - t0:.0f} s)")
    return 0
