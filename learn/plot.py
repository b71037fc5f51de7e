"""`python -m learn plot RUN [--out PNG]`: the learning curve of a run folder as a PNG (matplotlib).

Top: Elo of each evaluated checkpoint vs the start weights and vs the previous best, with the 95 %
intervals, over self-play games; one series per opponent, opening set and nodes per move or byoyomi (`learn
evaluate --vs/--vs-weights, --openings-seed, --nodes, --byoyomi`). Bottom: the batch surrogate loss
-mean r log pi_a(a_t) and the AdaGrad step norm over games. Reads RUN/metrics.jsonl (learn/run.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def read_metrics(run_dir) -> list:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.is_file():
        raise ValueError(f"{path}: no metrics (is {run_dir} a run folder?)")
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by a kill -9 at the very end
    return rows


def _series(row: dict) -> tuple:
    """An evaluation's series: (opponent label, opening set, nodes per move (None in rows older than the nodes
    field and in byoyomi rows), byoyomi in ms (0 at fixed nodes))."""
    return row["vs"], row.get("openings", "run"), row.get("nodes"), row.get("byoyomi_ms", 0)


def plot_run(run_dir, out=None) -> Path:
    """Draw the learning curve of run_dir into `out` (default RUN/learning-curve.png); returns the path."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise RuntimeError("plotting needs matplotlib: pip install '.[plot]'") from None
    rows = read_metrics(run_dir)
    batches = [r for r in rows if r.get("kind") == "batch"]
    evals = [r for r in rows if r.get("kind") == "eval"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    series = sorted(
        {_series(r) for r in evals if r.get("elo") is not None},
        key=lambda s: (s[0] != "start", s[0], s[1] != "run", s[1], s[2] or 0, s[3]),
    )
    for n, (label, openings, nodes, byoyomi_ms) in enumerate(series):
        pts = sorted(
            (r for r in evals if _series(r) == (label, openings, nodes, byoyomi_ms) and r.get("elo") is not None),
            key=lambda r: r["games_done"],
        )
        x = [r["games_done"] + 4 * n for r in pts]  # a small shift keeps overlapping bars apart
        y = [r["elo"] for r in pts]
        lo = [r["elo"] - (r["elo_lower"] if r["elo_lower"] is not None else r["elo"]) for r in pts]
        hi = [(r["elo_upper"] if r["elo_upper"] is not None else r["elo"]) - r["elo"] for r in pts]
        name = f"vs {label}" + ("" if openings == "run" else f" ({openings} openings)")
        name += "" if nodes is None else f", {nodes:,} nodes"
        name += f", byoyomi {byoyomi_ms / 1000:g} s" if byoyomi_ms else ""
        top.errorbar(x, y, yerr=[lo, hi], fmt="o-", capsize=3, label=name)
    top.axhline(0.0, color="grey", lw=0.8)
    top.set_ylabel("Elo (95 % interval)")
    top.set_title(f"learning curve: {Path(run_dir).name}")
    if evals:
        top.legend()
    if batches:
        x = [r["games_done"] for r in batches]
        bottom.plot(x, [r["loss"] for r in batches], color="tab:green", label="PG surrogate loss")
        twin = bottom.twinx()
        twin.plot(x, [r["step_norm"] for r in batches], color="tab:red", alpha=0.6, label="step norm")
        twin.set_ylabel("step norm (cp)")
        lines = bottom.get_lines() + twin.get_lines()
        bottom.legend(lines, [ln.get_label() for ln in lines], loc="upper right")
    bottom.set_xlabel("self-play games")
    bottom.set_ylabel("loss")
    fig.tight_layout()
    out = Path(out) if out else Path(run_dir) / "learning-curve.png"
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def add_plot_parser(sub) -> None:
    p = sub.add_parser("plot", help="learning curve PNG (Elo and loss) of a run folder")
    p.add_argument("run", help="run folder (contains metrics.jsonl)")
    p.add_argument("--out", default=None, help="PNG path (default RUN/learning-curve.png)")
    p.set_defaults(handler=plot_command)


def plot_command(a) -> int:
    try:
        print(plot_run(a.run, a.out))
    except (ValueError, OSError, RuntimeError) as e:
        print(f"plot: error: {e}", file=sys.stderr)
        return 2
    return 0
