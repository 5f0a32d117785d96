"""Reference programs shared by the tests, with numpy oracles."""

from __future__ import annotations

import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import lift
from lift import (
    Array,
    Float,
    Size,
    fun,
    join,
    join_nd,
    map,
    map_nd,
    pad_nd,
    reduce,
    slide_nd,
    user_fun,
    zip,
)

N, M, K = Size("N"), Size("M"), Size("K")
H, W, C = Size("H"), Size("W"), Size("C")


@user_fun
def mult(a: Float, b: Float) -> Float:
    return a * b


def dot_program():
    """reduce(add, 0) << map(mult) << zip(x, y)."""
    return fun([Array(Float, N), Array(Float, N)],
               lambda x, y: reduce(lift.add, 0.0) << map(mult) << zip(x, y))


def gemv_program():
    return fun([Array(Array(Float, N), M), Array(Float, N)],
               lambda a, v: map(lambda row: reduce(lift.add, 0.0) << map(mult) << zip(row, v)) << a)


def matmul_program():
    """C = A x B with B given transposed (rows of B^T are columns of B)."""
    return fun([Array(Array(Float, K), M), Array(Array(Float, K), N)],
               lambda a, bt: map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(mult) << zip(r, c))
                                 << bt) << a)


def stencil2d_program():
    """Thesis Listing 2.2 with zero padding: a 3x3 weighted sum around every pixel."""
    return fun([Array(Array(Float, 3), 3), Array(Array(Float, W), H)],
               lambda weights, img: map_nd(2, lambda nbh: reduce(lambda acc, p: acc + p[0] * p[1], 0.0)
                                           << zip(join << nbh, join << weights))
               << slide_nd(2, 3, 1) << pad_nd(2, 1, 1, 0.0) << img)


def conv_program(kh: int, kw: int, stride: int, padding: int):
    """Thesis Listing 4.1: input [H][W][C], weights [M][kh][kw][C], output [H'][W'][M]."""
    return fun(
        [Array(Array(Array(Float, C), W), H), Array(Array(Array(Array(Float, C), kw), kh), M)],
        lambda inp, wts: map_nd(2, lambda win: map(lambda k: reduce(lift.add, 0.0) << map(mult) << zip(win, k))
                                << (map(join_nd(3)) << wts))
        << (map_nd(2, join_nd(3)) << slide_nd(2, (kh, kw), stride) << pad_nd(2, padding, padding, 0.0) << inp))


def stencil2d_numpy(weights: np.ndarray, img: np.ndarray) -> np.ndarray:
    """examples/stencil2d.py's numpy reference (nine shifted, weighted copies of the padded image)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    from stencil2d import reference

    return reference(weights, img)


def conv_numpy(inp: np.ndarray, wts: np.ndarray, stride: int, padding: int) -> np.ndarray:
    p = np.pad(inp, ((padding, padding), (padding, padding), (0, 0)))
    kh, kw = wts.shape[1:3]
    oh = (p.shape[0] - kh) // stride + 1
    ow = (p.shape[1] - kw) // stride + 1
    out = np.zeros((oh, ow, wts.shape[0]), dtype=np.float64)
    for i in range(oh):
        for j in range(ow):
            win = p[i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[i, j] = np.tensordot(wts, win, axes=([1, 2, 3], [0, 1, 2]))
    return out.astype(np.float32)


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + sum(shape)).random(shape, dtype=np.float32)


def apply_choice(prog: Any, label: str, choice: dict[str, Any], *refusals: str) -> tuple[Any, Any]:
    """`prog` with `choice` applied at the point `label` (its warnings silenced) and the point's
    outcome, which applied or was refused for a reason containing one of `refusals`."""
    outcomes: list = []
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        out = lift.rewrites.apply_all(prog, {label: choice}, outcomes=outcomes)
    outcome = outcomes[0]
    assert outcome.applied or any(r in outcome.reason for r in refusals), outcome.reason
    return out, outcome


# A program file for the `lift` command (lift/cli.py): the dot product, `inputs(n)` of length n.
DOT_PROGRAM_FILE = textwrap.dedent("""\
    import numpy as np

    import lift
    from lift import Array, Float, Size, fun, map, reduce, zip

    N = Size("N")
    program = fun([Array(Float, N), Array(Float, N)],
                  lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y))


    def inputs(n=1024):
        rng = np.random.default_rng(0)
        return rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    """)
