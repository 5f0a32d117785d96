"""Dot product: high-level, and hand-lowered in two stages (local-memory partial sums, then a final kernel).

    python examples/dot.py [log2 N]
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
    map,
    map_glb,
    map_lcl,
    map_wrg,
    ocl_kernel,
    reduce,
    reduce_seq,
    split,
    to_global,
    to_local,
    user_fun,
    zip,
)

N = Size("N")
L, S = 64, 64  # work-items per group, elements summed by one work-item
GROUP = L * S


@user_fun
def mult(a: Float, b: Float) -> Float:
    return a * b


def high_level():
    """reduce(add, 0) << map(mult) << zip(x, y)."""
    return fun([Array(Float, N), Array(Float, N)],
               lambda x, y: reduce(lift.add, 0.0) << map(mult) << zip(x, y))


def partial_sums(xy):
    """Kernel 1: each work-group sums GROUP pairs; work-items sum S each into local memory."""
    return join << map_wrg(
        lambda grp: map_lcl(to_global(lambda parts: reduce_seq(lift.add, 0.0) << parts), label="final-lcl")
        << split(L)
        << to_local(map_lcl(lambda chunk: reduce_seq(lambda acc, p: acc + p[0] * p[1], 0.0) << chunk),
                    label="partial-lcl")
        << split(S) << grp,
        label="groups",
    ) << split(GROUP) << xy


def final_sum(parts):
    """Kernel 2: one work-item sums the per-group partial sums."""
    return map_glb(to_global(lambda ps: reduce_seq(lift.add, 0.0) << ps)) << split(N // GROUP) << parts


def two_stage():
    """ocl_kernel(final) << ocl_kernel(partial) << zip(x, y): [Float]1."""
    return fun([Array(Float, N), Array(Float, N)],
               lambda x, y: ocl_kernel(final_sum) << (ocl_kernel(partial_sums) << zip(x, y)))


def variants() -> list[Variant]:
    """The ways dot is written here."""
    return [Variant("high-level (default lowering)", high_level()),
            Variant("two-stage, local memory", two_stage(), f"{L} work-items x {S} elements per group")]


def inputs(log2n: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Two random float32 vectors of 2^log2n elements."""
    rng = np.random.default_rng(0)
    n = 1 << log2n
    return rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)


def work(x: np.ndarray, y: np.ndarray) -> Work:
    """Two vectors read, two flops per element."""
    return Work(bytes=x.nbytes + y.nbytes, flops=2.0 * x.size)


def main(log2n: int = 20) -> bool:
    x, y = inputs(log2n)
    want = np.dot(x.astype(np.float64), y)
    return run_example(f"dot, N = 2^{log2n}", variants(), (x, y), want, work(x, y),
                       lambda: np.dot(x, y), rtol=1e-3, post=lambda r: np.reshape(r, ()))


if __name__ == "__main__":
    sys.exit(0 if main(*(int(a) for a in sys.argv[1:])) else 1)
