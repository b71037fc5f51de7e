"""Compiling the numba kernels ahead of play: the kernel groups, what each compiled, and `usi-engine warmup`.

numba compiles a kernel at its first call and keeps the machine code in its on-disk cache, one folder per
version of the engine's sources (usi_engine/numba_cache.py); a later process loads it in a fraction of a
second. With an empty cache (a new install or an update) the engine's first `isready` therefore compiles;
`usi-engine warmup` does that compile as a set-up step (the README's first command), so that a GUI's first
`isready` finds the cache warm.

Kernel groups, each compiled (or loaded) by the code that uses it:
  rules           the shogi rules core behind `Board` (usi_engine/shogi/board.py `warm_up`)
  mate            the df-pn mate solver (`go mate`, mates at the root before each search)
  search          the shogi search with one thread: the sample kernel with the shogi game kernels
                  (quiescence, evaluation, mate probes, alpha-beta leaves) and tree reuse, in its two
                  variants: without and with progressive widening (WidenChildren > 0, the default: the
                  move prior and the widened child's value)
  helpers         the helper-thread kernel (Threads >= 2 with helper threads: HelperThreads > 0, or the
                  automatic -1 without widening)
  go              the Go player: rules, playouts, the final score and the search kernels for Go, with the
                  RAVE policy (the GTP default) and with softmax / UCT
`shogi` is the first four (what any USI option set needs), `all` adds `go`. Each group is timed and its
compiled kernels counted by numba_cache.measured; the engine reports the groups its `isready` compiled as
`info string` lines, the warm-up command prints one line per group.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from .numba_cache import GroupReport, Report, measured

SHOGI_GROUPS = ("rules", "mate", "search", "helpers")
GROUPS = SHOGI_GROUPS + ("go",)
TARGETS = {"shogi": SHOGI_GROUPS, "go": ("go",), "all": GROUPS} | {g: (g,) for g in GROUPS}
WARMUP_HASH_MB = 16  # node pool of the warm-up searches: the kernels do not depend on its size
WARMUP_WIDEN = 4  # WidenChildren of the warm-up of the widening variant (any value > 0)
GO_POLICIES = ("rave", "softmax")  # the two variants of Go's sample kernel (UCT shares softmax's)


def _warm_shogi(groups: tuple[str, ...], report: Report) -> None:
    """The shogi groups: rules and mate directly, the search through the engine's own preparation
    (PreparedSearch) with its default options but for the threads and widening: one thread without and with
    progressive widening (search), then a sampler and a helper thread without widening (helpers: the
    kernel also runs under widening, where the automatic HelperThreads starts none)."""
    from .engine import search_setup
    from .options import OptionValues
    from .shogi import board
    from .shogi_search import mate
    from .shogi_search.prepared import PreparedSearch

    def error(text: str) -> None:
        print(f"warmup: error: {text}", file=sys.stderr, flush=True)

    if "rules" in groups:
        with measured("rules", report):
            board.warm_up()
    if "mate" in groups:
        with measured("mate", report):
            mate.warm_up()
    search = PreparedSearch()
    options = OptionValues()
    options.set("USI_Hash", str(WARMUP_HASH_MB))
    runs = {"search": ((1, 0), (1, WARMUP_WIDEN)), "helpers": ((2, 0),)}  # (Threads, WidenChildren)
    for group in ("search", "helpers"):
        if group in groups:
            with measured(group, report):
                for threads, widen in runs[group]:
                    options.set("Threads", str(threads))
                    options.set("HelperThreads", str(threads - 1))
                    options.set("WidenChildren", str(widen))
                    search.prepare(search_setup(options), error)


def _warm_go(report: Report) -> None:
    """The Go player's warm-up with the GTP defaults and each policy variant (the kernels do not depend on the
    board size or the clock)."""
    from .go.player import GoPlayer, PlayerSettings

    with measured("go", report):
        for policy in GO_POLICIES:
            GoPlayer(PlayerSettings(policy=policy, hash_mb=WARMUP_HASH_MB)).warm_up()


def warm_up(groups: tuple[str, ...], report: Report) -> None:
    """Make the kernel groups ready (compile, or load from the cache), reporting each."""
    shogi = tuple(g for g in groups if g in SHOGI_GROUPS)
    if shogi:
        _warm_shogi(shogi, report)
    if "go" in groups:
        _warm_go(report)


def main(argv: list[str]) -> int:
    """`usi-engine warmup [TARGET ...]`: one line per kernel group and the total."""
    parser = argparse.ArgumentParser(
        prog="usi-engine warmup",
        description="Compile the numba kernels into the cache, so that the engine's first isready is fast.",
    )
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help=f"shogi (default), go, all, or a kernel group: {', '.join(GROUPS)}",
    )
    args = parser.parse_args(argv)
    targets = args.targets or ["shogi"]  # (not argparse's default and choices: 3.11 checks [] against them)
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        parser.error(f"unknown target {unknown[0]!r}; choose from {', '.join(TARGETS)}")
    groups = tuple(g for g in GROUPS if any(g in TARGETS[t] for t in targets))
    print(f"warmup: numba cache {os.environ.get('NUMBA_CACHE_DIR') or '(numba default)'}", flush=True)
    start = time.perf_counter()
    compiled = 0

    def line(r: GroupReport) -> None:
        nonlocal compiled
        compiled += r.compiled
        print(f"warmup: {r.line()}", flush=True)

    warm_up(groups, line)
    print(f"warmup: done in {time.perf_counter() - start:.1f} s, {compiled} kernels compiled", flush=True)
    return 0
