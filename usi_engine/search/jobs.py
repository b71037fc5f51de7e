"""Joint expansion jobs, one per thread: the owner of an expansion opens a job for the node's children
(open_job), any thread that reaches the node claims and evaluates children (claim_child, child_done), the
owner closes it (close_job); a float the game's finishing round shares between its threads (set_job_aux,
job_aux, job_aux_max). See docs/search.md, "Threads"."""

import numpy as np
from numba import njit

from usi_engine.jit import bare_kernel, counted_kernel
from usi_engine.search.atomics import atomic_add, atomic_cas, atomic_load, atomic_max, atomic_store, cpu_yield

# --- joint expansion jobs (one per thread; see open_job) -------------------------------------------
J_WORD, J_N, J_DONE, J_WORK = 0, 1, 2, 3  # word = tag << J_SHIFT | next item; items; finished; their work
J_AUX = 4  # a float the game's finishing round shares between its threads (set_job_aux, job_aux_max)
J_STRIDE = 8  # one cache line per job
J_SHIFT = 20  # children per node < 2^20
J_INDEX = (1 << J_SHIFT) - 1
J_CLOSED = -1  # the word of a job no thread may join (its node part is -1)
J_FINISH = 1 << 42  # tag = node | J_FINISH: the job's second, finishing round (finish_open); node < 2^42
_LOW63 = (1 << 63) - 1


def new_jobs(threads, max_moves, pos):
    """The joint-expansion jobs of `threads` threads (open_job): (words int64[threads * J_STRIDE], moves
    int32[threads, max_moves], values float64[threads, max_moves], flags int8[threads, max_moves], positions
    [threads, len(pos)] of pos's dtype: the node's position, published for helper threads); every job
    closed."""
    words = np.zeros(threads * J_STRIDE, np.int64)
    words[J_WORD::J_STRIDE] = J_CLOSED
    return (
        words,
        np.zeros((threads, max_moves), np.int32),
        np.zeros((threads, max_moves), np.float64),
        np.zeros((threads, max_moves), np.int8),
        np.zeros((threads, pos.shape[0]), pos.dtype),
    )


@bare_kernel
def open_job(job, base, node, n):
    """Open the job at job[base:] for the n children of `node`, whose moves the owner has written to its
    job's move row: from now on any thread that reaches `node` may claim children (claim_child), evaluate
    them into the job's value/flag rows and report each with child_done. The owner claims like everyone and
    alone accounts the job's work (close_job), so a node limit sees the same counts whoever evaluated."""
    atomic_store(job, base + J_N, n)
    atomic_store(job, base + J_DONE, 0)
    atomic_store(job, base + J_WORK, 0)
    atomic_store(job, base + J_WORD, node << J_SHIFT)


@bare_kernel
def claim_child(job, base, node):
    """The index of an unclaimed child of `node` in the job at job[base:], now claimed by the caller; -1 when
    none is left or the job is no longer `node`'s. One CAS on the word that holds both the node and the next
    index, so a claim can never land in a job that was closed and reopened for another node meanwhile."""
    while True:
        w = atomic_load(job, base + J_WORD)
        i = w & J_INDEX
        if (w >> J_SHIFT) != node or i >= atomic_load(job, base + J_N):
            return -1
        if atomic_cas(job, base + J_WORD, w, w + 1) == w:
            return i


@bare_kernel
def child_done(job, base, work):
    """Report one claimed child evaluated with `work` positions (its value and flags stored before this full
    barrier)."""
    atomic_add(job, base + J_WORK, work)
    atomic_add(job, base + J_DONE, 1)


@bare_kernel
def close_job(job, base, n):
    """The owner's end of a job: wait until all n children are evaluated (the last ones may be another
    thread's), close it to joiners (and helpers: the job's position may be rewritten after this) and return
    the work of all its children."""
    while atomic_load(job, base + J_DONE) < n:
        cpu_yield()
    atomic_store(job, base + J_WORD, J_CLOSED)
    return atomic_load(job, base + J_WORK)


@counted_kernel
def _ordered_bits(x):
    """An int64 whose order is the order of the float64 x (its bits, the non-sign ones flipped if negative)."""
    a = np.empty(1, np.float64)
    a[0] = x
    b = a.view(np.int64)[0]
    return b ^ _LOW63 if b < 0 else b


@counted_kernel
def _from_ordered_bits(b):
    a = np.empty(1, np.int64)
    a[0] = b ^ _LOW63 if b < 0 else b
    return a.view(np.float64)[0]


@bare_kernel
def set_job_aux(job, base, x):
    """Set the job's shared float (before the round that uses it is opened: open_job publishes it)."""
    atomic_store(job, base + J_AUX, _ordered_bits(x))


@njit(cache=True, nogil=True)
def job_aux(job, base):
    """The job's shared float now."""
    return _from_ordered_bits(atomic_load(job, base + J_AUX))


@njit(cache=True, nogil=True)
def job_aux_max(job, base, x):
    """Raise the job's shared float to x if x is larger (atomic)."""
    atomic_max(job, base + J_AUX, _ordered_bits(x))


@bare_kernel
def find_job(job, node):
    """The base of the open job of `node`, or -1."""
    for base in range(0, job.shape[0], J_STRIDE):
        if (atomic_load(job, base + J_WORD) >> J_SHIFT) == node:
            return base
    return -1
