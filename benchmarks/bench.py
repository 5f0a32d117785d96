"""Kernel time and throughput of every example next to numpy, plus hand-written OpenCL baselines.

    python benchmarks/bench.py [--quick] [--repeat N] [NAME ...]

Not a test: it prints one table. Kernel time is the median of `Program.time` (summed kernel
event times, transfers excluded); numpy time is the median wall time of the same operation.
The ratio is numpy's time over the kernel's (above 1: the kernel is faster). The hand-written
baselines (axpy, dot) are the fast OpenCL kernels of notes/pocl-performance.md, run through
the same runtime; compare the generated kernels to them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import conv  # noqa: E402
import dot  # noqa: E402
import gemv  # noqa: E402
import matmul  # noqa: E402
import stencil2d  # noqa: E402
from _common import Work, close, numpy_seconds  # noqa: E402

import lift  # noqa: E402
import lift.devices  # noqa: E402
from lift.arith import as_arith  # noqa: E402
from lift.plan import BufferSpec, KernelArg, KernelSource, Launch  # noqa: E402
from lift.program import Program  # noqa: E402
from lift.types import Array, Float, Size  # noqa: E402

N = Size("N")
DOT_ITEMS = 256  # work-items of the hand-written dot, each summing a contiguous chunk

# ------------------------------------------------------------------ hand-written baselines

AXPY_SRC = """
kernel void axpy16(global const float* a, global const float* x, global const float* y,
                   global float* out, int N) {
  int i = get_global_id(0);
  float16 xv = ((global const float16*)x)[i];
  float16 yv = ((global const float16*)y)[i];
  ((global float16*)out)[i] = a[0] * xv + yv;
}
"""

DOT_SRC = textwrap.dedent(f"""
    kernel void dot_chunks(global const float* x, global const float* y, global float* part, int N) {{
      int g = get_global_id(0);
      int chunk = N / {DOT_ITEMS} / 16;
      global const float16* xv = (global const float16*)x + g * chunk;
      global const float16* yv = (global const float16*)y + g * chunk;
      float16 acc = (float16)(0.0f);
      for (int i = 0; i < chunk; i++) acc += xv[i] * yv[i];
      float8 s8 = acc.lo + acc.hi;
      float4 s4 = s8.lo + s8.hi;
      float2 s2 = s4.lo + s4.hi;
      part[g] = s2.x + s2.y;
    }}
    kernel void dot_final(global const float* part, global float* out) {{
      float acc = 0.0f;
      for (int i = 0; i < {DOT_ITEMS}; i++) acc += part[i];
      out[0] = acc;
    }}
    """)


def _arg(kind: str, name: str) -> KernelArg:
    return KernelArg(kind, name)


def axpy_plan() -> KernelSource:
    """out = a x + y, 16 floats per work-item (float16 loads through a pointer cast)."""
    bufs = (BufferSpec("a", Float, as_arith(1), role="input", param=0),
            BufferSpec("x", Float, N, role="input", param=1), BufferSpec("y", Float, N, role="input", param=2),
            BufferSpec("out", Float, N, role="output"))
    args = tuple(_arg("buffer", b) for b in ("a", "x", "y", "out")) + (_arg("size", "N"),)
    return KernelSource(AXPY_SRC, ("axpy16",), bufs, (Launch("axpy16", args, (N // 16,)),), ("out",),
                        Array(Float, N), ("N",), (Float, Array(Float, N), Array(Float, N)))


def dot_plan() -> KernelSource:
    """Contiguous float16 chunks per work-item, then a one-work-item final sum."""
    bufs = (BufferSpec("x", Float, N, role="input", param=0), BufferSpec("y", Float, N, role="input", param=1),
            BufferSpec("part", Float, as_arith(DOT_ITEMS)), BufferSpec("out", Float, as_arith(1), role="output"))
    one = (as_arith(1),)
    launches = (Launch("dot_chunks", (_arg("buffer", "x"), _arg("buffer", "y"), _arg("buffer", "part"),
                                      _arg("size", "N")), (as_arith(DOT_ITEMS),)),
                Launch("dot_final", (_arg("buffer", "part"), _arg("buffer", "out")), one, one))
    return KernelSource(DOT_SRC, ("dot_chunks", "dot_final"), bufs, launches, ("out",), Float, ("N",),
                        (Array(Float, N), Array(Float, N)))


# ---------------------------------------------------------------------------- the table


def row(example: str, variant: str, ok: bool | None, seconds: float | None, work: Work, np_seconds: float,
        note: str = "") -> None:
    """One line: kernel time and rate, numpy time and rate, and numpy time / kernel time."""
    verdict = {True: "ok", False: "WRONG", None: "-"}[ok]
    if seconds is None:
        print(f"{example:10s} {variant:34s} {'FAILED':>6s}  {note}")
        return
    print(f"{example:10s} {variant:34s} {verdict:>6s} {seconds * 1e3:10.3f} ms {work.rate(seconds)} "
          f"| numpy {np_seconds * 1e3:9.3f} ms {work.rate(np_seconds)} | x{np_seconds / seconds:6.2f}  {note}")


def measure(make: Callable[[], Program], arrays: tuple, want: Any, repeat: int, rtol: float,
            post: Callable[[Any], Any] = lambda r: r) -> tuple[bool | None, float | None, str]:
    """Build, check and time one program; (correct, seconds, note)."""
    try:
        prog = make()
        ok, _ = close(post(prog(*arrays)), want, rtol, rtol)
        return ok, statistics.median(prog.time(*arrays, repeat=repeat)), ""
    except Exception as e:  # noqa: BLE001 - the table reports failures and goes on
        return None, None, f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"


def bench_example(module: Any, args: tuple, repeat: int) -> None:
    """Every variant of an example module against numpy."""
    arrays = module.inputs(*args)
    ref = getattr(module, "reference", None)
    want, np_fn = _reference(module, arrays, ref)
    work = module.work(*arrays)
    np_seconds = numpy_seconds(np_fn, repeat)
    rtol = 1e-3
    for v in module.variants():
        post = (lambda r: np.reshape(r, ())) if module is dot else (lambda r: r)
        ok, seconds, note = measure(lambda v=v: lift.compile(v.program, **v.compile_kw), arrays, want, repeat,
                                    rtol, post)
        row(module.__name__, v.name, ok, seconds, work, np_seconds, note or v.note)


def _reference(module: Any, arrays: tuple, ref: Callable | None) -> tuple[Any, Callable[[], Any]]:
    if module is dot:
        x, y = arrays
        return np.dot(x.astype(np.float64), y), lambda: np.dot(x, y)
    if module is gemv:
        a, v = arrays
        return a.astype(np.float64) @ v, lambda: a @ v
    if module is matmul:
        a, bt = arrays
        b = np.ascontiguousarray(bt.T)
        return a.astype(np.float64) @ bt.T.astype(np.float64), lambda: a @ b
    assert ref is not None
    return ref(*(x.astype(np.float64) for x in arrays)), lambda: ref(*arrays)


def bench_baselines(log2n: int, repeat: int) -> None:
    """Hand-written OpenCL axpy and dot through the runtime, against numpy."""
    rng = np.random.default_rng(0)
    n = 1 << log2n
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    a = np.float32(1.5)
    work = Work(bytes=3.0 * x.nbytes, flops=2.0 * n)
    ok, seconds, note = measure(lambda: Program(axpy_plan()), (a, x, y), a * x + y, repeat, 1e-6)
    row("axpy", "hand-written OpenCL, float16", ok, seconds, work, numpy_seconds(lambda: a * x + y, repeat), note)
    work = Work(bytes=2.0 * x.nbytes, flops=2.0 * n)
    ok, seconds, note = measure(lambda: Program(dot_plan()), (x, y), np.dot(x.astype(np.float64), y), repeat, 1e-3)
    row("dot", "hand-written OpenCL, float16 chunks", ok, seconds, work, numpy_seconds(lambda: np.dot(x, y), repeat),
        note)


SIZES = {  # full run, --quick run
    "dot": ((24,), (20,)), "gemv": ((4096, 4096), (1024, 1024)), "matmul": ((512, 512, 512), (256, 256, 256)),
    "stencil2d": ((4096, 4096), (1024, 1024)), "conv": ((64, 64, 64), (32, 32, 32)),
}
MODULES = {"dot": dot, "gemv": gemv, "matmul": matmul, "stencil2d": stencil2d, "conv": conv}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"examples to run (default: baselines and {', '.join(MODULES)})")
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args(argv)
    dev = lift.devices.current()
    print(f"liftcl benchmarks on {dev.name} ({dev.platform} {dev.driver_version}, {dev.compute_units} compute units)")
    names = opts.names or ["baselines", *MODULES]
    if "baselines" in names:
        bench_baselines(20 if opts.quick else 24, opts.repeat)
    for name in names:
        if name in MODULES:
            bench_example(MODULES[name], SIZES[name][1 if opts.quick else 0], opts.repeat)


if __name__ == "__main__":
    main()
