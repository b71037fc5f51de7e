"""CPU atomics for numba kernels (numba ships atomics only for CUDA).

Each intrinsic emits one LLVM atomic instruction on element ``idx`` of a 1-D C-contiguous ``int64`` array
(no bounds check). They are cache-safe (kernels calling them load from numba's disk cache).

- ``atomic_add(arr, idx, val)``: fetch-add, returns the OLD value (seq_cst, a full barrier).
- ``atomic_cas(arr, idx, expected, desired)``: compare-and-swap, returns the OLD value; success iff it
  equals ``expected``.
- ``atomic_load(arr, idx)``: acquire load; poll and spin only through this (a plain load may be hoisted).
- ``atomic_store(arr, idx, val)``: release store; publish data written before it.
- ``cpu_yield()``: give the core to another runnable thread (``sched_yield``) inside a wait loop, so a waiter
  does not hold a core the thread it waits for needs when threads outnumber cores (POSIX; a plain spin on
  Windows).
- ``atomic_max(arr, idx, val)``: raise element ``idx`` to ``val`` if larger (a CAS loop over the above; a
  cached ``@njit`` kernel, not an intrinsic).
"""

import sys

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from usi_engine.jit import bare_kernel

# POSIX sched_yield, resolved from the C library the process has loaded; on Windows the wait is a plain spin
YIELD_SYMBOL = "" if sys.platform == "win32" else "sched_yield"


def _element_pointer(context, builder, aryty, ary_v, idxty, idx_v):
    ary = context.make_array(aryty)(context, builder, ary_v)
    i = context.cast(builder, idx_v, idxty, types.intp)
    return builder.gep(ary.data, [i])


def _pointer_and_value(context, builder, sig, args):
    """(pointer to arr[idx], the third argument cast to int64) of an (arr, idx, val) intrinsic call."""
    p = _element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
    return p, context.cast(builder, args[2], sig.args[2], types.int64)


def _is_int64_vector(arr):
    return isinstance(arr, types.Array) and arr.ndim == 1 and arr.dtype == types.int64


@intrinsic
def atomic_add(typingctx, arr, idx, val):
    if not _is_int64_vector(arr):
        return None

    def codegen(context, builder, sig, args):
        p, v = _pointer_and_value(context, builder, sig, args)
        return builder.atomic_rmw('add', p, v, 'seq_cst')

    return types.int64(arr, idx, val), codegen


@intrinsic
def atomic_cas(typingctx, arr, idx, expected, desired):
    if not _is_int64_vector(arr):
        return None

    def codegen(context, builder, sig, args):
        p, e = _pointer_and_value(context, builder, sig, args)
        d = context.cast(builder, args[3], sig.args[3], types.int64)
        pair = builder.cmpxchg(p, e, d, 'seq_cst', 'seq_cst')
        return builder.extract_value(pair, 0)

    return types.int64(arr, idx, expected, desired), codegen


@intrinsic
def atomic_load(typingctx, arr, idx):
    if not _is_int64_vector(arr):
        return None

    def codegen(context, builder, sig, args):
        p = _element_pointer(context, builder, sig.args[0], args[0], sig.args[1], args[1])
        return builder.load_atomic(p, 'acquire', 8)

    return types.int64(arr, idx), codegen


@intrinsic
def atomic_store(typingctx, arr, idx, val):
    if not _is_int64_vector(arr):
        return None

    def codegen(context, builder, sig, args):
        p, v = _pointer_and_value(context, builder, sig, args)
        builder.store_atomic(v, p, 'release', 8)
        return context.get_dummy_value()

    return types.void(arr, idx, val), codegen


@intrinsic
def cpu_yield(typingctx):
    def codegen(context, builder, sig, args):
        if YIELD_SYMBOL:
            fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), []), YIELD_SYMBOL)
            builder.call(fn, [])
        return context.get_dummy_value()

    return types.void(), codegen


@bare_kernel
def atomic_max(ctl, idx, val):
    while True:
        old = atomic_load(ctl, idx)
        if val <= old or atomic_cas(ctl, idx, old, val) == old:
            return
