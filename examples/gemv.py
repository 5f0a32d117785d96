"""Matrix-vector product y = A v: high-level; hand-lowered with one row per work-item; and
vectorised (a row per work-item read as float8, a float8 accumulator, then a horizontal sum).

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
    Vector,
    as_vector,
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
VEC = 8


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


@user_fun
def hsum8(v: Vector(Float, 8)) -> Float:
    """The sum of the lanes of a float8, pairwise."""
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]))


def vectorised():
    """map_glb(to_global(row => hsum8 << reduce_seq(acc + r * v, 0) << zip(as_vector(8) row, as_vector(8) v))) << A."""
    return fun([Array(Array(Float, N), M), Array(Float, N)],
               lambda a, v: map_glb(to_global(
                   lambda row: hsum8 << reduce_seq(lambda acc, p: acc + p[0] * p[1], 0.0)
                   << zip(as_vector(VEC) << row, as_vector(VEC) << v)), label="rows") << a)


def variants() -> list[Variant]:
    """The ways gemv is written here."""
    return [Variant("high-level (default lowering)", high_level()),
            Variant("row per work-item", row_per_work_item()),
            Variant("vectorised, float8 rows", vectorised(), "a row per work-item as float8")]


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


# The program file convention (`lift show|tune examples/gemv.py`): `program` and `inputs()`.
program = high_level()

if __name__ == "__main__":
    sys.exit(0 if main(*(int(a) for a in sys.argv[1:])) else 1)
