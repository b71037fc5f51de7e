"""Each default is written once: the USI option table (usi_engine/options.py) and the Go player's settings
(PlayerSettings, usi_engine/go/player.py). These tests keep what repeats or shows them from drifting: the GTP
command line, the source checkout's configs/engine.toml and its commented examples, and the option tables of
docs/usi.md and docs/go.md."""

from __future__ import annotations

import argparse
import dataclasses
import re
import tomllib
from pathlib import Path

from usi_engine.go.player import PlayerSettings
from usi_engine.gtp_options import build_parser, player_settings
from usi_engine.options import DEFAULT_CONFIG, OPTIONS, Option, OptionValues, find, load_config

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_LINE = re.compile(r"^#\s*([A-Za-z][A-Za-z0-9_]*)\s*=\s*(.+)$")
COMPUTED_IN_DOCS = {"Threads": "min(4,"}  # defaults that depend on the machine: docs/usi.md gives the rule


def _flag_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's options other than --help."""
    return [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


def _other_value(action: argparse.Action) -> list[str]:
    """Command-line words that give `action` a value other than its default."""
    flag = action.option_strings[0]
    if isinstance(action, argparse._StoreTrueAction):
        return [flag]
    if action.choices:
        return [flag, next(str(c) for c in action.choices if c != action.default)]
    numeric = isinstance(action.default, (int, float)) and not isinstance(action.default, bool)
    if action.type in (int, float) or numeric:
        return [flag, str(1 if action.default is None else action.default + 1)]
    return [flag, "elsewhere.npz"]


def _doc_table(path: Path, header: str) -> list[tuple[str, str]]:
    """(first cell, second cell) of each row of the markdown table that starts with `header`."""
    lines = path.read_text().splitlines()
    start = lines.index(header) + 2  # the header and the |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = line.split("|")
        rows.append((cells[1].strip(), cells[2].strip()))
    return rows


def _split_row(names: str, defaults: str, sep: str) -> list[tuple[str, str]]:
    """(name, first word of its default) for a row naming one or more options (`A / B | 1 / 2`, or one
    default shared by all)."""
    keys = [n.strip().strip("`") for n in names.split(sep)]
    values = [d.strip() for d in defaults.split(sep + " " if sep == "," else sep)]
    values = values * len(keys) if len(values) == 1 else values[: len(keys)]
    assert len(values) == len(keys), f"row {names!r}: defaults {defaults!r}"
    return [(k, v.split()[0].strip("`")) for k, v in zip(keys, values)]


def _usi_text(option: Option) -> str:
    """How docs/usi.md writes `option`'s default."""
    if option.type == "check":
        return "true" if option.default else "false"
    if option.type in ("string", "filename") and not option.default:
        return "empty"
    return str(option.default)


def test_gtp_command_line_defaults_are_player_settings():
    """An empty command line gives PlayerSettings(), and every setting can be changed from the command line."""
    parser = build_parser()
    assert player_settings(parser.parse_args([])) == PlayerSettings()
    argv = [word for action in _flag_actions(parser) for word in _other_value(action)]
    changed = player_settings(parser.parse_args(argv))
    default = PlayerSettings()
    same = [f.name for f in dataclasses.fields(PlayerSettings) if getattr(changed, f.name) == getattr(default, f.name)]
    assert not same, f"PlayerSettings fields the command line does not reach: {same}"


def test_shipped_engine_config_overrides_nothing_and_its_examples_are_real_options():
    """configs/engine.toml (read in a source checkout only) sets no value, so a checkout announces the table's
    defaults as an installed engine does; each commented example names a real option with a valid value."""
    assert load_config(DEFAULT_CONFIG) == {}
    values = OptionValues(config_files=[DEFAULT_CONFIG])
    assert not values.errors
    assert values.values == {o.name: o.default for o in OPTIONS}
    text = DEFAULT_CONFIG.read_text()
    examples = [EXAMPLE_LINE.match(line) for line in text.split("[options]", 1)[1].splitlines()]
    examples = [m for m in examples if m]
    assert examples, "configs/engine.toml shows no example"
    for m in examples:
        raw = tomllib.loads(f"value = {m.group(2)}")["value"]  # the value as the file would hold it uncommented
        find(m.group(1)).parse(raw)


def test_usi_doc_table_lists_every_option_with_its_default():
    """docs/usi.md "Options": one row per option of the table, each with the table's default."""
    seen = {}
    for names, defaults in _doc_table(ROOT / "docs" / "usi.md", "| Option | Default | Meaning |"):
        for name, word in _split_row(names, defaults, "/"):
            seen[name] = word
    assert sorted(seen) == sorted(o.name for o in OPTIONS)
    for option in OPTIONS:
        expected = COMPUTED_IN_DOCS.get(option.name) or _usi_text(option)
        assert seen[option.name] == expected, f"docs/usi.md: {option.name} default {seen[option.name]!r}"


def test_go_doc_table_lists_every_gtp_option_with_its_default():
    """docs/go.md "Playing": one row per command-line option, each with the parser's default (a None default is
    described in words there: the shipped file, the size-dependent prior weight, no playout limit)."""
    seen = {}
    for names, defaults in _doc_table(ROOT / "docs" / "go.md", "| Option | Default | Meaning |"):
        for name, word in _split_row(names, defaults, ","):
            seen[name] = word
    actions = {a.option_strings[0]: a for a in _flag_actions(build_parser())}
    assert sorted(seen) == sorted(actions)
    for flag, action in actions.items():
        default = action.default
        if default is None:
            continue
        if isinstance(action, argparse._StoreTrueAction):
            expected = "on" if default else "off"
            assert seen[flag] == expected, f"docs/go.md: {flag} default {seen[flag]!r}"
        elif isinstance(default, str):
            assert seen[flag] == default, f"docs/go.md: {flag} default {seen[flag]!r}"
        else:
            assert float(seen[flag]) == float(default), f"docs/go.md: {flag} default {seen[flag]!r}"
