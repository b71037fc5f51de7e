"""Kernels compiled without numba's reference counting (`jit.bare_kernel`, numba's `_nrt=False`; docs/search.md,
"Kernels without reference counting") are safe only if no array reference crosses their boundary: such a kernel
returns no array (its caller would release a reference it never took) and takes none back from a kernel it calls
(nothing would release it). The Go playouts and tactics, most shogi kernels (rules, evaluation, quiescence, mate
search) and the search core are compiled that way; this test compiles them afresh through a real 9x9 search, real
playouts and real shogi searches, then checks every compiled signature."""

import ast
import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
import textwrap

import numpy as np
from numba import njit, types
from numba.core.registry import CPUDispatcher

import usi_engine
from usi_engine.go.game import GoAdapter, default_params, moves_form
from usi_engine.go.layout import new_pos
from usi_engine.go.moveprior import read_model, shipped_model
from usi_engine.go.playout import (
    POLICY_LADDERS,
    POLICY_MOGGY,
    POLICY_MOGGY_LOCAL,
    POLICY_PATTERNS,
    POLICY_SACRIFICE,
    POLICY_SELFATARI,
    move_cap,
    run_playouts,
    seed_rng,
)
from usi_engine.go.workspace import new_workspace
from usi_engine.search.searcher import Searcher
from usi_engine.search.settings import Limits, SearchOptions


def _holds_array(t) -> bool:
    if isinstance(t, types.Array):
        return True
    if isinstance(t, types.BaseTuple):
        return any(_holds_array(x) for x in t.types)
    return False


def _kernels():
    """(qualified name, dispatcher) of every kernel defined in the engine's modules."""
    found = []
    for info in pkgutil.walk_packages(usi_engine.__path__, "usi_engine."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == module.__name__:
                found.append((f"{module.__name__}.{name}", obj))
    return found


def _callees(dispatcher):
    """The kernels a kernel's source calls by name or as module.attribute."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(dispatcher.py_func)))
    scope = dispatcher.py_func.__globals__
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        target = None
        if isinstance(node.func, ast.Name):
            target = scope.get(node.func.id)
        elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            target = getattr(scope.get(node.func.value.id), node.func.attr, None)
        if isinstance(target, CPUDispatcher):
            out.append(target)
    return out


def _exercise_shogi() -> None:
    """The shogi kernels with the types the engine uses: a search as a GUI gets it (the USI defaults, the
    shipped weights and move prior), the expansion modes with the probes and the deep leaf, the full
    evaluation with its features, and the mate solver."""
    from usi_engine.shogi.board import Board
    from usi_engine.shogi_eval.features import MAX_FEATURES
    from usi_engine.shogi_eval.linear import eval_features, evaluate
    from usi_engine.shogi_search.bench import shogi_search_set
    from usi_engine.shogi_search.game import ShogiAdapter, make_params
    from usi_engine.shogi_search.mate import MateSolver
    from usi_engine.shogi_search.quiescence import quiesce

    adapter, positions, settings = shogi_search_set()
    Searcher(adapter, SearchOptions(hash_mb=16, seed=1, **settings)).search(positions[1], Limits(samples=200))
    for expansion in ("lazy", "window"):
        params = make_params(expansion=expansion, mate_probe=True, threat_probe=True, qsearch_see=True, leaf_depth=2)
        other = ShogiAdapter(adapter.weights, params, adapter.move_model)
        Searcher(other, SearchOptions(hash_mb=16, seed=1, **settings)).search(positions[2], Limits(samples=100))
    w = adapter.weights
    features = np.empty(MAX_FEATURES, np.int64), np.empty(MAX_FEATURES, np.float64)
    evaluate(positions[3], w), eval_features(positions[3], w, *features), quiesce(positions[3], w)
    board = Board("4k4/9/4P4/9/9/9/9/9/4K4 b G2r2b3g4s4n4l17p 1")
    MateSolver(1 << 12).solve(board, node_limit=2000)


def _exercise_go() -> None:
    """The Go kernels and the search core with the types the engine uses: a 9x9 RAVE search with the shipped
    move prior, and playouts under every optional rule."""
    size = 9
    params = default_params(
        prior_counts=True, moves_experience_form=(*moves_form(size), 0.0), playout_patterns=True, prior_moves=1.0
    )
    adapter = GoAdapter(size, params)
    adapter.set_move_model(read_model(shipped_model(size))[0])
    searcher = Searcher(adapter, SearchOptions(policy="rave", hash_mb=16, seed=1, prior_counts=True))
    searcher.search(new_pos(size, komi=7.0), Limits(samples=300))
    ws, rng, none = new_workspace(), seed_rng(1), np.zeros(0)
    for policy in (
        POLICY_PATTERNS | POLICY_LADDERS | POLICY_SELFATARI | POLICY_SACRIFICE,
        POLICY_PATTERNS | POLICY_MOGGY | POLICY_MOGGY_LOCAL,
    ):
        run_playouts(new_pos(size, komi=7.0), ws, rng, 20, move_cap(size), none, none, policy)


def _problems(kernels):
    """What the compiled kernels without reference counting among `kernels` get wrong."""
    problems = []
    for name, k in kernels:
        if k.targetoptions.get("_nrt") is not False:
            continue
        for sig in k.nopython_signatures:
            if _holds_array(sig.return_type):
                problems.append(f"{name} returns {sig.return_type}")
        for callee in _callees(k):
            for sig in callee.nopython_signatures:
                if _holds_array(sig.return_type):
                    problems.append(f"{name} takes {sig.return_type} from {callee.py_func.__name__}")
    return problems


@njit(_nrt=False)
def _bare_view(a):
    return a[1:], a.shape[0]  # (numba itself refuses a bare view)


@njit(_nrt=True)
def _fresh(n):
    return np.zeros(n)


@njit(_nrt=False)
def _bare_caller(n):
    return _fresh(n)[0]


def test_the_check_finds_a_returned_view_and_a_received_array():
    _bare_view(np.zeros(3))
    _bare_caller(3)
    kernels = [("view", _bare_view), ("caller", _bare_caller), ("fresh", _fresh)]
    assert _problems(kernels) == [
        "view returns Tuple(array(float64, 1d, C), int64)",
        "caller takes array(float64, 1d, C) from _fresh",
    ]


def _unsettled(kernels):
    """The kernels that bare kernels among `kernels` call and that name no reference-counting setting of their own
    (`jit.bare_kernel` or `jit.counted_kernel`): compiled first through a bare caller, such a kernel is compiled
    with the caller's setting, and one that allocates then fails to compile (on a cold cache only). A kernel
    inlined into its callers (numba's inline="always") is typed in each caller and fails at once if it cannot."""
    out = set()
    for name, k in kernels:
        if k.targetoptions.get("_nrt") is not False:
            continue
        for callee in _callees(k):
            if "_nrt" not in callee.targetoptions and callee.targetoptions.get("inline") != "always":
                out.add(f"{name} calls {callee.py_func.__module__}.{callee.py_func.__name__}")
    return sorted(out)


@njit
def _plain(n):
    return np.zeros(n).sum()


@njit(_nrt=False)
def _bare_caller_of_plain(n):
    return _plain(n) + _bare_caller(n)


def test_the_check_finds_a_callee_of_a_bare_kernel_without_its_own_setting():
    kernels = [("caller", _bare_caller_of_plain), ("bare", _bare_caller), ("plain", _plain)]
    assert _unsettled(kernels) == [f"caller calls {__name__}._plain"]


def test_every_kernel_a_bare_kernel_calls_names_its_own_setting():
    """Static (nothing is compiled): the rule that keeps a cold cache from compiling an allocating kernel
    without numba's runtime because a bare kernel reached it first."""
    assert _unsettled(_kernels()) == []


def report(game: str) -> tuple[int, list[str]]:
    """Exercise the kernels of `game` ("go": Go and the search core, "shogi"), then (how many compiled kernels run
    without reference counting, _problems)."""
    _exercise_go() if game == "go" else _exercise_shogi()
    kernels = _kernels()
    compiled = [k for _, k in kernels if k.targetoptions.get("_nrt") is False and k.nopython_signatures]
    return len(compiled), _problems(kernels)


def test_kernels_without_reference_counting_pass_no_array_references(tmp_path):
    # a fresh numba cache each: kernels loaded from the cache keep no signatures of the kernels they call; the
    # two games compile in two processes at once (the suite runs on one core otherwise)
    runs = {}
    for game in ("go", "shogi"):
        env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / game)}
        code = f"import json; from tests.test_kernel_refcounts import report; print(json.dumps(report({game!r})))"
        runs[game] = subprocess.Popen(
            [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    least = {"go": 40, "shogi": 80}
    for game, run in runs.items():
        out, err = run.communicate(timeout=900)
        assert run.returncode == 0, err[-3000:]
        count, problems = json.loads(out.strip().splitlines()[-1])
        assert count >= least[game], f"the {game} kernels run without reference counting"
        assert problems == []
