"""LIFT's CGO 2018 stencils (lift-project/lift `highLevel/stencil/cgo/`): Rodinia's hotspot,
hotspot3D and SRAD (neighbours read through `pad_nd(mode="clamp")`, as Rodinia clamps its
indices), SHOC's 2-D stencil (a 3 x 3 window over the interior of a haloed grid), acoustic (a wave equation step
over two time steps) and PPCG's jacobi 2-D 5/9-point, gaussian 5x5, grad2d, heat3d, poisson3d and
jacobi 3-D 7/13/19/27-point (zero boundaries), and CGO 2017's separable convolution, each with its
numpy reference.

Windows are `slide_nd(k, size, 1)` over `pad_nd(k, r, r, ..)`: a window `w` of a 2-D stencil is
read `w[row][col]`, of a 3-D one `w[plane][row][col]`, the centre at the radius.
"""

from __future__ import annotations

import builtins
import math
from typing import Any

import numpy as np

import lift
from lift import (
    Array,
    Float,
    fun,
    join,
    let,
    map,
    map_nd,
    pad,
    pad_nd,
    reduce,
    select,
    slide,
    slide_nd,
    transpose,
    user_fun,
    zip,
    zip_nd,
)

from .case import Case

# ------------------------------------------------------------------ user functions


def _hotspot(t, n, s, e, w, p):
    # Rodinia hotspot: step/cap * (power + (N + S - 2T) / Ry + (E + W - 2T) / Rx + (amb - T) / Rz)
    return t + 1.3 * (p + (n + s - 2.0 * t) * 0.1 + (e + w - 2.0 * t) * 0.1 + (80.0 - t) * 0.0005)


def _hotspot3d(c, n, s, e, w, t, b, p):
    # Rodinia hotspot3D: cc*C + cn*N + cs*S + ce*E + cw*W + ct*T + cb*B + dt/cap*power + ct*amb
    return (0.4 * c + 0.1 * (n + s) + 0.12 * (e + w) + 0.08 * (t + b) + 0.05 * p + 0.08 * 80.0)


def _jacobi5(c, n, s, e, w):
    # PPCG j2d5pt
    return (5.1 * n + 12.1 * w + 15.0 * c + 12.2 * e + 5.2 * s) / 118.0


def _jacobi9(c, n1, n2, s1, s2, e1, e2, w1, w2):
    # PPCG j2d9pt: the cross of radius 2
    return (7.1 * n2 + 5.1 * n1 + 9.2 * w2 + 12.1 * w1 + 15.0 * c + 12.2 * e1 + 9.1 * e2
            + 5.2 * s1 + 7.3 * s2) / 118.0


def _grad(c, n, s, e, w):
    # PPCG grad2d
    return c + 1.0 / math.sqrt(0.0001 + (c - n) * (c - n) + (c - s) * (c - s) + (c - e) * (c - e)
                               + (c - w) * (c - w))


def _shoc(c, n, s, e, w, nw, ne, sw, se):
    # SHOC stencil2d: centre, cardinal and diagonal weights
    return 0.25 * c + 0.15 * (n + s + e + w) + 0.05 * (nw + ne + sw + se)


def _heat(c, n, s, e, w, t, b):
    # PPCG heat3d
    return 0.125 * (n - 2.0 * c + s) + 0.125 * (e - 2.0 * c + w) + 0.125 * (t - 2.0 * c + b) + c


def _jacobi7(c, n, s, e, w, t, b):
    # PPCG j3d7pt
    return (0.161 * e + 0.162 * w + 0.163 * n + 0.164 * s + 0.165 * t + 0.166 * b - 1.67 * c)


def _jacobi13(c, n1, n2, s1, s2, e1, e2, w1, w2, t1, t2, b1, b2):
    # PPCG j3d13pt: the 3-D cross of radius 2
    return (0.0876 * c - 0.0765 * (e1 + w1 + n1 + s1 + t1 + b1) + 0.0654 * (e2 + w2 + n2 + s2 + t2 + b2))


def _poisson(c, n, s, e, w, t, b, tn, ts, te, tw, bn, bs, be, bw, ne, nw, se, sw):
    # PPCG poisson3d: the 19-point stencil (faces and edges of the 3 x 3 x 3 cube)
    return (2.666 * c - 0.166 * (n + s + e + w + t + b)
            - 0.0833 * (tn + ts + te + tw + bn + bs + be + bw + ne + nw + se + sw))


def _jacobi19(c, n, s, e, w, t, b, tn, ts, te, tw, bn, bs, be, bw, ne, nw, se, sw):
    # PPCG j3d19pt: the centre, the 6 faces and the 12 edges of the 3 x 3 x 3 cube
    return (0.3 * c + 0.05 * (n + s + e + w + t + b)
            + 0.025 * (tn + ts + te + tw + bn + bs + be + bw + ne + nw + se + sw))


def _acoustic(c, n, s, e, w, t, b, prev):
    # CGO 2018's acoustic: one time step of the 3-D wave equation (2 C - previous + l2 Laplacian)
    return 2.0 * c - prev + 0.1 * (n + s + e + w + t + b - 6.0 * c)


def _srad1(j, n, s, w, e, q0):
    # Rodinia SRAD, first kernel: the diffusion coefficient of a pixel from its clamped neighbours
    dn = n - j
    ds = s - j
    dw = w - j
    de = e - j
    g2 = (dn * dn + ds * ds + dw * dw + de * de) / (j * j)
    lap = (dn + ds + dw + de) / j
    num = 0.5 * g2 - 0.0625 * lap * lap
    den = 1.0 + 0.25 * lap
    qsqr = num / (den * den)
    c = 1.0 / (1.0 + (qsqr - q0) / (q0 * (1.0 + q0)))
    return select(c < 0.0, 0.0, select(c > 1.0, 1.0, c))


def _srad2(j, n, s, w, e, c, cs, ce):
    # Rodinia SRAD, second kernel: the divergence of the coefficients times the gradients, lambda 0.5
    return j + 0.125 * (c * (n - j) + cs * (s - j) + c * (w - j) + ce * (e - j))


hotspot = user_fun(_hotspot, [Float] * 6, Float, name="hotspot")
srad1 = user_fun(_srad1, [Float] * 6, Float, name="srad1")
srad2 = user_fun(_srad2, [Float] * 8, Float, name="srad2")
jacobi19 = user_fun(_jacobi19, [Float] * 19, Float, name="jacobi19")
acoustic = user_fun(_acoustic, [Float] * 8, Float, name="acoustic")
hotspot3d = user_fun(_hotspot3d, [Float] * 8, Float, name="hotspot3d")
jacobi5 = user_fun(_jacobi5, [Float] * 5, Float, name="jacobi5")
jacobi9 = user_fun(_jacobi9, [Float] * 9, Float, name="jacobi9")
grad = user_fun(_grad, [Float] * 5, Float, name="grad2d")
shoc = user_fun(_shoc, [Float] * 9, Float, name="shoc2d")
heat = user_fun(_heat, [Float] * 7, Float, name="heat3d")
jacobi7 = user_fun(_jacobi7, [Float] * 7, Float, name="jacobi7")
jacobi13 = user_fun(_jacobi13, [Float] * 13, Float, name="jacobi13")
poisson = user_fun(_poisson, [Float] * 19, Float, name="poisson19")

# ------------------------------------------------------------------ numpy helpers


def _shifted(q: np.ndarray, r: int, shape: tuple[int, ...]):
    """`at(*offsets)`: the padded array `q` (radius `r`) shifted by the offsets, of `shape`."""
    def at(*off: int) -> np.ndarray:
        return q[tuple(slice(r + o, r + o + s) for o, s in builtins.zip(off, shape))]
    return at


def _grid2(n: int) -> Any:
    return Array(Array(Float, n), n)


def _grid3(n: int, depth: int | None = None) -> Any:
    return Array(Array(Array(Float, n), n), depth or n)


# ------------------------------------------------------------------ 2-D


def hotspot_case(n: int, rng: np.random.Generator) -> Case:
    def body(temp: Any, power: Any) -> Any:
        windows = slide_nd(2, 3, 1) << pad_nd(2, 1, 1, mode="clamp") << temp
        return map(lambda rows: map(lambda q: hotspot(q[0][1][1], q[0][0][1], q[0][2][1], q[0][1][2], q[0][1][0], q[1]))
                   << zip(rows[0], rows[1])) << zip(windows, power)

    def ref(t: np.ndarray, p: np.ndarray) -> np.ndarray:
        at = _shifted(np.pad(t, 1, mode="edge"), 1, t.shape)
        return t + 1.3 * (p + (at(-1, 0) + at(1, 0) - 2.0 * t) * 0.1 + (at(0, 1) + at(0, -1) - 2.0 * t) * 0.1
                          + (80.0 - t) * 0.0005)

    args = (rng.random((n, n), dtype=np.float32) * 10 + 320, rng.random((n, n), dtype=np.float32))
    return Case("hotspot (clamp)", f"{n}x{n}", fun([_grid2(n), _grid2(n)], body), args, ref)


def jacobi5_case(n: int, rng: np.random.Generator) -> Case:
    prog = fun([_grid2(n)], lambda a: map_nd(2, lambda w: jacobi5(w[1][1], w[0][1], w[2][1], w[1][2], w[1][0]))
               << slide_nd(2, 3, 1) << pad_nd(2, 1, 1, mode="clamp") << a)

    def ref(a: np.ndarray) -> np.ndarray:
        at = _shifted(np.pad(a, 1, mode="edge"), 1, a.shape)
        return (5.1 * at(-1, 0) + 12.1 * at(0, -1) + 15.0 * a + 12.2 * at(0, 1) + 5.2 * at(1, 0)) / 118.0

    return Case("jacobi 2-D 5-point (clamp)", f"{n}x{n}", prog, (rng.random((n, n), dtype=np.float32),), ref)


def jacobi9_case(n: int, rng: np.random.Generator) -> Case:
    prog = fun([_grid2(n)], lambda a: map_nd(2, lambda w: jacobi9(
        w[2][2], w[1][2], w[0][2], w[3][2], w[4][2], w[2][3], w[2][4], w[2][1], w[2][0]))
        << slide_nd(2, 5, 1) << pad_nd(2, 2, 2, 0.0) << a)

    def ref(a: np.ndarray) -> np.ndarray:
        at = _shifted(np.pad(a, 2), 2, a.shape)
        return (7.1 * at(-2, 0) + 5.1 * at(-1, 0) + 9.2 * at(0, -2) + 12.1 * at(0, -1) + 15.0 * a
                + 12.2 * at(0, 1) + 9.1 * at(0, 2) + 5.2 * at(1, 0) + 7.3 * at(2, 0)) / 118.0

    return Case("jacobi 2-D 9-point", f"{n}x{n}", prog, (rng.random((n, n), dtype=np.float32),), ref)


GAUSS5 = np.array([[2, 4, 5, 4, 2], [4, 9, 12, 9, 4], [5, 12, 15, 12, 5], [4, 9, 12, 9, 4], [2, 4, 5, 4, 2]],
                  np.float32) / 159


def gaussian_case(n: int, rng: np.random.Generator) -> Case:
    # the 5 x 5 weights an input, the window's points multiplied by them and summed (a convolution)
    prog = fun([_grid2(n), Array(Float, 25)], lambda a, k: map_nd(2, lambda w: reduce(lift.add, 0.0)
               << map(lift.mult) << zip(join << w, k)) << slide_nd(2, 5, 1) << pad_nd(2, 2, 2, 0.0) << a)

    def ref(a: np.ndarray, k: np.ndarray) -> np.ndarray:
        at = _shifted(np.pad(a, 2), 2, a.shape)
        return sum(k[5 * i + j] * at(i - 2, j - 2) for i in range(5) for j in range(5))

    return Case("gaussian 5x5", f"{n}x{n}", prog, (rng.random((n, n), dtype=np.float32), GAUSS5.ravel()), ref)


def grad2d_case(n: int, rng: np.random.Generator) -> Case:
    prog = fun([_grid2(n)], lambda a: map_nd(2, lambda w: grad(w[1][1], w[0][1], w[2][1], w[1][2], w[1][0]))
               << slide_nd(2, 3, 1) << pad_nd(2, 1, 1, 0.0) << a)

    def ref(a: np.ndarray) -> np.ndarray:
        at = _shifted(np.pad(a, 1), 1, a.shape)
        d = sum((a - at(*o)) ** 2 for o in ((-1, 0), (1, 0), (0, 1), (0, -1)))
        return a + 1.0 / np.sqrt(np.float32(0.0001) + d)

    return Case("grad2d", f"{n}x{n}", prog, (rng.random((n, n), dtype=np.float32),), ref, rtol=1e-3, atol=1e-2)


def shoc_case(n: int, rng: np.random.Generator) -> Case:
    # SHOC's grid carries its halo: the (n+2) x (n+2) input, windows over its interior, no padding
    prog = fun([_grid2(n + 2)], lambda a: map_nd(2, lambda w: shoc(
        w[1][1], w[0][1], w[2][1], w[1][2], w[1][0], w[0][0], w[0][2], w[2][0], w[2][2])) << slide_nd(2, 3, 1) << a)

    def ref(a: np.ndarray) -> np.ndarray:
        at = _shifted(a, 1, (n, n))
        return (0.25 * at(0, 0) + 0.15 * (at(-1, 0) + at(1, 0) + at(0, 1) + at(0, -1))
                + 0.05 * (at(-1, -1) + at(-1, 1) + at(1, -1) + at(1, 1)))

    return Case("SHOC stencil 2-D", f"{n}x{n}", prog, (rng.random((n + 2, n + 2), dtype=np.float32),), ref)


# ------------------------------------------------------------------ 3-D


def hotspot3d_case(n: int, depth: int, rng: np.random.Generator) -> Case:
    def body(temp: Any, power: Any) -> Any:
        windows = slide_nd(3, 3, 1) << pad_nd(3, 1, 1, mode="clamp") << temp
        return map_nd(3, lambda q: hotspot3d(q[0][1][1][1], q[0][1][0][1], q[0][1][2][1], q[0][1][1][2],
                                             q[0][1][1][0], q[0][0][1][1], q[0][2][1][1], q[1])) \
            << zip_nd(3, windows, power)

    def ref(t: np.ndarray, p: np.ndarray) -> np.ndarray:
        at = _shifted(np.pad(t, 1, mode="edge"), 1, t.shape)
        return (0.4 * t + 0.1 * (at(0, -1, 0) + at(0, 1, 0)) + 0.12 * (at(0, 0, 1) + at(0, 0, -1))
                + 0.08 * (at(-1, 0, 0) + at(1, 0, 0)) + 0.05 * p + 0.08 * 80.0)

    shape = (depth, n, n)
    args = (rng.random(shape, dtype=np.float32) * 10 + 320, rng.random(shape, dtype=np.float32))
    return Case("hotspot3D (clamp)", f"{n}x{n}x{depth}", fun([_grid3(n, depth)] * 2, body), args, ref)


def _cross3(w: Any, r: int, d: int) -> list[Any]:
    """The points of a 3-D window of radius r at distance d along each axis: N, S, E, W, T, B."""
    return [w[r][r - d][r], w[r][r + d][r], w[r][r][r + d], w[r][r][r - d], w[r - d][r][r], w[r + d][r][r]]


def _cross_np(at: Any, d: int) -> list[np.ndarray]:
    return [at(0, -d, 0), at(0, d, 0), at(0, 0, d), at(0, 0, -d), at(-d, 0, 0), at(d, 0, 0)]


def _stencil3(n: int, r: int, f: Any) -> Any:
    return fun([_grid3(n)], lambda a: map_nd(3, f) << slide_nd(3, 2 * r + 1, 1) << pad_nd(3, r, r, 0.0) << a)


def heat3d_case(n: int, rng: np.random.Generator) -> Case:
    prog = _stencil3(n, 1, lambda w: heat(w[1][1][1], *_cross3(w, 1, 1)))

    def ref(a: np.ndarray) -> np.ndarray:
        no, so, ea, we, to, bo = _cross_np(_shifted(np.pad(a, 1), 1, a.shape), 1)
        return 0.125 * (no - 2 * a + so) + 0.125 * (ea - 2 * a + we) + 0.125 * (to - 2 * a + bo) + a

    return Case("heat3d", f"{n}^3", prog, (rng.random((n, n, n), dtype=np.float32),), ref)


def jacobi7_case(n: int, rng: np.random.Generator) -> Case:
    prog = _stencil3(n, 1, lambda w: jacobi7(w[1][1][1], *_cross3(w, 1, 1)))

    def ref(a: np.ndarray) -> np.ndarray:
        no, so, ea, we, to, bo = _cross_np(_shifted(np.pad(a, 1), 1, a.shape), 1)
        return 0.161 * ea + 0.162 * we + 0.163 * no + 0.164 * so + 0.165 * to + 0.166 * bo - 1.67 * a

    return Case("jacobi 3-D 7-point", f"{n}^3", prog, (rng.random((n, n, n), dtype=np.float32),), ref)


def jacobi13_case(n: int, rng: np.random.Generator) -> Case:
    def point(w: Any) -> Any:
        one, two = _cross3(w, 2, 1), _cross3(w, 2, 2)
        return jacobi13(w[2][2][2], *[p for pair in builtins.zip(one, two) for p in pair])

    prog = _stencil3(n, 2, point)

    def ref(a: np.ndarray) -> np.ndarray:
        at = _shifted(np.pad(a, 2), 2, a.shape)
        return 0.0876 * a - 0.0765 * sum(_cross_np(at, 1)) + 0.0654 * sum(_cross_np(at, 2))

    return Case("jacobi 3-D 13-point", f"{n}^3", prog, (rng.random((n, n, n), dtype=np.float32),), ref)


def poisson_case(n: int, rng: np.random.Generator) -> Case:
    def point(w: Any) -> Any:
        edges = [w[0][0][1], w[0][2][1], w[0][1][2], w[0][1][0], w[2][0][1], w[2][2][1], w[2][1][2], w[2][1][0],
                 w[1][0][2], w[1][0][0], w[1][2][2], w[1][2][0]]
        return poisson(w[1][1][1], *_cross3(w, 1, 1), *edges)

    prog = _stencil3(n, 1, point)

    def ref(a: np.ndarray) -> np.ndarray:
        at = _shifted(np.pad(a, 1), 1, a.shape)
        edges = [at(p, r, c) for p, r, c in ((-1, -1, 0), (-1, 1, 0), (-1, 0, 1), (-1, 0, -1), (1, -1, 0), (1, 1, 0),
                                             (1, 0, 1), (1, 0, -1), (0, -1, 1), (0, -1, -1), (0, 1, 1), (0, 1, -1))]
        return 2.666 * a - 0.166 * sum(_cross_np(at, 1)) - 0.0833 * sum(edges)

    return Case("poisson3d (19-point)", f"{n}^3", prog, (rng.random((n, n, n), dtype=np.float32),), ref)


def jacobi27_case(n: int, rng: np.random.Generator) -> Case:
    # the 27 weights an input: the cube's points multiplied by them and summed
    prog = fun([_grid3(n), Array(Float, 27)], lambda a, k: map_nd(3, lambda w: reduce(lift.add, 0.0)
               << map(lift.mult) << zip(join << join << w, k)) << slide_nd(3, 3, 1) << pad_nd(3, 1, 1, 0.0) << a)

    def ref(a: np.ndarray, k: np.ndarray) -> np.ndarray:
        at = _shifted(np.pad(a, 1), 1, a.shape)
        return sum(k[9 * p + 3 * r + c] * at(p - 1, r - 1, c - 1) for p in range(3) for r in range(3) for c in range(3))

    weights = (np.arange(27, dtype=np.float32) % 5 + 1) / 81
    return Case("jacobi 3-D 27-point", f"{n}^3", prog, (rng.random((n, n, n), dtype=np.float32), weights), ref)


def _edges(w: Any) -> list[Any]:
    """The 12 edge points of a 3 x 3 x 3 window (the order of `_edges_np`)."""
    return [w[0][0][1], w[0][2][1], w[0][1][2], w[0][1][0], w[2][0][1], w[2][2][1], w[2][1][2], w[2][1][0],
            w[1][0][2], w[1][0][0], w[1][2][2], w[1][2][0]]


def _edges_np(at: Any) -> list[np.ndarray]:
    return [at(p, r, c) for p, r, c in ((-1, -1, 0), (-1, 1, 0), (-1, 0, 1), (-1, 0, -1), (1, -1, 0), (1, 1, 0),
                                        (1, 0, 1), (1, 0, -1), (0, -1, 1), (0, -1, -1), (0, 1, 1), (0, 1, -1))]


def jacobi19_case(n: int, rng: np.random.Generator) -> Case:
    prog = _stencil3(n, 1, lambda w: jacobi19(w[1][1][1], *_cross3(w, 1, 1), *_edges(w)))

    def ref(a: np.ndarray) -> np.ndarray:
        at = _shifted(np.pad(a, 1), 1, a.shape)
        return 0.3 * a + 0.05 * sum(_cross_np(at, 1)) + 0.025 * sum(_edges_np(at))

    return Case("jacobi 3-D 19-point", f"{n}^3", prog, (rng.random((n, n, n), dtype=np.float32),), ref)


def acoustic_case(n: int, depth: int, rng: np.random.Generator) -> Case:
    # the current and the previous time step; the grid's halo is zero
    def body(cur: Any, prev: Any) -> Any:
        windows = slide_nd(3, 3, 1) << pad_nd(3, 1, 1, 0.0) << cur
        return map_nd(3, lambda q: acoustic(q[0][1][1][1], *_cross3(q[0], 1, 1), q[1])) << zip_nd(3, windows, prev)

    def ref(cur: np.ndarray, prev: np.ndarray) -> np.ndarray:
        at = _shifted(np.pad(cur, 1), 1, cur.shape)
        return 2.0 * cur - prev + 0.1 * (sum(_cross_np(at, 1)) - 6.0 * cur)

    shape = (depth, n, n)
    args = (rng.random(shape, dtype=np.float32), rng.random(shape, dtype=np.float32))
    return Case("acoustic", f"{n}x{n}x{depth}", fun([_grid3(n, depth)] * 2, body), args, ref)


def separable_case(n: int, taps: int, rng: np.random.Generator) -> Case:
    """CGO 2017's separable convolution: a row pass then a column pass of `taps` weights (zero
    outside the image), the columns read through `transpose`."""
    r = taps // 2

    def rows(img: Any, k: Any) -> Any:
        return map(lambda row: map(lambda w: reduce(lift.add, 0.0) << map(lift.mult) << zip(w, k))
                   << slide(taps, 1) << pad(r, r, 0.0) << row) << img

    prog = fun([_grid2(n), Array(Float, taps), Array(Float, taps)], lambda img, kr, kc: transpose << rows(
        transpose << rows(img, kr), kc))

    def ref(img: np.ndarray, kr: np.ndarray, kc: np.ndarray) -> np.ndarray:
        q = np.pad(img, ((0, 0), (r, r)))
        h = sum(kr[j] * q[:, j:j + n] for j in range(taps))
        q = np.pad(h, ((r, r), (0, 0)))
        return sum(kc[j] * q[j:j + n, :] for j in range(taps))

    k = np.hanning(taps + 2)[1:-1].astype(np.float32)
    k /= k.sum()
    return Case("separable convolution", f"{n}x{n}, {taps} taps", prog,
                (rng.random((n, n), dtype=np.float32), k, k[::-1].copy()), ref)


def srad_case(n: int, rng: np.random.Generator) -> Case:
    """Rodinia's SRAD (one iteration, CGO 2018's two stencils): the coefficients of every pixel
    from its clamped neighbours, then the image updated from them, bound by `let`; q0sqr an input."""
    def windows(x: Any) -> Any:
        return slide_nd(2, 3, 1) << pad_nd(2, 1, 1, mode="clamp") << x

    def body(q0: Any, img: Any) -> Any:
        coeff = map_nd(2, lambda w: srad1(w[1][1], w[0][1], w[2][1], w[1][0], w[1][2], q0)) << windows(img)
        return let(lambda cc: map_nd(2, lambda q: srad2(q[0][1][1], q[0][0][1], q[0][2][1], q[0][1][0], q[0][1][2],
                                                          q[1][1][1], q[1][2][1], q[1][1][2]))
                   << zip_nd(2, windows(img), windows(cc))) << coeff

    def ref(q0: np.float32, j: np.ndarray) -> np.ndarray:
        at = _shifted(np.pad(j, 1, mode="edge"), 1, j.shape)
        dn, ds, dw, de = at(-1, 0) - j, at(1, 0) - j, at(0, -1) - j, at(0, 1) - j
        g2 = (dn * dn + ds * ds + dw * dw + de * de) / (j * j)
        lap = (dn + ds + dw + de) / j
        den = 1 + 0.25 * lap
        qsqr = (0.5 * g2 - 0.0625 * lap * lap) / (den * den)
        c = np.clip(1 / (1 + (qsqr - q0) / (q0 * (1 + q0))), 0, 1)
        ct = _shifted(np.pad(c, 1, mode="edge"), 1, c.shape)
        return j + 0.125 * (c * dn + ct(1, 0) * ds + c * dw + ct(0, 1) * de)

    args = (np.float32(0.05), (rng.random((n, n), dtype=np.float32) + 1.0).astype(np.float32))
    return Case("SRAD (clamp)", f"{n}x{n}", fun([Float, _grid2(n)], body), args, ref, rtol=1e-3, atol=1e-3)
