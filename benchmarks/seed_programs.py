"""The seed papers' workloads (issue 17) as plain high-level liftcl programs, each with a numpy reference.

Panamera (reductions), Diesel (GEMM epilogues), AKG (a producer fused into a stencil) and Tensor
Comprehensions (transposed and batched matmuls, MLP layers). Each `Seed` has a program builder, an
input maker for a size tuple, a numpy reference (used in float64 to check and in float32 to time), the
reduced (`quick`), tiny (`tiny`, for the default test run) and issue (`full`) sizes, and the length of
its longest float32 sum (the comparison tolerance scales with it). Nothing here is lowered by hand:
the programs use only map/reduce/zip/split/join/slide/pad/transpose/let and user functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
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
    pad,
    pad_nd,
    reduce,
    slide,
    slide_nd,
    split,
    transpose,
    user_fun,
    zip,
)

B, C, H, K, M, N, W = (Size(s) for s in "BCHKMNW")
F = Float
NEG_INF = -math.inf


@user_fun
def mult(a: Float, b: Float) -> Float:
    return a * b


@user_fun
def relu(x: Float) -> Float:
    return x if x > 0.0 else 0.0


@user_fun
def bias_relu(x: Float, b: Float) -> Float:
    y = x + b
    return y if y > 0.0 else 0.0


@user_fun
def add_mul(x: Float, a: Float, b: Float) -> Float:
    return (x + a) * b


@user_fun
def axpby(alpha: Float, ab: Float, beta: Float, c: Float) -> Float:
    return alpha * ab + beta * c


@user_fun
def quantize(x: Float) -> Float:
    """Fixed point with 4 fractional bits."""
    return math.floor(x * 16.0) / 16.0


@user_fun
def sharpen_mask(img: Float, blur: Float) -> Float:
    """Unsharp mask's last two stages: sharpen = img (1 + 3) - 3 blur, kept where |img - blur| >= 0.001."""
    sharp = img * 4.0 - blur * 3.0
    return img if abs(img - blur) < 0.001 else sharp


def _dot(xs, ys):
    return reduce(lift.add, 0.0) << map(mult) << zip(xs, ys)


def _sum(xs):
    return reduce(lift.add, 0.0) << xs


# ----------------------------------------------------------------------------- reductions (Panamera)


def reduce_sum():
    """sum(x)."""
    return fun([Array(F, N)], lambda x: _sum(x))


def row_sums():
    """x.sum(1): one reduction per row."""
    return fun([Array(Array(F, N), M)], lambda x: map(_sum) << x)


def col_sums():
    """x.sum(0): a reduction per column, read through transpose."""
    return fun([Array(Array(F, N), M)], lambda x: map(_sum) << transpose << x)


def two_reductions():
    """(sum(a + b), max(c)): two independent reductions of different lengths, one program."""
    return fun([Array(F, N), Array(F, N), Array(F, M)],
               lambda a, b, c: (reduce(lift.add, 0.0) << map(lambda p: p[0] + p[1]) << zip(a, b),
                                reduce(lift.max_, NEG_INF) << c))


def add_mul_sum0():
    """((X + A) * B).sum(0) with X [B][H][W], A and B [H][W] broadcast over the first axis."""
    def body(x, a, bb):
        cols = transpose << map(join) << x  # [H*W][B]
        return split(W) << map(lambda t: reduce(lift.add, 0.0) << map(lambda xv: add_mul(xv, t[1], t[2]))
                              << t[0]) << zip(cols, join << a, join << bb)
    return fun([Array(Array(Array(F, W), H), B), Array(Array(F, W), H), Array(Array(F, W), H)], body)


# ------------------------------------------------------------------- matrix products (Diesel, TC)


def sgemm():
    """alpha A B + beta C, B given [K][N] (read through transpose)."""
    def body(alpha, a, b, c, beta):
        bt = transpose << b
        return map(lambda rc: map(lambda col_c: axpby(alpha, _dot(rc[0], col_c[0]), beta, col_c[1]))
                   << zip(bt, rc[1])) << zip(a, c)
    return fun([F, Array(Array(F, K), M), Array(Array(F, N), K), Array(Array(F, N), M), F], body)


def tmm():
    """A @ B.T with A [M][K], B [N][K]."""
    return fun([Array(Array(F, K), M), Array(Array(F, K), N)],
               lambda a, b: map(lambda r: map(lambda c: _dot(r, c)) << b) << a)


def tbmm():
    """einsum('bnm,bkm->bnk'): a batch of A @ B.T."""
    return fun([Array(Array(Array(F, M), N), B), Array(Array(Array(F, M), K), B)],
               lambda a, b: map(lambda ab: map(lambda r: map(lambda c: _dot(r, c)) << ab[1]) << ab[0]) << zip(a, b))


def _fc_relu(x, w, bias):
    """relu(x @ w.T + bias), w [out][in]."""
    return map(lambda r: map(lambda wb: bias_relu(_dot(r, wb[0]), wb[1])) << zip(w, bias)) << x


def gemm_bias_relu():
    """relu(X @ W.T + bias): X [M][K], W [N][K], bias [N]."""
    return fun([Array(Array(F, K), M), Array(Array(F, K), N), Array(F, N)], _fc_relu)


def mlp3():
    """Three fully connected ReLU layers, widths K -> N -> H -> W."""
    return fun([Array(Array(F, K), M), Array(Array(F, K), N), Array(F, N), Array(Array(F, N), H), Array(F, H),
                Array(Array(F, H), W), Array(F, W)],
               lambda x, w1, b1, w2, b2, w3, b3: _fc_relu(_fc_relu(_fc_relu(x, w1, b1), w2, b2), w3, b3))


# ------------------------------------------------------------------------------ stencils (AKG, Halide)


def conv1d(taps: int) -> Callable[[], Any]:
    """A valid 1-D correlation with `taps` weights."""
    def build():
        return fun([Array(F, N), Array(F, taps)], lambda x, w: map(lambda win: _dot(win, w)) << slide(taps, 1) << x)
    return build


def conv2d(stride: int) -> Callable[[], Any]:
    """A valid (unpadded) 3x3 convolution with stride `stride`: windows of the [H][W][C] input itself
    against M filters [3][3][C] (thesis Listing 4.1 without the pad)."""
    def build():
        def body(inp, wts):
            windows = map_nd(2, join_nd(3)) << slide_nd(2, (3, 3), stride) << inp
            return map_nd(2, lambda win: map(lambda k: _dot(win, k)) << (map(join_nd(3)) << wts)) << windows
        return fun([Array(Array(Array(F, C), W), H), Array(Array(Array(Array(F, C), 3), 3), M)], body)
    return build


def quant_conv_relu():
    """relu(conv3x3(quantize(img))), zero padding: a producer (quantize) feeding a stencil."""
    return fun([Array(Array(F, W), H), Array(Array(F, 3), 3)],
               lambda img, w: map_nd(2, lambda nbh: relu(_dot(join << nbh, join << w)))
               << slide_nd(2, 3, 1) << pad_nd(2, 1, 1, 0.0) << map_nd(2, quantize) << img)


def maxpool():
    """2x2 max pooling, stride 2, over [N][C][H][W]."""
    return fun([Array(Array(Array(Array(F, W), H), C), N)],
               lambda x: map_nd(2, lambda img: map_nd(2, lambda win: reduce(lift.max_, NEG_INF) << join << win)
                                << slide_nd(2, 2, 2) << img) << x)


def unsharp_mask():
    """Four stages per channel: blur x (5 taps), blur y (5 taps), sharpen, threshold mask; zero padding."""
    taps = [1 / 16, 4 / 16, 6 / 16, 4 / 16, 1 / 16]

    def blur_rows(img):
        return map(lambda row: map(lambda win: _blur(win, taps)) << slide(5, 1) << pad(2, 2, 0.0) << row) << img

    def channel(img):
        by = transpose << blur_rows(transpose << blur_rows(img))
        return map(lambda rows: map(lambda p: sharpen_mask(p[0], p[1])) << zip(rows[0], rows[1])) << zip(img, by)

    return fun([Array(Array(Array(F, W), H), C)], lambda x: map(channel) << x)


def _blur(win, taps):
    acc = win[0] * taps[0]
    for i in range(1, len(taps)):
        acc = acc + win[i] * taps[i]
    return acc


# --------------------------------------------------------------------------------- numpy references


def np_conv1d(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.correlate(x, w, mode="valid")


def np_conv2d(stride: int) -> Callable[..., np.ndarray]:
    """numpy's valid 3x3 convolution with `stride`: im2col (strided slices) then one GEMM."""
    def ref(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        h, wd, c = x.shape
        oh, ow = (h - 3) // stride + 1, (wd - 3) // stride + 1
        cols = np.concatenate([x[i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride, :]
                               for i in range(3) for j in range(3)], axis=2)
        return (cols.reshape(oh * ow, 9 * c) @ w.reshape(w.shape[0], 9 * c).T).reshape(oh, ow, -1)
    return ref


def np_stencil3(img: np.ndarray, w: np.ndarray) -> np.ndarray:
    p = np.pad(img, 1)
    h, wd = img.shape
    return sum(w[i, j] * p[i:i + h, j:j + wd] for i in range(3) for j in range(3))


def np_quant_conv_relu(img: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.maximum(np_stencil3(np.floor(img * 16) / 16, w), 0)


def np_maxpool(x: np.ndarray) -> np.ndarray:
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def np_unsharp(x: np.ndarray) -> np.ndarray:
    taps = np.array([1, 4, 6, 4, 1], dtype=x.dtype) / 16

    def blur(a: np.ndarray, axis: int) -> np.ndarray:
        p = np.pad(a, [(2, 2) if d == axis else (0, 0) for d in range(a.ndim)])
        n = a.shape[axis]
        return sum(taps[i] * np.take(p, range(i, i + n), axis=axis) for i in range(5))

    by = blur(blur(x, 2), 1)
    sharp = x * 4 - by * 3
    return np.where(np.abs(x - by) < 0.001, x, sharp)


def np_fc_relu(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(x @ w.T + b, 0)


@dataclass(frozen=True)
class Seed:
    """One workload: program, inputs for a size tuple, reference, sizes, longest sum's length."""

    name: str
    build: Callable[[], Any]
    shapes: Callable[..., tuple]  # size tuple -> tuple of input shapes (() for a scalar)
    reference: Callable[..., Any]
    tiny: tuple
    quick: tuple
    full: tuple
    sum_length: Callable[..., int]
    note: str = ""

    def inputs(self, sizes: tuple, seed: int = 0) -> tuple:
        """Random float32 inputs in [-0.5, 0.5) (scalars as np.float32), deterministic."""
        rng = np.random.default_rng(seed)
        return tuple(np.float32(rng.random() + 0.5) if s == () else rng.random(s, dtype=np.float32) - 0.5
                     for s in self.shapes(*sizes))


def _mlp_shapes(m: int, k: int, n: int, h: int, w: int) -> tuple:
    return ((m, k), (n, k), (n,), (h, n), (h,), (w, h), (w,))


def _mlp_ref(x, w1, b1, w2, b2, w3, b3):
    return np_fc_relu(np_fc_relu(np_fc_relu(x, w1, b1), w2, b2), w3, b3)


SEEDS: list[Seed] = [
    Seed("reduce_sum", reduce_sum, lambda n: ((n,),), lambda x: x.sum(), (1024,), (1024,), (1024,), lambda n: n),
    Seed("reduce_sum", reduce_sum, lambda n: ((n,),), lambda x: x.sum(), (2176,), (2176,), (2176,), lambda n: n),
    Seed("reduce_sum", reduce_sum, lambda n: ((n,),), lambda x: x.sum(), (4096,), (1 << 20,), (16_226_304,),
         lambda n: n),
    Seed("row_sums", row_sums, lambda m, n: ((m, n),), lambda x: x.sum(1), (8, 64), (256, 4096), (1024, 16384),
         lambda m, n: n),
    Seed("row_sums", row_sums, lambda m, n: ((m, n),), lambda x: x.sum(1), (64, 8), (4096, 256), (16384, 1024),
         lambda m, n: n),
    Seed("col_sums", col_sums, lambda m, n: ((m, n),), lambda x: x.sum(0), (32, 16), (2048, 768), (8192, 768),
         lambda m, n: m),
    Seed("two_reductions", two_reductions, lambda n, m: ((n,), (n,), (m,)),
         lambda a, b, c: ((a + b).sum(), c.max()), (64, 136), (1024, 2176), (1024, 2176), lambda n, m: n),
    Seed("add_mul_sum0", add_mul_sum0, lambda b, h, w: ((b, h, w), (h, w), (h, w)),
         lambda x, a, b: ((x + a) * b).sum(0), (4, 8, 16), (64, 128, 768), (64, 128, 768), lambda b, h, w: b),
    Seed("sgemm", sgemm, lambda m, n, k: ((), (m, k), (k, n), (m, n), ()),
         lambda al, a, b, c, be: al * (a @ b) + be * c, (8, 8, 8), (256, 256, 256), (1024, 1024, 1024),
         lambda m, n, k: k),
    Seed("tmm", tmm, lambda m, n, k: ((m, k), (n, k)), lambda a, b: a @ b.T, (8, 4, 16), (128, 32, 256),
         (128, 32, 256), lambda m, n, k: k),
    Seed("tmm", tmm, lambda m, n, k: ((m, k), (n, k)), lambda a, b: a @ b.T, (8, 16, 16), (128, 256, 256),
         (128, 1024, 1024), lambda m, n, k: k),
    Seed("tbmm", tbmm, lambda b, n, m, k: ((b, n, m), (b, k, m)), lambda a, b: np.einsum("bnm,bkm->bnk", a, b),
         (3, 4, 8, 4), (50, 26, 72, 26), (500, 26, 72, 26), lambda b, n, m, k: m),
    Seed("gemm_bias_relu", gemm_bias_relu, lambda m, k, n: ((m, k), (n, k), (n,)), np_fc_relu, (8, 16, 12),
         (128, 256, 250), (128, 1024, 1000), lambda m, k, n: k),
    Seed("mlp3", mlp3, _mlp_shapes, _mlp_ref, (4, 16, 8, 8, 4), (32, 1024, 512, 256, 128),
         (128, 1024, 512, 256, 128), lambda m, k, n, h, w: k),
    Seed("conv1d_3", conv1d(3), lambda n: ((n,), (3,)), np_conv1d, (64,), (1 << 18,), (1 << 22,), lambda n: 3),
    Seed("conv1d_17", conv1d(17), lambda n: ((n,), (17,)), np_conv1d, (64,), (1 << 18,), (1 << 22,),
         lambda n: 17),
    Seed("conv_valid", conv2d(1), lambda h, w, c, m: ((h, w, c), (m, 3, 3, c)), np_conv2d(1), (6, 6, 8, 16),
         (34, 34, 64, 64), (66, 66, 64, 64), lambda h, w, c, m: 9 * c),
    Seed("conv_stride2", conv2d(2), lambda h, w, c, m: ((h, w, c), (m, 3, 3, c)), np_conv2d(2), (7, 7, 8, 16),
         (65, 65, 64, 64), (129, 129, 64, 64), lambda h, w, c, m: 9 * c),
    Seed("quant_conv_relu", quant_conv_relu, lambda h, w: ((h, w), (3, 3)), np_quant_conv_relu, (12, 20),
         (512, 512), (2048, 2048), lambda h, w: 9),
    Seed("maxpool", maxpool, lambda n, c, h, w: ((n, c, h, w),), np_maxpool, (2, 3, 8, 8), (4, 16, 112, 112),
         (32, 64, 112, 112), lambda n, c, h, w: 4),
    Seed("unsharp_mask", unsharp_mask, lambda c, h, w: ((c, h, w),), np_unsharp, (3, 12, 20), (3, 512, 512),
         (3, 2048, 2048), lambda c, h, w: 10),
]
