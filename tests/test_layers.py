"""The layers of docs/README.md, read from the source: every import statement (at the top of a module, inside a
function, under TYPE_CHECKING) of every .py file under usi_engine/ and eval/, parsed with ast, so a regression
fails here before it shows as an import circle at run time."""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROTOCOL = "usi_engine.usi"
# the modules above the USI front-end: the command line and `python -m usi_engine`
PROTOCOL_IMPORTERS = {"usi_engine.cli", "usi_engine.__main__"}
SHOGI_PACKAGES = ("usi_engine.shogi", "usi_engine.shogi_eval", "usi_engine.shogi_search")


def module_name(path: Path) -> str:
    """Dotted name of a source file under ROOT (a package's __init__.py: the package)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module an import statement of the file names: `import a.b` -> a.b; `from a import b` -> a and a.b
    (b may be a module); relative imports resolved against the file's package."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.add(module)
            out.update(f"{module}.{alias.name}" for alias in node.names)
    return out


def sources(*packages: str) -> dict[str, set[str]]:
    """{module name: the modules it imports} for every .py file of the packages."""
    return {
        module_name(path): imported_modules(path)
        for package in packages
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def offenders(importers: dict[str, set[str]], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(
        f"{importer} imports {module}"
        for importer, modules in importers.items()
        for module in modules
        if any(within(module, package) for package in forbidden)
    )


ENGINE = sources("usi_engine")
EVAL = sources("eval")


def test_the_parser_sees_the_sources():
    """The walk finds the packages' modules and their imports (a broken walk would pass every test below)."""
    assert "usi_engine.usi" in ENGINE and "usi_engine.shogi_eval.features" in ENGINE and "eval" in EVAL
    assert "usi_engine.engine" in ENGINE["usi_engine.usi"]  # relative: `from .engine import Engine`
    assert "usi_engine.shogi.layout" in ENGINE["usi_engine.shogi_eval.features"]


def test_eval_and_usi_engine_depend_one_way():
    """eval/ (the recipes of the shipped weights) imports usi_engine; nothing in usi_engine imports eval."""
    assert offenders(ENGINE, ("eval",)) == []
    assert any(within(m, "usi_engine") for modules in EVAL.values() for m in modules)


def test_only_the_command_line_imports_the_usi_front_end():
    """The search, the games and the engine never import the protocol that drives them."""
    importers = {k: v for k, v in ENGINE.items() if k != PROTOCOL and k not in PROTOCOL_IMPORTERS}
    assert offenders(importers, (PROTOCOL,)) == []
    assert offenders(EVAL, (PROTOCOL,)) == []


@pytest.mark.parametrize(
    ("package", "allowed"),
    [
        ("usi_engine.jit", ()),  # the kernels' compile options: below every package
        ("usi_engine.shogi", ("usi_engine.jit",)),  # the rules: the bottom layer of shogi
        ("usi_engine.search", ("usi_engine.jit",)),  # the MCSS core names no game
        ("usi_engine.shogi_eval", ("usi_engine.shogi", "usi_engine.weightfile", "usi_engine.jit")),
        ("usi_engine.go", ("usi_engine.search", "usi_engine.weightfile", "usi_engine.jit")),
    ],
)
def test_lower_layers_import_only_what_is_below_them(package, allowed):
    """Each package imports, of the engine, only itself and the layers below it."""
    importers = {k: v for k, v in ENGINE.items() if within(k, package)}
    assert importers
    foreign = sorted(
        f"{importer} imports {module}"
        for importer, modules in importers.items()
        for module in modules
        if within(module, "usi_engine")
        and not within(module, package)
        and not any(within(module, below) for below in allowed)
    )
    assert foreign == []


def test_go_loads_nothing_of_shogi():
    """Go's modules (and the weight-file archive they read) import no shogi package."""
    go = {k: v for k, v in ENGINE.items() if within(k, "usi_engine.go") or k == "usi_engine.weightfile"}
    assert offenders(go, SHOGI_PACKAGES) == []


def test_weight_archive_is_numpy_and_the_standard_library():
    """usi_engine/weightfile.py, the format every game's weight files share, knows no game."""
    tops = {m.partition(".")[0] for m in ENGINE["usi_engine.weightfile"]}
    assert tops - set(sys.stdlib_module_names) == {"numpy"}
