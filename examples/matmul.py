"""Matrix multiplication C = A B (B given transposed): high-level, naive, tiled in local memory,
and register-blocked with float8 accumulators.

The tiled version gives each work-group a T x T tile of C: it copies the tile's T rows of A
and T rows of B^T into local memory (one cooperative 2-D map_lcl copy, then a barrier), and
each work-item computes a BM x BN block of C in private memory (register blocking: a
reduce_seq over k whose accumulator is a private [[Float]BN]BM array), reusing each value
read from the local tiles BM or BN times.

    python examples/matmul.py [M] [N] [K]
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
    get,
    join,
    let,
    map,
    map_glb,
    map_lcl,
    map_seq,
    map_wrg,
    reduce,
    reduce_seq,
    split,
    to_global,
    to_local,
    transpose,
    user_fun,
    value,
    zip,
)

M, N, K = Size("M"), Size("N"), Size("K")
T = 32  # a work-group's tile of C is T x T
BM, BN = 4, 4  # a work-item's block of C (registers)
VEC = 8  # the vector width along k of the register-blocked variant
LOCAL = {"local_size": (T // BN, T // BM)}  # work-items per group: dimension 0 over column blocks, 1 over rows


@user_fun
def mult(a: Float, b: Float) -> Float:
    return a * b


def dot_seq(pair_of_rows):
    """reduce_seq(acc + a * b, 0) << zip(a, b)."""
    return reduce_seq(lambda acc, p: acc + p[0] * p[1], 0.0) << pair_of_rows


def high_level():
    """map(rowA => map(colB => reduce(add, 0) << map(mult) << zip(rowA, colB)) << B^T) << A."""
    return fun([Array(Array(Float, K), M), Array(Array(Float, K), N)],
               lambda a, bt: map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(mult) << zip(r, c))
                                 << bt) << a)


def naive():
    """One output per work-item over a 2-D ND-range."""
    return fun([Array(Array(Float, K), M), Array(Array(Float, K), N)],
               lambda a, bt: map_glb(lambda r: map_glb(to_global(lambda c: dot_seq(zip(r, c))), dim=0)
                                     << bt, dim=1, label="rows") << a)


def copy_tiles(a_rows, b_rows):
    """Both tiles (T rows of A, T rows of B^T) into local memory in one cooperative 2-D copy."""
    both = map_lcl(lambda p: (lift.id(p[0]), lift.id(p[1])), dim=0)
    return to_local(map_lcl(lambda rows: both << zip(rows[0], rows[1]), dim=1)) << zip(a_rows, b_rows)


def register_block(a_blk, b_blk):
    """A work-item's BM x BN block of C in private memory: acc[i][j] += a[i][k] * b[j][k] for each k."""
    def step(acc, ab):
        return map_seq(lambda row_a: map_seq(lambda c_b: c_b[0] + row_a[1] * c_b[1]) << zip(row_a[0], ab[1])) \
            << zip(acc, ab[0])

    return reduce_seq(step, value(0.0, Array(Array(Float, BN), BM)), label="k") \
        << zip(transpose << a_blk, transpose << b_blk)


def group(a_rows, b_rows):
    """A work-group's T x T tile of C: copy both tiles, then a grid of register blocks."""
    def compute(tiles):
        la, lb = map(map(get(0))) << tiles, map(map(get(1))) << tiles  # views of the local tiles
        block = to_global(map_seq(map_seq(lift.id)))  # a block of C from registers to C
        cols = lambda a_blk: map(join) << transpose << map_lcl(  # noqa: E731
            lambda b_blk: block << register_block(a_blk, b_blk), dim=0) << split(BN) << lb
        return join << map_lcl(cols, dim=1) << split(BM) << la

    return let(compute) << copy_tiles(a_rows, b_rows)


def tiled():
    """Work-groups over T x T tiles of C; A and B tiles in local memory; BM x BN register blocks."""
    return fun([Array(Array(Float, K), M), Array(Array(Float, K), N)],
               lambda a, bt: join << map_wrg(
                   lambda a_rows: map(join) << transpose
                   << map_wrg(lambda b_rows: group(a_rows, b_rows), dim=0, label="col-tiles") << split(T) << bt,
                   dim=1, label="row-tiles") << split(T) << a)


@user_fun
def hsum8(v: Vector(Float, 8)) -> Float:
    """The sum of the lanes of a float8, pairwise."""
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]))


def vector_block(a_rows, b_rows):
    """A BM x BN block of C from BM rows of A and BN rows of B^T read as float8 along k: a private
    [[<Float>8]BN]BM accumulator (acc[i][j] += a[i][k..k+8] * b[j][k..k+8]), then lane sums."""
    def step(acc, ab):
        return map_seq(lambda row_a: map_seq(lambda c_b: c_b[0] + row_a[1] * c_b[1]) << zip(row_a[0], ab[1])) \
            << zip(acc, ab[0])

    av, bv = map(as_vector(VEC)) << a_rows, map(as_vector(VEC)) << b_rows
    acc = reduce_seq(step, value(0.0, Array(Array(Vector(Float, VEC), BN), BM)), label="k8") \
        << zip(transpose << av, transpose << bv)
    return to_global(map_seq(map_seq(hsum8))) << acc


def register_blocked():
    """No local memory: a 2-D map_glb over BM x BN blocks of C, each a `vector_block`."""
    return fun([Array(Array(Float, K), M), Array(Array(Float, K), N)],
               lambda a, bt: join << map_glb(
                   lambda a_rows: map(join) << transpose
                   << map_glb(lambda b_rows: vector_block(a_rows, b_rows), dim=0) << split(BN) << bt,
                   dim=1, label="row-blocks") << split(BM) << a)


def variants() -> list[Variant]:
    """The ways matmul is written here."""
    note = f"{T}x{T} tiles per group, {BM}x{BN} register blocks per work-item"
    return [Variant("high-level (default lowering)", high_level()),
            Variant("naive (2-D map_glb)", naive()),
            Variant("tiled: local tiles, 4x4 blocks", tiled(), note, LOCAL),
            Variant("register-blocked, float8", register_blocked(), f"{BM}x{BN} blocks of float8 accumulators")]


def inputs(m: int = 64, n: int = 64, k: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """A [M][K] and B^T [N][K]; small by default, so that `lift tune examples/matmul.py` spends its
    budget on candidates rather than on interpreting the reference (`--inputs 512,512,512`)."""
    rng = np.random.default_rng(0)
    return rng.random((m, k), dtype=np.float32), rng.random((n, k), dtype=np.float32)


def work(a: np.ndarray, bt: np.ndarray) -> Work:
    """2 M N K flops."""
    return Work(bytes=a.nbytes + bt.nbytes + 4 * a.shape[0] * bt.shape[0], flops=2.0 * a.shape[0] * bt.size,
                metric="GFLOP/s")


def main(m: int = 512, n: int = 512, k: int = 512) -> bool:
    a, bt = inputs(m, n, k)
    want = a.astype(np.float64) @ bt.T.astype(np.float64)
    b = np.ascontiguousarray(bt.T)
    return run_example(f"matmul, {m} x {n} x {k}", variants(), (a, bt), want, work(a, bt), lambda: a @ b,
                       rtol=1e-3, atol=1e-3)


# The program file convention (`lift show|tune examples/matmul.py`): `program` and `inputs()`.
program = high_level()

if __name__ == "__main__":
    sys.exit(0 if main(*(int(a) for a in sys.argv[1:])) else 1)
