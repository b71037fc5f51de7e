"""The compile options of the engine's kernels that run without numba's reference counting (docs/search.md,
"Kernels without reference counting"): `bare_kernel` compiles one without numba's runtime (no atomic reference
counts on the arrays it receives, slices or hands on, and no allocation), `counted_kernel` one that allocates
and is called from bare kernels (which would otherwise pass their setting on to it)."""

from typing import Any, Callable, TypeVar, cast

from numba import njit

F = TypeVar("F", bound=Callable[..., Any])

_BARE: dict[str, Any] = {"cache": True, "nogil": True, "_nrt": False}
_COUNTED: dict[str, Any] = {"cache": True, "nogil": True, "_nrt": True}


def bare_kernel(fn: F) -> F:
    """A cached, GIL-free kernel without reference counting: it must return no array and take none back from
    the kernels it calls (tests/test_kernel_refcounts.py)."""
    return cast(F, njit(**_BARE)(fn))


def counted_kernel(fn: F) -> F:
    """A cached, GIL-free kernel with reference counting even when a bare kernel calls it."""
    return cast(F, njit(**_COUNTED)(fn))
