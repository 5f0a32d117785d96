"""Matrix multiplication C = A B (B given transposed): high-level, naive, and tiled in local memory.

The tiled version gives each work-group TM rows of C: it copies those rows of A into local
memory (a 2-D map_lcl copy, then a barrier), and each work-item computes blocks of BM x BN
outputs (BM rows of the tile, BN columns per column block it owns), reusing each local row of A
for BN columns.

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
    fun,
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
    user_fun,
    zip,
)

M, N, K = Size("M"), Size("N"), Size("K")
TM = 32  # rows of C per work-group
BM, BN = 4, 4  # a work-item's block of C
LOCAL = {"local_size": (16, TM // BM)}  # work-items per group: dimension 0 over column blocks, 1 over rows


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


def copy_to_local(rows):
    """A 2-D cooperative copy of a block of rows into local memory."""
    return to_local(map_lcl(lambda row: map_lcl(lift.id, dim=0) << row, dim=1)) << rows


def blocked(a_blk, bt):
    """A work-item's BM rows x (BN columns per column block): BM x BN outputs, one dot product each."""
    return map_seq(
        lambda a_row: join << map_lcl(lambda b_blk: map_seq(to_global(lambda c: dot_seq(zip(a_row, c)))) << b_blk,
                                      dim=0) << split(BN) << bt) << a_blk


def tiled(block):
    """Work-groups over TM rows of C; A's rows copied to local memory; `block` per work-item."""
    def group(a_rows, bt):
        return let(lambda la: join << map_lcl(lambda a_blk: block(a_blk, bt), dim=1) << split(BM) << la) \
            << copy_to_local(a_rows)

    return fun([Array(Array(Float, K), M), Array(Array(Float, K), N)],
               lambda a, bt: join << map_wrg(lambda a_rows: group(a_rows, bt), label="row-blocks")
               << split(TM) << a)


def variants() -> list[Variant]:
    """The ways matmul is written here."""
    note = f"{TM} rows per group, {BM}x{BN} blocks per work-item"
    return [Variant("high-level (default lowering)", high_level()),
            Variant("naive (2-D map_glb)", naive()),
            Variant("tiled: local A rows, 4x4 blocks", tiled(blocked), note, LOCAL)]


def inputs(m: int = 512, n: int = 512, k: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """A [M][K] and B^T [N][K]."""
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


if __name__ == "__main__":
    sys.exit(0 if main(*(int(a) for a in sys.argv[1:])) else 1)
