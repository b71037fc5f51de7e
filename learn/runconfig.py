"""The configuration of a self-play learning run: `RunConfig` (with its `EvalConfig`) read from a TOML file.

A run configuration (configs/learn.toml, configs/learn-smoke.toml) has four tables: [run] (the folder, the
number of games, batch size, seed, workers, start weights), [learn] (the optimiser: learn/optim.py),
[selfplay] (learn/selfplay.py's SelfPlayConfig) and [eval] (the periodic evaluation matches), and an optional
fifth, [prior] (learn/selfplay_prior.py's PriorConfig: the move prior the searches widen by, and whether it
learns from the self-play trees; without it the prior does not learn). `load_config`
refuses unknown tables and settings and bad values with a ValueError naming the file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import selfplay as sp
from .selfplay_prior import PriorConfig


@dataclass
class EvalConfig:
    """The evaluation matches of a run: checkpoint vs the start weights and vs the previous best."""

    every_games: int = 0  # 0 = no periodic evaluation
    games: int = 20  # games per match (pairs of colours per opening)
    nodes: int = 20000  # fixed nodes per move
    concurrency: int = 1
    opening_plies: int = 6  # random opening plies (softmax at selfplay.opening_temp, start weights)
    max_moves: int = 256
    engine: str = ""  # engine command; empty = `{python} -m usi_engine` (this interpreter, learn/match/engines.py)
    hash_mb: int = 64


@dataclass
class RunConfig:
    """Everything a run is started with (the run folder keeps a copy as config.toml)."""

    dir: str
    games: int = 100  # total self-play games
    batch_games: int = 8  # games per weight update (and per checkpoint)
    seed: int = 1
    workers: int = 2
    start_weights: str = "material"  # a shipped name (usi_engine/shogi_eval/weights/NAME.npz) or a weight file path
    lr: float = 2.0  # AdaGrad step (centipawns)
    l2: float = 0.0  # pull toward the start weights
    max_step: float = 10.0  # per-coordinate step clip (centipawns)
    # feature groups that learn directly (learn/optim.py)
    groups: tuple = ("material", "kp", "pp", "ks", "ef", "em", "pe", "kz", "kpos")
    factor_lr: float = 0.0  # > 0: AdaGrad step of the shared piece-square factor of the KP table
    rel_factor_lr: float = 0.0  # > 0: AdaGrad step of the king-relative factor of the KP table
    group_scale: dict = field(default_factory=dict)  # group -> multiplier of lr and max_step (learn/optim.py)
    group_h0: dict = field(default_factory=dict)  # group -> AdaGrad accumulator at a coordinate's first step
    selfplay: sp.SelfPlayConfig = field(default_factory=sp.SelfPlayConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    prior: PriorConfig = field(default_factory=PriorConfig)


def apply_overrides(data: dict, overrides: Sequence[str]) -> None:
    """Set `TABLE.KEY=VALUE` items in the TOML tables `data` (VALUE a TOML literal such as 0, 1.5, true or
    "text"; anything else is taken as a bare string, e.g. a path); ValueError on an item without that shape.
    Unknown tables or keys are refused afterwards like those of the file."""
    for item in overrides:
        name, sep, raw = item.partition("=")
        table, dot, key = (part.strip() for part in name.partition("."))
        raw = raw.strip()
        if not (sep and dot and table and key):
            raise ValueError(f"--set {item!r}: expected TABLE.KEY=VALUE, for example selfplay.lam=0")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        section = data.setdefault(table, {})
        if not isinstance(section, dict):
            raise ValueError(f"--set {item!r}: {table} is not a table")
        old = section.get(key)
        if isinstance(value, str) and old is not None and not isinstance(old, str):
            raise ValueError(f"--set {item!r}: the config's {table}.{key} is {old!r}, not text")
        section[key] = value


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> RunConfig:
    """RunConfig from a TOML file with tables [run], [learn], [selfplay], [eval], [prior], with `overrides`
    (`TABLE.KEY=VALUE`, apply_overrides) on top; ValueError on mistakes."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    apply_overrides(data, overrides)
    unknown = set(data) - {"run", "learn", "selfplay", "eval", "prior"}
    if unknown:
        raise ValueError(f"{path}: unknown table(s) {', '.join(sorted(unknown))}")
    flat = dict(data.get("run", {}))
    flat.update(data.get("learn", {}))
    if "dir" not in flat:
        raise ValueError(f"{path}: [run] needs dir")
    known = set(RunConfig.__dataclass_fields__) - {"selfplay", "eval", "prior"}
    bad = set(flat) - known
    if bad:
        raise ValueError(f"{path}: unknown setting(s) {', '.join(sorted(bad))}")
    ev = data.get("eval", {})
    bad = set(ev) - set(EvalConfig.__dataclass_fields__)
    if bad:
        raise ValueError(f"{path}: unknown [eval] setting(s) {', '.join(sorted(bad))}")
    try:
        prior = PriorConfig.from_dict(data.get("prior", {}))
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    cfg = RunConfig(
        selfplay=sp.SelfPlayConfig.from_dict(data.get("selfplay", {})), eval=EvalConfig(**ev), prior=prior, **flat
    )
    cfg.groups = tuple(cfg.groups)
    for name, table, ok, what in (
        ("group_scale", cfg.group_scale, lambda v: v > 0, "positive number"),
        ("group_h0", cfg.group_h0, lambda v: v >= 0, "number >= 0"),
    ):
        if not isinstance(table, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and ok(v) for v in table.values()
        ):
            raise ValueError(f"{path}: {name} must be a table of group = {what}, got {table!r}")
    if min(cfg.games, cfg.batch_games, cfg.workers) < 1:
        raise ValueError(f"{path}: games, batch_games and workers must be >= 1")
    return cfg
