"""`python -m learn shogi-moves-eval MODEL ... (--games FILE_OR_DIR ... | --positions FILE ...)`: the held-out
figures of shogi move priors on records none of them was fitted to, so that a prior a self-play run learned
(RUN/prior/vNNNNNN.npz) can be set beside the shipped one (usi_engine/shogi_search/weights/moves.npz).

The records are read as `learn shogi-moves` reads them (learn/shogi_moves.py: CSA, USI game lines, .zip archives
and folders with the same --min-rate / --min-plies filters; labelled `POSITION<TAB>MOVE` lines with --positions,
such as usi_engine/shogi_search/data/moveprior_positions.txt, 300 positions of games the shipped prior was not
fitted to), every position of every game and every labelled position is a test position, and the table is the
one `shogi-moves` prints for its test set: mean -log P of the move played among the search moves, top-1, top-5
and top-10 (ties broken at random: expected accuracy), beside a uniform guess. The MVV-LVA and static-evaluation
baselines of `shogi-moves` are left out: their temperatures are fitted on training positions, which this command
does not have.
"""

from __future__ import annotations

import sys

import numpy as np

from usi_engine.shogi_search import moveprior as M

from .shogi_moves import extract, print_figures, rank_figures, read_games, read_positions, row_scores


def add_shogi_moves_eval_parser(sub) -> None:
    """Register `shogi-moves-eval` (handler `run_shogi_moves_eval`)."""
    p = sub.add_parser(
        "shogi-moves-eval",
        help="held-out top-1 / top-5 / -log P of shogi move priors on game records",
        description=__doc__.splitlines()[0],
    )
    p.add_argument("models", nargs="+", help="move-prior files (.npz; e.g. usi_engine/shogi_search/weights/moves.npz)")
    p.add_argument("--games", nargs="*", default=[], help="CSA files, USI game-line files, .zip of them, folders")
    p.add_argument("--positions", nargs="*", default=[], help="files of POSITION<TAB>MOVE lines (labelled positions)")
    p.add_argument("--max-games", type=int, default=100000)
    p.add_argument("--min-rate", type=float, default=2500.0, help="both players' ratings, when the record has them")
    p.add_argument("--min-plies", type=int, default=40, help="moves a game must have")
    p.set_defaults(handler=run_shogi_moves_eval)


def evaluate(models: dict, data) -> dict:
    """{name: (beta, -log P, top-1, top-5, top-10)} of a uniform guess and of each model {name: weights} on the
    positions of `data` (shogi_moves.Data), as shogi-moves reports its test set."""
    use = np.ones(M.N_GROUPS, np.bool_)
    out = {"uniform": (0.0, *rank_figures(np.zeros(len(data.rows)), data.starts, data.played, 1.0))}
    for name, w in models.items():
        out[name] = (1.0, *rank_figures(row_scores(data.rows, w, use), data.starts, data.played, 1.0))
    return out


def run_shogi_moves_eval(args) -> int:
    """The table of every model on the records; exit code 0, or 2 for a bad model file or no positions."""
    try:
        models = {path: M.load_model(path) for path in args.models}
    except (ValueError, OSError) as e:
        print(f"shogi-moves-eval: {e}", file=sys.stderr)
        return 2
    games, dropped = read_games(args.games, args.min_rate, args.min_plies, args.max_games)
    labelled = read_positions(args.positions)
    data = extract(games + labelled, 1.0, np.random.default_rng(0))
    if data.positions == 0:
        print("shogi-moves-eval: no positions in the records given", file=sys.stderr)
        return 2
    print(f"{len(games)} games ({dropped} filtered out), {len(labelled)} labelled positions")
    print_figures(evaluate(models, data), data.positions, set(models))
    return 0
