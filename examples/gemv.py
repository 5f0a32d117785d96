"""Matrix-vector product y = A v: high-level, and hand-lowered with one row per work-item.

    python examples/gemv.py [rows] [cols]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import Variant, Work, run_example

import lift
from lift import (
    Array,
    Float,
    Size,
    fun,
    map,
    map_glb,
    reduce,
    reduce_seq,
    to_global,
    user_fun,
    zip,
)

M, N = Size("M"), Size("N")


@user_fun
def mult(a: Float, b: Float) -> Float:
    return a * b


def high_level():
    """map(row => reduce(add, 0) << map(mult) << zip(row, v)) << A."""
    return fun([Array(Array(Float, N), M), Array(Float, N)],
               lambda a, v: map(lambda row: reduce(lift.add, 0.0) << map(mult) << zip(row, v)) << a)


def row_per_work_item():
    """map_glb(to_global(row => reduce_seq(acc + r * v, 0) << zip(row, v))) << A."""
    return fun([Array(Array(Float, N), M), Array(Float, N)],
               lambda a, v: map_glb(to_global(
                   lambda row: reduce_seq(lambda acc, p: acc + p[0] * p[1], 0.0) << zip(row, v)),
                   label="rows") << a)


def variants() -> list[Variant]:
    """The ways gemv is written here."""
    return [Variant("high-level (default lowering)", high_level()),
            Variant("row per work-item", row_per_work_item())]


def inputs(rows: int = 2048, cols: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """A random matrix and vector."""
    rng = np.random.default_rng(0)
    return rng.random((rows, cols), dtype=np.float32), rng.random(cols, dtype=np.float32)


def work(a: np.ndarray, v: np.ndarray) -> Work:
    """The matrix dominates the traffic; two flops per matrix element."""
    return Work(bytes=a.nbytes + v.nbytes + 4 * a.shape[0], flops=2.0 * a.size)


def main(rows: int = 2048, cols: int = 2048) -> bool:
    a, v = inputs(rows, cols)
    want = a.astype(np.float64) @ v
    return run_example(f"gemv, {rows} x {cols}", variants(), (a, v), want, work(a, v), lambda: a @ v,
                       rtol=1e-3)


if __name__ == "__main__":
    sys.exit(0 if main(*(int(a) for a in sys.argv[1:])) else 1)
