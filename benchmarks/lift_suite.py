"""Programs of LIFT's own benchmark suite (CGO 2017, CGO 2018 stencils) written as a liftcl user
writes them, each against numpy: kernel time and call time, medians.

    python benchmarks/lift_suite.py [--large] [--repeat N] [NAME ...]

Not a test: it prints one table. Every program is compiled with the default `lift.compile` and
checked against its numpy reference first. Kernel time is the median of `Program.time` (summed
kernel event times, transfers excluded); call time the median wall time of `Program.__call__`
(arguments in, result out); numpy time the median wall time of the numpy reference. The ratios
are numpy's time over liftcl's (above 1: liftcl is faster).

The programs: Rodinia's hotspot (one step, neighbours read through `pad_nd(mode="clamp")`), a
jacobi 2-D 5-point stencil (clamped), K-Means' assignment step (the distances to every centroid
folded to the nearest over `zip(iota(K), ..)`), nearest neighbour (the distance of every record
to a target), GEMV, GESUMMV (`alpha A x + beta B x`), SRAD's statistics (a tuple-valued reduction
bound by `let`, then every pixel scaled by them) and an arg-min (a fold over `zip(iota(N), x)`).
Sizes: LIFT's small ones by default, `--large` for its large ones where memory allows.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from _common import close, numpy_seconds  # noqa: E402

import lift  # noqa: E402
import lift.devices  # noqa: E402
from lift import (  # noqa: E402
    Array,
    Float,
    Int,
    Tuple,
    fun,
    get,
    iota,
    join,
    let,
    map,
    pad_nd,
    reduce,
    select,
    slide_nd,
    user_fun,
    zip,
)

INF = float("inf")

# ------------------------------------------------------------------ user functions


def _hotspot(t, n, s, e, w, p):
    # Rodinia hotspot: step/cap * (power + (N + S - 2T) / Ry + (E + W - 2T) / Rx + (amb - T) / Rz)
    return t + 1.3 * (p + (n + s - 2.0 * t) * 0.1 + (e + w - 2.0 * t) * 0.1 + (80.0 - t) * 0.0005)


def _jacobi(c, n, s, e, w):
    return 0.2 * (c + n + s + e + w)


def _closer(a, b):
    return select(b[1] < a[1], b, a)


def _sqdiff(a, b):
    return (a - b) * (a - b)


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


def _smaller(a, b):
    return select(b[1] < a[1], b, a)


hotspot = user_fun(_hotspot, [Float] * 6, Float, name="hotspot")
jacobi = user_fun(_jacobi, [Float] * 5, Float, name="jacobi")
closer = user_fun(_closer, [Tuple(Int, Float)] * 2, Tuple(Int, Float), name="closer")
smaller = user_fun(_smaller, [Tuple(Int, Float)] * 2, Tuple(Int, Float), name="smaller")
sqdiff = user_fun(_sqdiff, [Float, Float], Float, name="sqdiff")
distance = user_fun(_distance, [Float, Float], Float, name="record_distance")
gesummv_out = user_fun(_gesummv, [Float, Float], Float, name="gesummv_out")
moments = user_fun(_moments, [Float], Tuple(Float, Float), name="moments")
add_pairs = user_fun(_add_pairs, [Tuple(Float, Float)] * 2, Tuple(Float, Float), name="add_pairs")
srad_scale = user_fun(_srad_scale, [Float, Tuple(Float, Float)], Float, name="srad_scale")


def _dot(a: Any, b: Any) -> Any:
    return reduce(lift.add, 0.0) << map(lift.mult) << zip(a, b)


# ------------------------------------------------------------------ programs and references


@dataclass(frozen=True)
class Case:
    name: str
    size: str
    program: Any
    inputs: tuple
    numpy: Callable[..., Any]


def hotspot_case(n: int, rng: np.random.Generator) -> Case:
    def body(temp: Any, power: Any) -> Any:
        windows = slide_nd(2, 3, 1) << pad_nd(2, 1, 1, mode="clamp") << temp
        return map(lambda rows: map(lambda q: hotspot(q[0][1][1], q[0][0][1], q[0][2][1], q[0][1][2], q[0][1][0], q[1]))
                   << zip(rows[0], rows[1])) << zip(windows, power)

    prog = fun([Array(Array(Float, n), n), Array(Array(Float, n), n)], body)

    def ref(t: np.ndarray, p: np.ndarray) -> np.ndarray:
        q = np.pad(t, 1, mode="edge")
        no, so, we, ea = q[:-2, 1:-1], q[2:, 1:-1], q[1:-1, :-2], q[1:-1, 2:]
        return t + 1.3 * (p + (no + so - 2.0 * t) * 0.1 + (ea + we - 2.0 * t) * 0.1 + (80.0 - t) * 0.0005)

    args = (rng.random((n, n), dtype=np.float32) * 10 + 320, rng.random((n, n), dtype=np.float32))
    return Case("hotspot (clamp)", f"{n}x{n}", prog, args, ref)


def jacobi_case(n: int, rng: np.random.Generator) -> Case:
    prog = fun([Array(Array(Float, n), n)], lambda a: map(map(
        lambda w: jacobi(w[1][1], w[0][1], w[2][1], w[1][2], w[1][0]))) << slide_nd(2, 3, 1)
        << pad_nd(2, 1, 1, mode="clamp") << a)

    def ref(a: np.ndarray) -> np.ndarray:
        q = np.pad(a, 1, mode="edge")
        return 0.2 * (a + q[:-2, 1:-1] + q[2:, 1:-1] + q[1:-1, 2:] + q[1:-1, :-2])

    return Case("jacobi 2-D 5-point (clamp)", f"{n}x{n}", prog, (rng.random((n, n), dtype=np.float32),), ref)


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
    prog = fun([Array(Array(Float, n), n), Array(Float, n)], lambda a, x: map(lambda r: _dot(r, x)) << a)
    args = (rng.random((n, n), dtype=np.float32) - 0.5, rng.random(n, dtype=np.float32) - 0.5)
    return Case("GEMV", f"{n}x{n}", prog, args, lambda a, x: a @ x)


def gesummv_case(n: int, rng: np.random.Generator) -> Case:
    prog = fun([Array(Array(Float, n), n), Array(Array(Float, n), n), Array(Float, n)], lambda a, b, x: map(
        lambda rows: gesummv_out(_dot(rows[0], x), _dot(rows[1], x))) << zip(a, b))
    args = (rng.random((n, n), dtype=np.float32) - 0.5, rng.random((n, n), dtype=np.float32) - 0.5,
            rng.random(n, dtype=np.float32) - 0.5)
    return Case("GESUMMV", f"{n}x{n}", prog, args, lambda a, b, x: 1.5 * (a @ x) + 1.2 * (b @ x))


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
    prog = fun([Array(Float, n)], lambda x: get(0) << (reduce(smaller, (-1, INF)) << zip(iota(n), x)))
    return Case("arg-min (iota)", f"{n}", prog, (rng.random(n, dtype=np.float32),),
                lambda x: np.int32(np.argmin(x)))


def cases(large: bool) -> list[Case]:
    rng = np.random.default_rng(41)
    if large:
        return [hotspot_case(4096, rng), jacobi_case(4096, rng), kmeans_case(1 << 20, 5, 34, rng),
                nn_case(1 << 24, rng), gemv_case(8192, rng), gesummv_case(4096, rng), srad_case(rng),
                argmin_case(1 << 24, rng)]
    return [hotspot_case(512, rng), jacobi_case(1024, rng), kmeans_case(16384, 5, 34, rng), nn_case(1 << 20, rng),
            gemv_case(2048, rng), gesummv_case(2048, rng), srad_case(rng), argmin_case(1 << 20, rng)]


# ------------------------------------------------------------------ timing


def call_seconds(prog: Any, args: tuple, repeat: int) -> float:
    """Median wall time of `prog(*args)` (Program.__call__) after one warm-up."""
    prog(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        prog(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(case: Case, repeat: int) -> str:
    want = case.numpy(*case.inputs)
    start = time.perf_counter()
    try:
        prog = lift.compile(case.program)
        compile_s = time.perf_counter() - start
        got = prog(*case.inputs)
        ok, err = close(got, want, rtol=1e-3, atol=1e-3)
        kernel = statistics.median(prog.time(*case.inputs, repeat=repeat))
        call = call_seconds(prog, case.inputs, repeat)
    except Exception as e:  # noqa: BLE001 - the table reports every failure and goes on
        return f"{case.name:28s} {case.size:18s} FAILED: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
    ref = numpy_seconds(lambda: case.numpy(*case.inputs), repeat=repeat)
    verdict = "ok" if ok else f"WRONG({err:.2g})"
    return (f"{case.name:28s} {case.size:18s} {verdict:6s} {compile_s:6.1f} s {kernel * 1e3:9.3f} {call * 1e3:9.3f} "
            f"{ref * 1e3:9.3f} {ref / kernel:7.2f}x {ref / call:7.2f}x")


def isolated(index: int, a: argparse.Namespace) -> str:
    """`run` of case `index` in a process of its own: an OpenCL compiler that aborts the process
    (PoCL 3.0's LLVM on float16 sqrt, "Cannot select: fsqrt") fails one row, not the table."""
    cmd = [sys.executable, __file__, "--one", str(index), "--repeat", str(a.repeat)] + (["--large"] if a.large else [])
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    rows = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode == 0 and rows:
        return rows[-1]
    why = next((line for line in reversed(done.stderr.splitlines()) if "ERROR" in line or "Error" in line),
               f"exit status {done.returncode}")
    case = cases(a.large)[index]
    return f"{case.name:28s} {case.size:18s} FAILED: the process died: {why.strip()[:90]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--large", action="store_true", help="LIFT's large sizes")
    ap.add_argument("--repeat", type=int, default=7, help="timed runs per measurement (medians)")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # one case, in this process
    ap.add_argument("names", nargs="*", help="run only the programs whose name contains one of these")
    a = ap.parse_args(argv)
    if a.one is not None:
        print(run(cases(a.large)[a.one], a.repeat), flush=True)
        return 0
    print(f"LIFT suite on {lift.devices.current().name}; medians of {a.repeat} runs; ratios: numpy / liftcl")
    print(f"{'program':28s} {'size':18s} {'check':6s} {'compile':8s} {'kernel ms':>9s} {'call ms':>9s} "
          f"{'numpy ms':>9s} {'kernel':>8s} {'call':>8s}")
    for i, case in enumerate(cases(a.large)):
        if a.names and not any(s.lower() in case.name.lower() for s in a.names):
            continue
        print(isolated(i, a), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
