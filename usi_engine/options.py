"""The engine's option table: the one place the engine's option defaults are written, and the source of the
USI `usi` listing, `setoption` and the config files' checks.

Names follow YaneuraOu where the meaning matches (docs/references.md) and never contain spaces
(ShogiHome splits `option` lines on spaces). Values are validated here; a bad value raises ValueError
with a message the protocol layer prints as `info string error: ...`.

Config files override the table: configs/engine.toml next to the package (a source checkout only; shipped
with no active values, so a checkout and an installed engine announce the same defaults, and with commented
examples that tests/test_defaults.py checks against the table), then the file named by the environment
variable MCSS_ENGINE_CONFIG, each a TOML table `[options]` of option name -> value. A later file overrides an
earlier one; the merged values become the defaults announced by `usi`.
Pure Python (tomllib only): imported before `usiok`, so nothing heavy may be imported here.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

CONFIG_ENV = "MCSS_ENGINE_CONFIG"
DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs" / "engine.toml"
ENTERING_KING_RULES = ("NoEnteringKing", "CSARule24", "CSARule27", "TryRule")
SELECTION_POLICIES = ("softmax", "uct")
EXPANSION_MODES = ("exact", "lazy", "window")  # docs/search.md, "Expansion modes"
EMPTY_STRING = "<empty>"  # USI's spelling of an empty string value


@dataclass(frozen=True)
class Option:
    """One USI option: type is check | spin | combo | string | filename | button."""

    name: str
    type: str
    default: object = None
    min: int | None = None
    max: int | None = None
    choices: tuple = field(default_factory=tuple)
    help: str = ""

    def parse(self, text: str | None):
        """The typed value of `text` (a setoption value or a config value); ValueError if invalid."""
        if self.type == "button":
            return True
        if text is None:
            if self.type in ("string", "filename"):
                return ""
            raise ValueError(f"option {self.name} needs a value")
        if isinstance(text, bool):
            text = "true" if text else "false"
        text = str(text).strip()
        if self.type == "check":
            if text.lower() not in ("true", "false"):
                raise ValueError(f"option {self.name} takes true or false, got {text!r}")
            return text.lower() == "true"
        if self.type == "spin":
            try:
                value = int(text)
            except ValueError:
                raise ValueError(f"option {self.name} takes an integer, got {text!r}") from None
            if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
                raise ValueError(f"option {self.name} must be in [{self.min}, {self.max}], got {value}")
            return value
        if self.type == "combo":
            for choice in self.choices:
                if choice.lower() == text.lower():
                    return choice
            raise ValueError(f"option {self.name} takes one of {', '.join(self.choices)}, got {text!r}")
        return "" if text == EMPTY_STRING else text

    def usi_line(self, value) -> str:
        """The `option name ...` line announcing this option with `value` as its default."""
        line = f"option name {self.name} type {self.type}"
        if self.type == "button":
            return line
        if self.type == "check":
            return f"{line} default {'true' if value else 'false'}"
        if self.type == "spin":
            return f"{line} default {value} min {self.min} max {self.max}"
        if self.type == "combo":
            return f"{line} default {value} " + " ".join(f"var {c}" for c in self.choices)
        return f"{line} default {value if value else EMPTY_STRING}"


def _spin(name, default, lo, hi, help=""):
    return Option(name, "spin", default, lo, hi, help=help)


def _check(name, default, help=""):
    return Option(name, "check", default, help=help)


def _combo(name, default, choices, help=""):
    return Option(name, "combo", default, choices=choices, help=help)


def _file(name, help=""):
    return Option(name, "filename", "", help=help)


def _draw_value(colour):
    return _spin(f"DrawValue{colour}", -2, -30000, 30000, f"value of a repetition draw when we play {colour} (cp)")


# The defaults, each written here only (configs/engine.toml and MCSS_ENGINE_CONFIG override them; the measured
# reasons are beside the rows). Margins for a GUI on the same machine: NetworkDelay2 is 200 ms (400 until
# 325db81, 2026-11-26), not YaneuraOu's server value 1120: at byoyomi 1 s that leaves 800 ms of thinking and
# 200 ms for the pipe, thread scheduling and the watchdog (docs/usi.md, "Time margins": the slowest of ~5,000
# answers in a clock match came at 0.90 s).
OPTIONS = (
    _spin("Threads", min(4, os.cpu_count() or 1), 1, 256, "search threads"),
    _spin("USI_Hash", 256, 1, 65536, "node pool size in MB (allocated at isready)"),
    _check("USI_Ponder", False, "think on the opponent's time; optimum time +25 %"),
    _spin("MultiPV", 1, 1, 800, "number of best lines reported"),
    _file(
        "EvalFile",
        "evaluation weights (.npz path, or a shipped name: handmade, learned, material); empty = shipped default",
    ),
    _spin("NetworkDelay", 120, 0, 10000, "ms: average delay; stop times are rounded up to a second minus this"),
    _spin("NetworkDelay2", 200, 0, 10000, "ms: worst delay, subtracted from time + byoyomi (hard limit)"),
    _spin("MinimumThinkingTime", 2000, 1000, 100000, "ms: floor per move (minus NetworkDelay)"),
    _spin("SlowMover", 100, 1, 1000, "percent scaling of the optimum time"),
    _spin("ResignValue", 99999, 0, 99999, "resign when the score is at or below -ResignValue (cp)"),
    _draw_value("Black"),
    _draw_value("White"),
    _spin("MaxMovesToDraw", 0, 0, 100000, "game-length draw after this many moves (0 = off)"),
    _combo("EnteringKingRule", "CSARule27", ENTERING_KING_RULES),
    _spin("DepthLimit", 0, 0, 10000, "stop when the PV is this long (0 = off)"),
    _spin("NodesLimit", 0, 0, 2**62, "stop after this many evaluated positions (0 = off)"),
    _check("ConsiderationMode", False, "analysis: report every PV update"),
    _spin("PvInterval", 300, 0, 100000, "ms between PV reports (0 = every update)"),
    _file("LogFile", "log every line in and out to this file (empty = off)"),
    _spin("SoftmaxTemperature", 92, 1, 100000, "T_sel: selection temperature (cp)"),
    _spin("BackupTemperature", 92, 0, 100000, "T_back: backup temperature (cp); 0 = minimax backup"),
    _spin("CheckBonus", 0, 0, 100000, "cp: selection treats a checking move as this much better (0 = off)"),
    _spin("TemperatureSpread", 100, 100, 1000, "percent: threads use T_sel/spread .. T_sel*spread"),
    _spin("SoftmaxAnnealVisits", 0, 0, 100000000, "samples: T_sel/sqrt(1 + N/this) at a node of N samples (0 = off)"),
    _spin("SoftmaxTemperatureMin", 0, 0, 100000, "cp: floor of the annealed selection temperature"),
    _spin("BackupAnnealVisits", 0, 0, 100000000, "samples: T_back/sqrt(1 + N/this) at a node of N samples (0 = off)"),
    _spin("BackupTemperatureMin", 0, 0, 100000, "cp: floor of the annealed backup temperature"),
    _spin("QSearchDepth", 8, 0, 64, "quiescence depth cap (plies)"),
    # SEE pruning in the quiescence search: +170 Elo at equal nodes (100 games).
    _check("QSearchSEE", True, "quiescence leaves out captures that lose material by static exchange"),
    _spin("QSearchDelta", 0, 0, 100000, "cp: delta pruning margin of the quiescence search (0 = off)"),
    # QSearchRecapture 4 (docs/search.md): at equal nodes 75-25 against YaneuraOu material at 10,000 nodes where
    # the full quiescence scored 72-28; at byoyomi 1 s against its 20,000 nodes 46-54 (-28) where the full one
    # scored 33-67 (-123) (docs/strength.md).
    _spin("QSearchRecapture", 4, 0, 64, "quiescence ply from which only recaptures are searched (0 = off)"),
    # Expansion window (children within ExpansionWindow of the best get their exact quiescence value, the others
    # a bound, refined when reached; docs/search.md) since 66e33d5 (2026-11-26): at byoyomi 1 s against
    # YaneuraOu material at 20,000 nodes, 200 games side by side, window 86-114 (-49) and exact 75-125 (-89),
    # with 2x the samples per second (4-6x in sharp middlegames); at equal nodes the two played alike
    # (2026-11-23). Lazy played worse. ExpansionWindow 250 since 2b57b41 (2026-11-26): same rung, 200 games,
    # 115-85 (+53 [+8, +99]) against 400's -49 [-98, -1].
    _combo(
        "Expansion",
        "window",
        EXPANSION_MODES,
        "children by quiescence (exact), statically then refined when reached (lazy), or within a window",
    ),
    _spin("ExpansionWindow", 250, 0, 100000, "cp: window expansion, siblings this far below the best stay lazy"),
    _file("MovePriorFile", "move prior (.npz path); empty = shipped; none = no prior (every child enters at once)"),
    _spin("WidenChildren", 4, 0, 1000, "progressive widening: children a node enters at expansion (0 = all)"),
    _spin("WidenVisits", 4, 1, 1000000, "widening: a node holds WidenChildren + log_b(1 + N/this) children"),
    _spin("WidenGrowth", 160, 101, 10000, "percent: b of the widening schedule (one more child each b-fold N)"),
    _spin("MovePriorBias", 0, 0, 1000, "percent: widening's selection weighs a child by p^(this/100) (0 = off)"),
    _spin("LeafDepth", 0, 0, 2, "plies of full-width alpha-beta valuing a child when first reached (0 = quiescence)"),
    _check("MateProbe", True, "at each expansion, test every checking move for a mate in three"),
    _check("ThreatProbe", True, "at each expansion, test every other move for allowing a mate in one"),
    _spin("MateGuardPly", 0, 0, 31, "best root move: can the opponent then mate by checks in N plies? (0 = off)"),
    _spin("MateGuardNodes", 5000, 1, 10**9, "df-pn nodes per root move the mate guard asks about"),
    _check("GraphSearch", True, "share transpositions between paths"),
    _check("JointExpansion", True, "threads help evaluate the children of a node another thread expands"),
    _spin("HelperThreads", -1, -1, 255, "threads only evaluating others' expansions (-1: auto)"),
    _combo("SelectionPolicy", "softmax", SELECTION_POLICIES),
    _spin("Seed", 0, 0, 2**31 - 1, "random seed of the search threads"),
)
BY_NAME = {o.name.lower(): o for o in OPTIONS}


def _entering_rule_code(rule: str) -> int:
    from .shogi.board import declaration_rule_code  # the rules core: imported at the first isready only

    return declaration_rule_code(rule)


# Where options act: a SearchOptions field (usi_engine/search/settings.py) or a keyword of the shogi game's
# make_params (usi_engine/shogi_search/params.py), each fed by one option through a conversion. Adding a search
# option = a row in OPTIONS plus an entry here. (DrawValueBlack/White depend on the colour we play and are set
# per search by the engine; the other options act in the engine or the time plan.)
SEARCH_OPTION_FIELDS = {
    "threads": ("Threads", int),
    "hash_mb": ("USI_Hash", float),
    "t_sel": ("SoftmaxTemperature", float),
    "t_back": ("BackupTemperature", float),
    "t_sel_spread": ("TemperatureSpread", lambda percent: percent / 100.0),
    "forcing_bonus": ("CheckBonus", float),
    "anneal_visits": ("SoftmaxAnnealVisits", float),
    "t_sel_min": ("SoftmaxTemperatureMin", float),
    "back_anneal_visits": ("BackupAnnealVisits", float),
    "t_back_min": ("BackupTemperatureMin", float),
    "policy": ("SelectionPolicy", str),
    "graph": ("GraphSearch", bool),
    "joint": ("JointExpansion", bool),
    "helpers": ("HelperThreads", int),
    "widen_k0": ("WidenChildren", int),
    "widen_a": ("WidenVisits", float),
    "widen_b": ("WidenGrowth", lambda percent: percent / 100.0),
    "prior_beta": ("MovePriorBias", lambda percent: percent / 100.0),
    "seed": ("Seed", int),
}
GAME_PARAM_FIELDS = {
    "qsearch_depth": ("QSearchDepth", int),
    "qsearch_see": ("QSearchSEE", bool),
    "qsearch_delta": ("QSearchDelta", float),
    "qsearch_recapture": ("QSearchRecapture", int),
    "entering_rule": ("EnteringKingRule", _entering_rule_code),
    "max_moves": ("MaxMovesToDraw", int),
    "expansion": ("Expansion", str),
    "window": ("ExpansionWindow", float),
    "mate_probe": ("MateProbe", bool),
    "threat_probe": ("ThreatProbe", bool),
    "leaf_depth": ("LeafDepth", int),
}


def find(name: str) -> Option:
    """The option called `name` (case-insensitive); ValueError if there is none."""
    try:
        return BY_NAME[name.lower()]
    except KeyError:
        raise ValueError(f"unknown option {name!r}") from None


def config_paths() -> list[Path]:
    """Config files to read, in order (later ones override)."""
    paths = [DEFAULT_CONFIG]
    if os.environ.get(CONFIG_ENV):
        paths.append(Path(os.environ[CONFIG_ENV]))
    return paths


def load_config(path: Path) -> dict:
    """Typed option values of one TOML config file; ValueError naming the file on any problem."""
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"config {path}: {e}") from None
    table = data.get("options", {})
    if not isinstance(table, dict):
        raise ValueError(f"config {path}: [options] must be a table")
    values = {}
    for name, raw in table.items():
        try:
            opt = find(name)
            values[opt.name] = opt.parse(raw)
        except ValueError as e:
            raise ValueError(f"config {path}: {e}") from None
    return values


class OptionValues:
    """Current option values: built-in defaults overridden by the config files, then by setoption."""

    def __init__(self, config_files=None):
        self.values = {o.name: o.default for o in OPTIONS}
        self.errors = []
        for path in config_paths() if config_files is None else config_files:
            if not Path(path).is_file():
                if path != DEFAULT_CONFIG:
                    self.errors.append(f"config {path}: no such file")
                continue
            try:
                self.values.update(load_config(Path(path)))
            except ValueError as e:
                self.errors.append(str(e))

    def __getitem__(self, name: str):
        return self.values[find(name).name]

    def set(self, name: str, text: str | None) -> Option:
        """Apply `setoption name <name> value <text>`; ValueError (value unchanged) if invalid."""
        opt = find(name)
        self.values[opt.name] = opt.parse(text)
        return opt

    def usi_lines(self) -> list[str]:
        return [o.usi_line(self.values[o.name]) for o in OPTIONS]


def _mapped(values: OptionValues, fields: dict) -> dict:
    return {target: convert(values[name]) for target, (name, convert) in fields.items()}


def search_options(values: OptionValues) -> dict:
    """Keyword arguments of SearchOptions from the current option values (SEARCH_OPTION_FIELDS)."""
    return _mapped(values, SEARCH_OPTION_FIELDS)


def game_params(values: OptionValues) -> dict:
    """Keyword arguments of the shogi game's make_params from the current option values (GAME_PARAM_FIELDS)."""
    return _mapped(values, GAME_PARAM_FIELDS)
