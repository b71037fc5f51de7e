"""Random number helpers shared by the search core and the games (state: a uint64 array, element 0): splitmix64, and
the xorshift64* step of the Go playouts."""

import numpy as np

from usi_engine.jit import bare_kernel

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_INV_2_53 = 1.0 / 9007199254740992.0


@bare_kernel
def mix64(z):
    """Splitmix64 finaliser: a well-mixed 64-bit hash of the uint64 ``z``."""
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@bare_kernel
def next_u64(rng):
    """Advance the splitmix64 state ``rng[0]`` and return the next 64-bit output."""
    z = rng[0] + GOLDEN
    rng[0] = z
    return mix64(z)


@bare_kernel
def next_unit(rng):
    """Uniform float in [0, 1) with 53 random bits."""
    return float(next_u64(rng) >> np.uint64(11)) * _INV_2_53


@bare_kernel
def xorshift64star(rng):
    """Advance the xorshift64* state ``rng[0]`` (non-zero) and return its 64-bit output (the Go playouts' generator:
    playout.rand_below keeps the top 31 bits, softplayout.rand_fraction the top 53)."""
    x = rng[0]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    rng[0] = x
    return x * np.uint64(2685821657736338717)


def splitmix64_outputs(seed: int, n: int) -> np.ndarray:
    """The first n outputs (uint64) of splitmix64 started from state ``seed`` (outside numba: tables, seeds)."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed & 0xFFFFFFFFFFFFFFFF) + GOLDEN * np.arange(1, n + 1, dtype=np.uint64)
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def seed_state(master_seed: int, stream: int) -> np.ndarray:
    """RNG state for stream ``stream`` (e.g. thread index) derived from ``master_seed``."""
    z = (int(master_seed) * 0x9E3779B97F4A7C15 + (int(stream) + 1) * 0xD1B54A32D192ED03) & (2**64 - 1)
    return np.array([z], dtype=np.uint64)
