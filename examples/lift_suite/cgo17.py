"""LIFT's CGO 2017 programs (lift-project/lift `highLevel/`, Shine's `benchmarks/cgo17`) written as
a liftcl user writes them, each with its numpy reference.

N-Body (all pairs), molecular dynamics over a neighbour list (`lift.gather`), K-Means'
assignment step, nearest neighbour, MRI-Q's Q computation (sin and cos per voxel per sample),
GEMV, ATAX (`A^T (A x)`, the second product down the columns of A), GESUMMV, matrix
multiplication in LIFT's four layouts, SRAD's statistics and an arg-min over `iota`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import lift
from lift import (
    Array,
    Float,
    Int,
    Tuple,
    fun,
    gather,
    get,
    iota,
    join,
    let,
    map,
    reduce,
    select,
    transpose,
    user_fun,
    zip,
)

from .case import Case, dot

INF = float("inf")

# ------------------------------------------------------------------ user functions


def _sqdiff(a, b):
    return (a - b) * (a - b)


def _closer(a, b):
    return select(b[1] < a[1], b, a)


def _distance(lat, lng):
    return math.sqrt((lat - 30.0) * (lat - 30.0) + (lng - 90.0) * (lng - 90.0))


def _gesummv(ax, bx):
    return 1.5 * ax + 1.2 * bx


def _moments(v):
    return (v, v * v)


def _add_pairs(a, b):
    return (a[0] + b[0], a[1] + b[1])


def _srad_scale(v, s):
    # the image standardised by its mean and variance (s: sum, sum of squares over 2^18 pixels)
    mean = s[0] * 3.814697265625e-06
    return (v - mean) / (s[1] * 3.814697265625e-06 - mean * mean)


def _q(x, y, z, kx, ky, kz, phi):
    # MRI-Q: one sample's contribution to a voxel's (Qr, Qi)
    arg = 6.2831853071795864769 * (kx * x + ky * y + kz * z)
    return (phi * math.cos(arg), phi * math.sin(arg))


def _accel(xi, yi, zi, xj, yj, zj, mj):
    # N-Body (LIFT's calcAcc): the acceleration of body i towards body j, softened by espSqr = 0.005
    rx = xj - xi
    ry = yj - yi
    rz = zj - zi
    inv = 1.0 / math.sqrt(rx * rx + ry * ry + rz * rz + 0.005)
    s = mj * inv * inv * inv
    return (s * rx, s * ry, s * rz)


def _add3(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _update(x, y, z, vx, vy, vz, a):
    # N-Body (LIFT's update), deltaT = 0.005: the body's new position and velocity
    return (x + vx * 0.005 + 0.5 * a[0] * 0.005 * 0.005, y + vy * 0.005 + 0.5 * a[1] * 0.005 * 0.005,
            z + vz * 0.005 + 0.5 * a[2] * 0.005 * 0.005, vx + a[0] * 0.005, vy + a[1] * 0.005, vz + a[2] * 0.005)


def _lj(xi, yi, zi, xj, yj, zj):
    # molecular dynamics (LIFT's mdCompute): the Lennard-Jones force of neighbour j on particle i
    # within the cut-off (cutsq = 16, lj1 = 1.5, lj2 = 2)
    dx = xi - xj
    dy = yi - yj
    dz = zi - zj
    r2 = dx * dx + dy * dy + dz * dz
    r2inv = 1.0 / r2
    r6inv = r2inv * r2inv * r2inv
    f = select(r2 < 16.0, r2inv * r6inv * (1.5 * r6inv - 2.0), 0.0)
    return (dx * f, dy * f, dz * f)


sqdiff = user_fun(_sqdiff, [Float, Float], Float, name="sqdiff")
closer = user_fun(_closer, [Tuple(Int, Float)] * 2, Tuple(Int, Float), name="closer")
distance = user_fun(_distance, [Float, Float], Float, name="record_distance")
gesummv_out = user_fun(_gesummv, [Float, Float], Float, name="gesummv_out")
moments = user_fun(_moments, [Float], Tuple(Float, Float), name="moments")
add_pairs = user_fun(_add_pairs, [Tuple(Float, Float)] * 2, Tuple(Float, Float), name="add_pairs")
srad_scale = user_fun(_srad_scale, [Float, Tuple(Float, Float)], Float, name="srad_scale")
qfun = user_fun(_q, [Float] * 7, Tuple(Float, Float), name="mriq_sample")
accel = user_fun(_accel, [Float] * 7, Tuple(Float, Float, Float), name="nbody_accel")
add3 = user_fun(_add3, [Tuple(Float, Float, Float)] * 2, Tuple(Float, Float, Float), name="add3")
update = user_fun(_update, [Float] * 6 + [Tuple(Float, Float, Float)], Tuple(*[Float] * 6), name="nbody_update")
lj = user_fun(_lj, [Float] * 6, Tuple(Float, Float, Float), name="md_force")

# ------------------------------------------------------------------ programs


def kmeans_case(p: int, k: int, d: int, rng: np.random.Generator) -> Case:
    def nearest(pt: Any, cs: Any) -> Any:
        dists = map(lambda c: reduce(lift.add, 0.0) << map(lambda t: sqdiff(t[0], t[1])) << zip(pt, c)) << cs
        return get(0) << (reduce(closer, (-1, INF)) << zip(iota(k), dists))

    prog = fun([Array(Array(Float, d), p), Array(Array(Float, d), k)], lambda pts, cs: map(
        lambda pt: nearest(pt, cs)) << pts)

    def ref(pts: np.ndarray, cs: np.ndarray) -> np.ndarray:
        return ((pts[:, None, :] - cs[None]) ** 2).sum(-1).argmin(1).astype(np.int32)

    args = (rng.random((p, d), dtype=np.float32), rng.random((k, d), dtype=np.float32))
    return Case("K-Means assignment", f"{p}x{d}, K={k}", prog, args, ref)


def nn_case(n: int, rng: np.random.Generator) -> Case:
    prog = fun([Array(Float, n), Array(Float, n)], lambda lat, lng: map(lambda q: distance(q[0], q[1]))
               << zip(lat, lng))

    def ref(lat: np.ndarray, lng: np.ndarray) -> np.ndarray:
        return np.sqrt((lat - 30.0) ** 2 + (lng - 90.0) ** 2)

    args = (rng.random(n, dtype=np.float32) * 90, rng.random(n, dtype=np.float32) * 180)
    return Case("nearest neighbour", f"{n}", prog, args, ref)


def gemv_case(n: int, rng: np.random.Generator) -> Case:
    prog = fun([Array(Array(Float, n), n), Array(Float, n)], lambda a, x: map(lambda r: dot(r, x)) << a)
    args = (rng.random((n, n), dtype=np.float32) - 0.5, rng.random(n, dtype=np.float32) - 0.5)
    return Case("GEMV", f"{n}x{n}", prog, args, lambda a, x: a @ x)


def atax_case(n: int, rng: np.random.Generator) -> Case:
    # LIFT's atax: tmp = A x (rows), y = A^T tmp (the columns of A, read through transpose)
    prog = fun([Array(Array(Float, n), n), Array(Float, n)], lambda a, x: let(
        lambda tmp: map(lambda col: dot(col, tmp)) << transpose << a) << (map(lambda r: dot(r, x)) << a))
    args = (rng.random((n, n), dtype=np.float32) - 0.5, rng.random(n, dtype=np.float32) - 0.5)
    return Case("ATAX", f"{n}x{n}", prog, args, lambda a, x: a.T @ (a @ x), rtol=1e-3, atol=1e-2)


def gesummv_case(n: int, rng: np.random.Generator) -> Case:
    prog = fun([Array(Array(Float, n), n), Array(Array(Float, n), n), Array(Float, n)], lambda a, b, x: map(
        lambda rows: gesummv_out(dot(rows[0], x), dot(rows[1], x))) << zip(a, b))
    args = (rng.random((n, n), dtype=np.float32) - 0.5, rng.random((n, n), dtype=np.float32) - 0.5,
            rng.random(n, dtype=np.float32) - 0.5)
    return Case("GESUMMV", f"{n}x{n}", prog, args, lambda a, b, x: 1.5 * (a @ x) + 1.2 * (b @ x))


def mm_case(layout: str, n: int, rng: np.random.Generator) -> Case:
    """C = A B with A given as A or A^T and B as B or B^T (LIFT's four matrix-multiplication layouts):
    `layout` names the operands as they are passed ("AB", "AtB", "ABt", "AtBt")."""
    sq = Array(Array(Float, n), n)
    rows_a = (lambda a: transpose << a) if layout.startswith("At") else (lambda a: a)
    cols_b = (lambda b: b) if layout.endswith("Bt") else (lambda b: transpose << b)
    prog = fun([sq, sq], lambda a, b: map(lambda r: map(lambda c: dot(r, c)) << cols_b(b)) << rows_a(a))
    args = (rng.random((n, n), dtype=np.float32) - 0.5, rng.random((n, n), dtype=np.float32) - 0.5)

    def ref(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a.T if layout.startswith("At") else a) @ (b.T if layout.endswith("Bt") else b)

    names = {"AB": "A B", "AtB": "A^T B", "ABt": "A B^T", "AtBt": "A^T B^T"}
    return Case(f"MM {names[layout]}", f"{n}x{n}x{n}", prog, args, ref, rtol=1e-3, atol=1e-3)


def mriq_case(x: int, k: int, rng: np.random.Generator) -> Case:
    # LIFT's mriq computeQ: (Qr, Qi) of every voxel, summed over the K samples
    vx, vk = Array(Float, x), Array(Float, k)
    prog = fun([vx, vx, vx, vk, vk, vk, vk], lambda xs, ys, zs, kx, ky, kz, phi: map(
        lambda v: reduce(add_pairs, (0.0, 0.0)) << map(lambda s: qfun(v[0], v[1], v[2], s[0], s[1], s[2], s[3]))
        << zip(kx, ky, kz, phi)) << zip(xs, ys, zs))

    def ref(xs, ys, zs, kx, ky, kz, phi):
        qr, qi = np.empty(x, np.float64), np.empty(x, np.float64)
        for lo in range(0, x, 2048):
            arg = 2 * np.pi * (np.outer(xs[lo:lo + 2048], kx) + np.outer(ys[lo:lo + 2048], ky)
                               + np.outer(zs[lo:lo + 2048], kz))
            qr[lo:lo + 2048], qi[lo:lo + 2048] = np.cos(arg) @ phi, np.sin(arg) @ phi
        return qr.astype(np.float32), qi.astype(np.float32)

    def ref32(xs, ys, zs, kx, ky, kz, phi):  # numpy's own float32 spelling, the one timed
        qr, qi = np.empty(x, np.float32), np.empty(x, np.float32)
        for lo in range(0, x, 2048):
            arg = np.float32(2 * np.pi) * (np.outer(xs[lo:lo + 2048], kx) + np.outer(ys[lo:lo + 2048], ky)
                                           + np.outer(zs[lo:lo + 2048], kz))
            qr[lo:lo + 2048], qi[lo:lo + 2048] = np.cos(arg) @ phi, np.sin(arg) @ phi
        return qr, qi

    del ref
    args = tuple(rng.random(x, dtype=np.float32) - 0.5 for _ in range(3)) + tuple(
        (rng.random(k, dtype=np.float32) - 0.5) * 0.5 for _ in range(3)) + (rng.random(k, dtype=np.float32),)
    return Case("MRI-Q", f"X={x}, K={k}", prog, args, ref32, rtol=1e-3, atol=2e-2)


def nbody_case(n: int, rng: np.random.Generator) -> Case:
    # LIFT's nbody (the AMD version): every body's acceleration summed over all bodies, then one step
    v = Array(Float, n)

    def body(xs, ys, zs, ms, vx, vy, vz):
        def one(b):
            acc = reduce(add3, (0.0, 0.0, 0.0)) << map(
                lambda o: accel(b[0], b[1], b[2], o[0], o[1], o[2], o[3])) << zip(xs, ys, zs, ms)
            return update(b[0], b[1], b[2], b[3], b[4], b[5], acc)
        return map(one) << zip(xs, ys, zs, vx, vy, vz)

    prog = fun([v] * 7, body)

    def ref(xs, ys, zs, ms, vx, vy, vz):
        acc = np.zeros((n, 3), np.float32)
        pos = np.stack([xs, ys, zs], 1)
        for lo in range(0, n, 1024):
            r = pos[None, :, :] - pos[lo:lo + 1024, None, :]
            inv = 1 / np.sqrt((r * r).sum(-1) + np.float32(0.005))
            acc[lo:lo + 1024] = ((ms * inv * inv * inv)[..., None] * r).sum(1)
        dt = np.float32(0.005)
        half = np.float32(0.5) * dt * dt
        return tuple(pos[:, d] + v * dt + half * acc[:, d] for d, v in enumerate((vx, vy, vz))) + tuple(
            v + acc[:, d] * dt for d, v in enumerate((vx, vy, vz)))

    args = tuple(rng.random(n, dtype=np.float32) for _ in range(4)) + tuple(
        rng.random(n, dtype=np.float32) - 0.5 for _ in range(3))
    return Case("N-Body", f"{n}", prog, args, ref, rtol=1e-3, atol=1e-2)


def md_case(n: int, m: int, rng: np.random.Generator) -> Case:
    # LIFT's md: the force on every particle from its M neighbours (indices), read through gather
    v = Array(Float, n)
    prog = fun([v, v, v, Array(Array(Int, m), n)], lambda xs, ys, zs, nbrs: map(
        lambda p: reduce(add3, (0.0, 0.0, 0.0)) << map(lambda q: lj(p[0], p[1], p[2], q[0], q[1], q[2]))
        << gather(zip(xs, ys, zs), p[3])) << zip(xs, ys, zs, nbrs))

    def ref(xs, ys, zs, nbrs):
        d = [c[:, None] - c[nbrs] for c in (xs, ys, zs)]
        r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
        r2inv = 1 / r2
        r6inv = r2inv * r2inv * r2inv
        f = np.where(r2 < 16, r2inv * r6inv * (np.float32(1.5) * r6inv - 2), np.float32(0))
        return tuple((c * f).sum(1) for c in d)

    # particles on a jittered cubic lattice of spacing 1.2 (no two closer than ~0.6), neighbours
    # drawn among the nearest indices
    side = round(n ** (1 / 3)) + 1
    grid = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n]
    pos = (grid * 1.2 + (rng.random((n, 3)) - 0.5) * 0.4).astype(np.float32)
    nbrs = ((np.arange(n)[:, None] + rng.integers(1, 4 * m, (n, m))) % n).astype(np.int32)
    args = (pos[:, 0].copy(), pos[:, 1].copy(), pos[:, 2].copy(), nbrs)
    return Case("MD (neighbour list)", f"{n}, M={m}", prog, args, ref, rtol=1e-3, atol=1e-3)


def srad_case(rng: np.random.Generator) -> Case:
    n = 512  # the scale in srad_scale is 1 / 512^2
    prog = fun([Array(Array(Float, n), n)], lambda img: let(
        lambda s: map(map(lambda v: srad_scale(v, s))) << img)
        << (reduce(add_pairs, (0.0, 0.0)) << map(moments) << join << img))

    def ref(img: np.ndarray) -> np.ndarray:
        x = img.astype(np.float64)
        mean = x.sum() / x.size
        return ((x - mean) / ((x * x).sum() / x.size - mean * mean)).astype(np.float32)

    return Case("SRAD statistics (tuple let)", f"{n}x{n}", prog, (rng.random((n, n), dtype=np.float32),), ref)


def argmin_case(n: int, rng: np.random.Generator) -> Case:
    prog = fun([Array(Float, n)], lambda x: get(0) << (reduce(closer, (-1, INF)) << zip(iota(n), x)))
    return Case("arg-min (iota)", f"{n}", prog, (rng.random(n, dtype=np.float32),),
                lambda x: np.int32(np.argmin(x)))
