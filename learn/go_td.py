"""`python -m learn go-td RUN ...`: offline TD learning of the Go value weights by self-play (seed 004 §3).

Logistic NTD2(0) with an epsilon-greedy afterstate policy over the learned value (usi_engine/go/value.py),
all weights starting at zero (or from --init). The run folder holds:
  config.json         the arguments of the first start (a resume must match board size, komi and shapes)
  weights/latest.npz  the weights after the last finished block (a Go value weight file)
  weights/gNNNNNNN.npz  a checkpoint every --checkpoint-every games
  metrics.jsonl       one row per block: games done, Black's score, mean moves, the mean squared error of
                      V against the final outcome over the block's positions (the learning curve)
  curve.png           that curve (--plot, needs matplotlib)
Running the same command again resumes from weights/latest.npz. Ctrl-C stops after the current block.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

BLOCK = 100


def add_go_td_parser(sub) -> None:
    p = sub.add_parser(
        "go-td", help="learn Go value weights (local shapes) by TD self-play", description=__doc__.splitlines()[0]
    )
    p.add_argument("run", help="run folder (created, or resumed when it holds weights/latest.npz)")
    p.add_argument("--games", type=int, default=10000, help="total self-play games of the run")
    p.add_argument("--size", type=int, default=9)
    p.add_argument("--komi", type=float, default=7.0)
    p.add_argument("--ks", default="123", help="square sizes of the shapes, e.g. 123 or 12")
    p.add_argument("--alpha", type=float, default=0.1, help="step size (seed 004: 0.1)")
    p.add_argument("--epsilon", type=float, default=0.1, help="exploration rate (seed 004: 0.1)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--init", default=None, help="start from this Go value weight file instead of zeros")
    p.add_argument("--checkpoint-every", type=int, default=5000)
    p.add_argument("--plot", action="store_true", help="write RUN/curve.png at the end")
    p.set_defaults(handler=run_go_td)


def _config(args) -> dict:
    return {
        "size": args.size,
        "komi": args.komi,
        "ks": sorted(int(c) for c in args.ks),
        "alpha": args.alpha,
        "epsilon": args.epsilon,
        "seed": args.seed,
    }


def read_curve(run: Path) -> list:
    path = run / "metrics.jsonl"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut by a kill at the very end
    return rows


def plot_curve(run: Path) -> Path:
    """RUN/curve.png: mean squared error of V against the outcome over games (and Black's score), smoothed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_curve(run)
    games = np.array([r["games_done"] for r in rows])
    window = max(1, len(rows) // 100)  # a running mean over 1 % of the blocks smooths the noise

    def smooth(key):
        values = np.array([r[key] for r in rows], dtype=float)
        return np.convolve(values, np.ones(window) / window, mode="valid")

    games = games[window - 1 :]  # each mean is drawn at the last block it covers
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(games, smooth("mse"), label=f"MSE of V vs outcome (mean of {window} blocks)")
    ax.plot(games, smooth("black_score"), label="Black's score", alpha=0.6)
    ax.set_xlabel("self-play games")
    ax.set_title(f"go-td: {run.name}")
    ax.legend()
    out = run / "curve.png"
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return out


def run_go_td(args) -> int:
    from tqdm import tqdm

    from usi_engine.go import shapes as S
    from usi_engine.go import value as V
    from usi_engine.go.layout import new_pos
    from usi_engine.go.playout import move_cap, seed_rng

    run = Path(args.run)
    (run / "weights").mkdir(parents=True, exist_ok=True)
    config = _config(args)
    cfg_path = run / "config.json"
    if cfg_path.is_file():
        old = json.loads(cfg_path.read_text())
        for key in ("size", "komi", "ks"):
            if old[key] != config[key]:
                print(f"go-td: {run} was started with {key}={old[key]}, not {config[key]}", file=sys.stderr)
                return 2
    else:
        cfg_path.write_text(json.dumps(config, indent=1))
    ks = tuple(config["ks"])
    tab = S.shape_tables(args.size, ks)
    latest = run / "weights" / "latest.npz"
    rows = read_curve(run)
    done = rows[-1]["games_done"] if rows and latest.is_file() else 0
    if done:
        theta, _ = V.read_value_weights(latest, args.size, ks)
    elif args.init:
        theta, _ = V.read_value_weights(args.init, args.size, ks)
    else:
        theta = np.zeros(S.n_weights(tab))
    pos = new_pos(args.size, args.komi)
    rng = seed_rng(args.seed * 1_000_003 + done)
    cap = move_cap(args.size)
    bar = tqdm(total=args.games, initial=done, unit="game", dynamic_ncols=True)
    try:
        with open(run / "metrics.jsonl", "a", encoding="utf-8") as log:
            while done < args.games:
                n = min(BLOCK, args.games - done)
                start = time.time()
                wins, moves, err, positions = V.td_selfplay(pos, tab, theta, n, args.alpha, args.epsilon, cap, rng)
                done += n
                meta = dict(games=done, komi=args.komi, alpha=args.alpha, epsilon=args.epsilon)
                V.save_value_weights(run / "weights" / "latest.tmp", theta, args.size, ks, **meta)
                os.replace(run / "weights" / "latest.tmp", latest)  # a kill never leaves half a file
                if done % args.checkpoint_every < n:
                    V.save_value_weights(run / "weights" / f"g{done:08d}.npz", theta, args.size, ks, **meta)
                row = {
                    "games_done": done,
                    "black_score": wins / n,
                    "moves": moves / n,
                    "mse": err / max(1, positions),
                    "seconds": time.time() - start,
                }
                log.write(json.dumps(row) + "\n")
                log.flush()
                bar.update(n)
                bar.set_postfix(mse=f"{row['mse']:.3f}", black=f"{row['black_score']:.2f}")
    except KeyboardInterrupt:
        print(f"\ngo-td: stopped after {done} games; run the same command to resume", file=sys.stderr)
    finally:
        bar.close()
    if args.plot:
        print(f"curve: {plot_curve(run)}")
    return 0
