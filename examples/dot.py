"""Dot product: high-level; hand-lowered in two stages (local-memory partial sums, then a final
kernel); and vectorised (float8 loads and a float8 accumulator over a contiguous chunk per
work-item, then a final kernel that sums the lanes of the partial sums).

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
    as_scalar,
    as_vector,
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
    vectorise,
    zip,
)

N = Size("N")
L, S = 64, 64  # chunks per group, elements per chunk
GROUP = L * S
W = L // 2  # work-items per group: each sums two chunks, then combines two partial sums
LOCAL = {"local_size": {"partial": W}}  # per kernel: the final kernel keeps its own default
VEC, CHUNK = 8, 2048  # vector width, elements summed by one work-item of the vectorised dot


@user_fun
def mult(a: Float, b: Float) -> Float:
    return a * b


def high_level():
    """reduce(add, 0) << map(mult) << zip(x, y)."""
    return fun([Array(Float, N), Array(Float, N)],
               lambda x, y: reduce(lift.add, 0.0) << map(mult) << zip(x, y))


def partial_sums(xy):
    """Kernel 1: a work-group sums GROUP pairs in L chunks of S into local memory (a work-item
    sums L / W chunks), then each work-item adds up L / W of the chunk sums: W sums per group."""
    return join << map_wrg(
        lambda grp: map_lcl(to_global(lambda sums: reduce_seq(lift.add, 0.0) << sums), label="combine-lcl")
        << split(L // W)
        << to_local(map_lcl(lambda chunk: reduce_seq(lambda acc, p: acc + p[0] * p[1], 0.0) << chunk),
                    label="partial-lcl")
        << split(S) << grp,
        label="groups",
    ) << split(GROUP) << xy


def final_sum(parts):
    """Kernel 2: one work-item sums the W partial sums of every group."""
    return reduce_seq(lift.add, 0.0, label="final") << parts


def two_stage():
    """ocl_kernel(final) << ocl_kernel(partial) << zip(x, y): Float."""
    return fun([Array(Float, N), Array(Float, N)],
               lambda x, y: ocl_kernel(final_sum, label="final")
               << (ocl_kernel(partial_sums, label="partial") << zip(x, y)))


@user_fun
def madd(acc: Float, a: Float, b: Float) -> Float:
    return acc + a * b


def vector_chunks(xv, yv):
    """Kernel 1: a work-item sums CHUNK elements as float8 products into a float8 accumulator."""
    step = vectorise(madd, VEC)  # acc + a * b on float8s
    return map_glb(to_global(lambda chunk: reduce_seq(lambda acc, p: step(acc, p[0], p[1]), 0.0) << chunk),
                   label="chunks") << split(CHUNK // VEC) << zip(xv, yv)


def lane_sum(parts):
    """Kernel 2: one work-item sums every lane of the float8 partial sums."""
    return reduce_seq(lift.add, 0.0, label="lanes") << as_scalar << parts


def vectorised():
    """ocl_kernel(lane sum) << ocl_kernel(float8 chunks) << (as_vector(8) x, as_vector(8) y): Float."""
    return fun([Array(Float, N), Array(Float, N)],
               lambda x, y: ocl_kernel(lane_sum, label="lane_sum")
               << ocl_kernel(vector_chunks, label="chunks")(as_vector(VEC) << x, as_vector(VEC) << y))


def variants() -> list[Variant]:
    """The ways dot is written here."""
    return [Variant("high-level (default lowering)", high_level()),
            Variant("two-stage, local memory", two_stage(), f"{W} work-items x {L // W * S} elements per group",
                    LOCAL),
            Variant("vectorised, float8 chunks", vectorised(), f"{CHUNK} elements per work-item as float8")]


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


# The program file convention (`lift show|tune examples/dot.py`): `program` and `inputs()`.
program = high_level()

if __name__ == "__main__":
    sys.exit(0 if main(*(int(a) for a in sys.argv[1:])) else 1)
