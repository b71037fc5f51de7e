"""`python -m learn run CONFIG [--resume] [--workers N] [--ray-address ADDR]`, `python -m learn evaluate RUN` and
`python -m learn probe CONFIG [--set TABLE.KEY=VALUE ...]`: the command line of self-play learning runs
(docs/learning.md).

`run` starts the run a configuration describes (learn/runconfig.py) in its folder, or continues it with
`--resume` (learn/run.py); `probe` plays one batch at fixed weights and prints its gradient statistics;
`evaluate` plays an evaluation match between two checkpoints of a run folder, or a checkpoint and a weight
file, and appends its Elo to the run's metrics. Errors are printed as `run: error: ...` (`probe: error:`,
`evaluate: error:`) with exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from .run import Run, eval_openings
from .runconfig import load_config
from .runfiles import checkpoint_games, weights_path


def add_run_parser(sub: argparse._SubParsersAction) -> None:
    """Register `run` (handler `run_command`)."""
    p = sub.add_parser(
        "run",
        help="self-play PG-expectation learning run (checkpoints, resume, workers)",
        description="Self-play learning (docs/learning.md).",
    )
    p.add_argument("config", help="TOML run configuration (configs/learn.toml)")
    p.add_argument("--resume", action="store_true", help="continue the run in the configured folder")
    p.add_argument("--workers", type=int, default=None, help="local worker processes (default: config)")
    p.add_argument("--ray-address", default=None, help="run the self-play tasks on this Ray cluster")
    p.add_argument("--dir", default=None, help="override the run folder of the config")
    p.set_defaults(handler=run_command)


def run_command(a: argparse.Namespace) -> int:
    """`learn run`: play the run; prints its final counters as JSON. Exit code 0, or 2 on an error."""
    try:
        cfg = load_config(a.config)
        if a.dir:
            cfg.dir = a.dir
        if a.workers is not None and a.workers < 1:
            raise ValueError("--workers must be >= 1")
        state = Run(cfg, a.config, a.workers, a.ray_address).run(a.resume)
    except (ValueError, OSError, RuntimeError) as e:
        print(f"run: error: {e}", file=sys.stderr)
        return 2
    print(json.dumps({k: state[k] for k in ("version", "games_done", "wins_b", "wins_w", "draws", "best")}))
    return 0


def add_evaluate_parser(sub: argparse._SubParsersAction) -> None:
    """Register `evaluate` (handler `evaluate_command`)."""
    p = sub.add_parser(
        "evaluate",
        help="match a checkpoint of a run folder against another; Elo into its metrics",
        description="Play checkpoint VERSION of RUN against checkpoint --vs at the run's [eval] "
        "settings and append the result to RUN/metrics.jsonl (drawn by `plot`). "
        "Safe beside a running `run`: it reads checkpoints and only appends.",
    )
    p.add_argument("run", help="run folder (contains config.toml and weights/)")
    p.add_argument("--version", type=int, default=None, help="checkpoint to evaluate (default: the latest)")
    p.add_argument("--vs", type=int, default=0, help="opponent checkpoint (default 0 = the start weights)")
    p.add_argument(
        "--vs-weights",
        default=None,
        metavar="FILE",
        help="opponent: this weight file instead of a checkpoint (e.g. usi_engine/shogi_eval/weights/default.npz; "
        "the series is named by the file's stem)",
    )
    p.add_argument("--nodes", type=int, default=None, help="nodes per move (default: the run's eval.nodes)")
    p.add_argument(
        "--byoyomi",
        type=int,
        default=None,
        metavar="MS",
        help="play at this byoyomi per move instead of fixed nodes (no main time; one match at a time on a quiet "
        "machine: the result depends on the CPU each engine gets)",
    )
    p.add_argument("--games", type=int, default=None, help="games (default: the run's eval.games)")
    p.add_argument(
        "--openings", default=None, help="opening file (docs/match.md; default: the run's seeded eval openings)"
    )
    p.add_argument(
        "--openings-seed",
        type=int,
        default=None,
        help="draw the eval openings with this seed instead of the run's (an independent set)",
    )
    p.add_argument("--concurrency", type=int, default=None, help="games at once (default: eval.concurrency)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="keep the games an interrupted evaluation of the same checkpoints, games and openings finished "
        "(its summary.json) and play the rest",
    )
    p.set_defaults(handler=evaluate_command)


def evaluate_command(a: argparse.Namespace) -> int:
    """`learn evaluate`: play the match and append its row; prints the summary. Exit code 0, 1 when
    interrupted (no row written), 2 on an error."""
    from .match.match import MatchError, format_summary, load_openings

    try:
        if a.openings and a.openings_seed is not None:
            raise ValueError("--openings and --openings-seed exclude each other")
        if a.games is not None and a.games < 1:
            raise ValueError("--games must be >= 1")
        if a.nodes is not None and a.nodes < 1:
            raise ValueError("--nodes must be >= 1")
        if a.byoyomi is not None and a.byoyomi < 1:
            raise ValueError("--byoyomi must be >= 1 (milliseconds)")
        if a.byoyomi is not None and a.nodes is not None:
            raise ValueError("--nodes and --byoyomi exclude each other")
        if a.vs_weights and a.vs:
            raise ValueError("--vs and --vs-weights exclude each other")
        run_dir = Path(a.run)
        cfg = load_config(run_dir / "config.toml")
        cfg.dir = str(run_dir)
        if a.concurrency is not None:
            cfg.eval.concurrency = a.concurrency
        run = Run(cfg, run_dir / "config.toml")
        state = run.load_state()
        version = state["version"] if a.version is None else a.version
        for v in (version,) if a.vs_weights else (version, a.vs):
            if not weights_path(run_dir, v).is_file():
                raise ValueError(f"{weights_path(run_dir, v)}: no such checkpoint")
        opponent_weights = None
        if a.vs_weights:
            from usi_engine.shogi_eval.evalfile import read_weights

            opponent_weights = Path(a.vs_weights)
            read_weights(opponent_weights)  # a missing or corrupt file is named here, before any game
        if a.openings:
            openings = load_openings("shogi", a.openings, 9, None)
        elif a.openings_seed is not None:
            openings = eval_openings(cfg, max(1, (a.games or cfg.eval.games) // 2), a.openings_seed)
        else:
            openings = None
        label = opponent_weights.stem if opponent_weights else "start" if a.vs == 0 else f"v{a.vs}"
        name = Path(a.openings).stem if a.openings else f"seed{a.openings_seed}" if openings else "run"
        summary = run.evaluate(
            version,
            a.vs,
            label,
            checkpoint_games(run_dir, version),
            a.games,
            openings,
            name,
            a.resume,
            a.nodes,
            opponent_weights,
            a.byoyomi or 0,
        )
    except (ValueError, OSError, RuntimeError, MatchError) as e:
        print(f"evaluate: error: {e}", file=sys.stderr)
        return 2
    print(format_summary(summary))
    if summary["interrupted"]:
        print(
            f"evaluate: interrupted after {summary['games']} games: no metrics row written; the same command "
            "with --resume plays the rest",
            file=sys.stderr,
        )
        return 1
    return 0


def add_probe_parser(sub: argparse._SubParsersAction) -> None:
    """Register `probe` (handler `probe_command`)."""
    p = sub.add_parser(
        "probe",
        help="the learning signal of one batch at fixed weights (self-play games, statistics, no run kept)",
        description=(
            "Play one batch of a run configuration's self-play games at its start weights and print the batch "
            "statistics a run writes (half_agreement, signal_games_*, grad_norm; learn/batchstats.py) as JSON: "
            "whether a setting gives the gradient a direction, without a learning run (docs/learning.md)."
        ),
    )
    p.add_argument("config", help="TOML run configuration (for example configs/ablation-pg.toml)")
    p.add_argument("--games", type=int, default=32, help="games of the batch (default 32, at least 2)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="TABLE.KEY=VALUE",
        help="override a setting of the config (repeatable), e.g. --set selfplay.lam=0 "
        "--set run.start_weights=runs/RUN/weights/v000016.npz",
    )
    p.add_argument("--workers", type=int, default=None, help="local worker processes (default: config)")
    p.add_argument("--dir", default=None, help="keep the probe's run folder here (default: a temporary one)")
    p.set_defaults(handler=probe_command)


def probe_command(a: argparse.Namespace) -> int:
    """`learn probe`: one batch of `--games` self-play games at the start weights; prints {config, set, games,
    the batch row's gradient statistics} as JSON (and writes it to DIR/probe.json with --dir)."""
    try:
        if a.games < 2:
            raise ValueError("--games must be >= 2 (the statistics compare the games of the batch)")
        if a.workers is not None and a.workers < 1:
            raise ValueError("--workers must be >= 1")
        cfg = load_config(a.config, a.set)
        cfg.games = cfg.batch_games = a.games
        cfg.eval.every_games = 0
        with tempfile.TemporaryDirectory(prefix="learn-probe-") as tmp:
            cfg.dir = a.dir or str(Path(tmp) / "probe")
            Run(cfg, a.config, a.workers).run(resume=False)
            rows = [json.loads(line) for line in (Path(cfg.dir) / "metrics.jsonl").read_text().splitlines() if line]
    except (ValueError, OSError, RuntimeError) as e:
        print(f"probe: error: {e}", file=sys.stderr)
        return 2
    row = next(r for r in rows if r.get("kind") == "batch")
    keep = ("games", "half_agreement", "grad_norm", "loss", "plies", "game_seconds", "reasons")
    out = {"config": str(a.config), "set": a.set, "start_weights": cfg.start_weights}
    out |= {k: row[k] for k in keep} | {k: v for k, v in row.items() if k.startswith("signal_games_")}
    if a.dir:
        (Path(a.dir) / "probe.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out))
    return 0
