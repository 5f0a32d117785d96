"""A VGG-style convolution layer: thesis Listing 4.1 (high-level) and a hand-lowered version.

Input [H][W][C], weights [M][kh][kw][C], output [H'][W'][M] with zero padding and a stride.

    python examples/conv.py [size] [in channels] [out channels]
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
    join_nd,
    map,
    map_glb,
    map_nd,
    map_seq,
    pad_nd,
    reduce,
    reduce_seq,
    slide_nd,
    split,
    to_global,
    user_fun,
    zip,
)

H, W, C, M = Size("H"), Size("W"), Size("C"), Size("M")
KH, KW, STRIDE, PAD = 3, 3, 1, 1
KB = 4  # output channels per work-item in the lowered version


@user_fun
def mult(a: Float, b: Float) -> Float:
    return a * b


def types() -> list:
    """[H][W][C] input, [M][kh][kw][C] weights."""
    return [Array(Array(Array(Float, C), W), H), Array(Array(Array(Array(Float, C), KW), KH), M)]


def windows(inp):
    """mapND2(joinND3) << slideND2(kh, kw, stride) << padND2(pad) << input: flat windows."""
    return map_nd(2, join_nd(3)) << slide_nd(2, (KH, KW), STRIDE) << pad_nd(2, PAD, PAD, 0.0) << inp


def listing_4_1():
    """mapND2(win => map(k => reduce(0, +) o map(*) << zip(win, k)) << weights) << windows."""
    return fun(types(), lambda inp, wts: map_nd(
        2, lambda win: map(lambda k: reduce(lift.add, 0.0) << map(mult) << zip(win, k)) << (map(join_nd(3)) << wts))
        << windows(inp))


def lowered():
    """Output pixels over a 2-D ND-range; each work-item computes KB output channels at a time."""
    def pixel(win, wts):
        flat = map(join_nd(3)) << wts
        return join_nd(2) << map_seq(lambda ks: map_seq(
            to_global(lambda k: reduce_seq(lambda acc, p: acc + p[0] * p[1], 0.0) << zip(win, k))) << ks) \
            << split(KB) << flat

    return fun(types(), lambda inp, wts: map_glb(lambda row: map_glb(lambda win: pixel(win, wts), dim=0) << row,
                                                dim=1, label="rows") << windows(inp))


def variants() -> list[Variant]:
    """The ways the layer is written here."""
    return [Variant("Listing 4.1 (default lowering)", listing_4_1()),
            Variant("lowered, 2-D map_glb", lowered(), f"{KB} output channels per inner loop")]


def inputs(size: int = 32, cin: int = 32, cout: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """A random input image and weights."""
    rng = np.random.default_rng(0)
    return (rng.random((size, size, cin), dtype=np.float32) - 0.5,
            rng.random((cout, KH, KW, cin), dtype=np.float32) - 0.5)


def reference(inp: np.ndarray, wts: np.ndarray) -> np.ndarray:
    """Direct convolution in numpy (zero padding PAD, stride STRIDE)."""
    p = np.pad(inp, ((PAD, PAD), (PAD, PAD), (0, 0)))
    oh, ow = (p.shape[0] - KH) // STRIDE + 1, (p.shape[1] - KW) // STRIDE + 1
    cols = np.stack([p[i:i + STRIDE * oh:STRIDE, j:j + STRIDE * ow:STRIDE, :] for i in range(KH) for j in range(KW)],
                    axis=2)  # [oh][ow][kh*kw][C]
    return np.tensordot(cols.reshape(oh, ow, -1), wts.reshape(wts.shape[0], -1), axes=([2], [1]))


def work(inp: np.ndarray, wts: np.ndarray) -> Work:
    """2 kh kw C flops per output value."""
    oh, ow = ((d + 2 * PAD - k) // STRIDE + 1 for d, k in ((inp.shape[0], KH), (inp.shape[1], KW)))
    out = oh * ow * wts.shape[0]
    return Work(bytes=inp.nbytes + wts.nbytes + 4 * out, flops=2.0 * out * KH * KW * inp.shape[2],
                metric="GFLOP/s")


def main(size: int = 32, cin: int = 32, cout: int = 32) -> bool:
    inp, wts = inputs(size, cin, cout)
    want = reference(inp.astype(np.float64), wts.astype(np.float64))
    return run_example(f"conv {KH}x{KW}, {size}x{size}, {cin} -> {cout} channels", variants(), (inp, wts), want,
                       work(inp, wts), lambda: reference(inp, wts), rtol=1e-3, atol=1e-3)


# The program file convention (`lift show|tune examples/conv.py`): `program` and `inputs()`.
program = listing_4_1()

if __name__ == "__main__":
    sys.exit(0 if main(*(int(a) for a in sys.argv[1:])) else 1)
