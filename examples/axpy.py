"""axpy, out = a x + y: high-level, and vectorised (one float8 of x and y per work-item).

    python examples/axpy.py [log2 N]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import Variant, Work, run_example

from lift import Array, Float, Size, as_scalar, as_vector, fun, map, map_glb, user_fun, zip

N = Size("N")
VEC = 8


@user_fun
def axpy(a: Float, x: Float, y: Float) -> Float:
    return a * x + y


def high_level():
    """map(p => a * p.0 + p.1) << zip(x, y)."""
    return fun([Float, Array(Float, N), Array(Float, N)],
               lambda a, x, y: map(lambda p: axpy(a, p[0], p[1])) << zip(x, y))


def vectorised():
    """as_scalar << map_glb(p => a * p.0 + p.1) << zip(as_vector(8) x, as_vector(8) y): float8 arithmetic."""
    return fun([Float, Array(Float, N), Array(Float, N)],
               lambda a, x, y: as_scalar << map_glb(lambda p: a * p[0] + p[1], label="vectors")
               << zip(as_vector(VEC) << x, as_vector(VEC) << y))


def variants() -> list[Variant]:
    """The ways axpy is written here."""
    return [Variant("high-level (default lowering)", high_level()),
            Variant("vectorised, float8", vectorised(), "one float8 per work-item")]


def inputs(log2n: int = 20) -> tuple[np.float32, np.ndarray, np.ndarray]:
    """A scalar and two random float32 vectors of 2^log2n elements."""
    rng = np.random.default_rng(0)
    n = 1 << log2n
    return np.float32(1.5), rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)


def reference(a, x, y):
    """numpy's a x + y."""
    return a * x + y


def work(a: np.float32, x: np.ndarray, y: np.ndarray) -> Work:
    """Two vectors read, one written; two flops per element."""
    return Work(bytes=3.0 * x.nbytes, flops=2.0 * x.size)


def main(log2n: int = 20) -> bool:
    a, x, y = inputs(log2n)
    want = reference(np.float64(a), x.astype(np.float64), y)
    return run_example(f"axpy, N = 2^{log2n}", variants(), (a, x, y), want, work(a, x, y),
                       lambda: reference(a, x, y), rtol=1e-5)


# The program file convention (`lift show|tune examples/axpy.py`): `program` and `inputs()`.
program = high_level()

if __name__ == "__main__":
    sys.exit(0 if main(*(int(a) for a in sys.argv[1:])) else 1)
