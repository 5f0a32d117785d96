"""Kernel and call time and throughput of every example next to numpy, plus hand-written OpenCL baselines.

    python benchmarks/bench.py [--quick] [--repeat N] [NAME ...]
    python benchmarks/bench.py --tune SECONDS [--json OUT] [--only axpy,dot,stencil,gemv,matmul,conv]

Not a test: it prints one table. Kernel time is the median of `Program.time` (summed kernel
event times, transfers excluded); `call` is the median wall time of the call `prog(*arrays)`
(numpy arrays in, numpy arrays out: what a user times), the two timed alternately in the same
rounds (one `Program.time` run and one call per round, each after a warm-up); numpy time is the
median wall time of the same operation. The ratio `x` is numpy's time over the kernel's, `call x`
numpy's time over the call's (above 1: the kernel, the call, is faster). The hand-written
baselines (axpy, dot, gemv) are the fast OpenCL kernels of notes/pocl-performance.md, run
through the same runtime; compare the generated kernels (the examples' "vectorised" variants)
to them: each baseline row is followed by the generated one, at the same size.
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

import axpy  # noqa: E402
import conv  # noqa: E402
import dot  # noqa: E402
import gemv  # noqa: E402
import matmul  # noqa: E402
import stencil2d  # noqa: E402
from _common import Work, call_seconds, close, numpy_seconds  # noqa: E402

import lift  # noqa: E402
import lift.devices  # noqa: E402
from lift.arith import as_arith  # noqa: E402
from lift.plan import BufferSpec, KernelArg, KernelSource, Launch  # noqa: E402
from lift.program import Program  # noqa: E402
from lift.types import Array, Float, Size  # noqa: E402

N = Size("N")
DOT_ITEMS = 256  # work-items of the hand-written dot, each summing a contiguous chunk

# ------------------------------------------------------------------ hand-written baselines
# Vector loads are written `((global float16*)x)[i]`, a cast of the argument itself, the form the
# generated kernels use: the runtime reads numpy's arrays in place (aligned to 16 bytes, not 64)
# and runs the any-alignment variant of such loads (lift.codegen.printer.unaligned_variant); a
# `const` cast, or a vector pointer kept in a variable, would be an aligned load it cannot relax
# (a segfault on a misaligned array).

AXPY_SRC = """
kernel void axpy16(global const float* a, global const float* x, global const float* y,
                   global float* out, int N) {
  int i = get_global_id(0);
  float16 xv = ((global float16*)x)[i];
  float16 yv = ((global float16*)y)[i];
  ((global float16*)out)[i] = a[0] * xv + yv;
}
"""

DOT_SRC = textwrap.dedent(f"""
    kernel void dot_chunks(global const float* x, global const float* y, global float* part, int N) {{
      int g = get_global_id(0);
      int chunk = N / {DOT_ITEMS} / 16;
      int start = g * chunk;
      float16 acc = (float16)(0.0f);
      for (int i = start; i < start + chunk; i++) acc += ((global float16*)x)[i] * ((global float16*)y)[i];
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


GEMV_SRC = """
kernel void gemv8(global const float* a, global const float* v, global float* out, int M, int N) {
  int r = get_global_id(0);
  size_t row = (size_t)r * (N / 8);
  float8 acc = (float8)(0.0f);
  for (int i = 0; i < N / 8; i++) acc += ((global float8*)a)[row + i] * ((global float8*)v)[i];
  float4 s4 = acc.lo + acc.hi;
  float2 s2 = s4.lo + s4.hi;
  out[r] = s2.x + s2.y;
}
"""


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


def gemv_plan() -> KernelSource:
    """A row per work-item read as float8 (aligned pointer casts), a float8 accumulator."""
    m = Size("M")
    bufs = (BufferSpec("a", Float, m * N, role="input", param=0), BufferSpec("v", Float, N, role="input", param=1),
            BufferSpec("out", Float, m, role="output"))
    args = tuple(_arg("buffer", b) for b in ("a", "v", "out")) + (_arg("size", "M"), _arg("size", "N"))
    return KernelSource(GEMV_SRC, ("gemv8",), bufs, (Launch("gemv8", args, (m,)),), ("out",), Array(Float, m),
                        ("M", "N"), (Array(Array(Float, N), m), Array(Float, N)))


# ---------------------------------------------------------------------------- the table


def row(example: str, variant: str, ok: bool | None, seconds: float | None, call_s: float | None, note: str,
        work: Work, np_seconds: float) -> None:
    """One line: kernel time and rate, call time, numpy time and rate, numpy time / kernel time and
    numpy time / call time."""
    verdict = {True: "ok", False: "WRONG", None: "-", "inexact": "~ok"}[ok]
    if seconds is None or call_s is None:
        print(f"{example:10s} {variant:34s} {'FAILED':>6s}  {note}")
        return
    print(f"{example:10s} {variant:34s} {verdict:>6s} {seconds * 1e3:10.3f} ms {work.rate(seconds)} "
          f"| call {call_s * 1e3:10.3f} ms | numpy {np_seconds * 1e3:9.3f} ms {work.rate(np_seconds)} "
          f"| x{np_seconds / seconds:6.2f} call x{np_seconds / call_s:6.2f}  {note}")


def kernel_and_call(prog: Program, arrays: tuple, repeat: int) -> tuple[float, float]:
    """(median kernel seconds, median call seconds) over `repeat` rounds, each round one
    `Program.time` run and one timed call (`call_seconds`), their order alternating by round."""
    kernel: list[float] = []
    call: list[float] = []
    for r in range(repeat):
        for what in (("kernel", "call") if r % 2 == 0 else ("call", "kernel")):
            if what == "kernel":
                kernel.append(prog.time(*arrays, repeat=1)[0])
            else:
                call.append(call_seconds(prog, arrays, 1))
    return statistics.median(kernel), statistics.median(call)


def measure(make: Callable[[], Program], arrays: tuple, want: Any, repeat: int, rtol: float,
            post: Callable[[Any], Any] = lambda r: r, bound: float | None = None
            ) -> tuple[bool | str | None, float | None, float | None, str]:
    """Build, check and time one program; (correct, kernel seconds, call seconds, note). With
    `bound` (a rigorous float32 rounding-error bound), a result outside `rtol` but inside the bound
    is "inexact"."""
    try:
        prog = make()
        got = post(prog(*arrays))
        ok, err = close(got, want, rtol, rtol)
        note = ""
        if not ok and bound is not None and err <= bound:
            ok, note = "inexact", f"float32 rounding: error {err:.3g} within the bound {bound:.3g}"
        return ok, *kernel_and_call(prog, arrays, repeat), note
    except Exception as e:  # noqa: BLE001 - the table reports failures and goes on
        return None, None, None, f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"


def bench_example(module: Any, args: tuple, repeat: int, tune_budget: float = 0.0) -> None:
    """Every variant of an example module against numpy; with a budget, also `lift.tune` of the
    first (high-level) variant, checked and timed like the others."""
    arrays = module.inputs(*args)
    ref = getattr(module, "reference", None)
    want, np_fn = _reference(module, arrays, ref)
    work = module.work(*arrays)
    np_seconds = numpy_seconds(np_fn, repeat)
    rtol = 1e-3
    bound = _sum_error_bound(*arrays) if module is dot else None
    for v in module.variants():
        post = (lambda r: np.reshape(r, ())) if module is dot else (lambda r: r)
        ok, seconds, call_s, note = measure(lambda v=v: lift.compile(v.program, **v.compile_kw), arrays, want,
                                            repeat, rtol, post, bound)
        row(module.__name__, v.name, ok, seconds, call_s, note or v.note, work, np_seconds)
    if tune_budget > 0:
        high = module.variants()[0]
        post = (lambda r: np.reshape(r, ())) if module is dot else (lambda r: r)

        def tuned() -> Program:
            return lift.tune(high.program, *arrays, budget=tune_budget, db=False, progress=False).best

        ok, seconds, call_s, note = measure(tuned, arrays, want, repeat, rtol, post, bound)
        row(module.__name__, f"lift.tune of the high-level ({tune_budget:g} s)", ok, seconds, call_s, note, work,
            np_seconds)


def _sum_error_bound(x: np.ndarray, y: np.ndarray) -> float:
    """Higham's bound for a recursive float32 sum of products: (n + 1) u sum |x_i y_i|."""
    u = 2.0 ** -24
    return (len(x) + 1) * u * float(np.abs(x.astype(np.float64) * y).sum())


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


def bench_baselines(log2n: int, rows: int, repeat: int) -> None:
    """Hand-written OpenCL axpy, dot and gemv through the runtime, each followed by the generated
    vectorised variant of its example at the same size, against numpy."""
    rng = np.random.default_rng(0)
    n = 1 << log2n
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    a = np.float32(1.5)
    work, np_s = Work(bytes=3.0 * x.nbytes, flops=2.0 * n), numpy_seconds(lambda: a * x + y, repeat)
    want = np.float64(a) * x + y
    row("axpy", "hand-written OpenCL, float16", *measure(lambda: Program(axpy_plan()), (a, x, y), want, repeat, 1e-5),
        work, np_s)
    _generated("axpy", axpy.vectorised(), (a, x, y), want, work, np_s, repeat)
    work, np_s = Work(bytes=2.0 * x.nbytes, flops=2.0 * n), numpy_seconds(lambda: np.dot(x, y), repeat)
    want = np.dot(x.astype(np.float64), y)
    row("dot", "hand-written OpenCL, float16 chunks", *measure(lambda: Program(dot_plan()), (x, y), want, repeat, 1e-3),
        work, np_s)
    _generated("dot", dot.vectorised(), (x, y), want, work, np_s, repeat)
    m, v = gemv.inputs(rows, rows)
    work, np_s = gemv.work(m, v), numpy_seconds(lambda: m @ v, repeat)
    want = m.astype(np.float64) @ v
    row("gemv", "hand-written OpenCL, float8 rows", *measure(lambda: Program(gemv_plan()), (m, v), want, repeat, 1e-3),
        work, np_s)
    _generated("gemv", gemv.vectorised(), (m, v), want, work, np_s, repeat)


def _generated(name: str, program: Any, arrays: tuple, want: Any, work: Work, np_s: float, repeat: int) -> None:
    ok, seconds, call_s, note = measure(lambda: lift.compile(program), arrays, want, repeat, 1e-3,
                                        lambda r: np.reshape(r, np.shape(want)))
    row(name, "generated, vectorised (float8)", ok, seconds, call_s, note, work, np_s)


SIZES = {  # full run, --quick run
    "axpy": ((24,), (22,)), "dot": ((24,), (22,)), "gemv": ((4096, 4096), (2048, 2048)),
    "matmul": ((512, 512, 512), (256, 256, 256)),
    "stencil2d": ((4096, 4096), (1024, 1024)), "conv": ((64, 64, 64), (32, 32, 32)),
}
MODULES = {"axpy": axpy, "dot": dot, "gemv": gemv, "matmul": matmul, "stencil2d": stencil2d, "conv": conv}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"examples to run (default: baselines and {', '.join(MODULES)})")
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tune", type=float, default=0.0, metavar="SECONDS",
                        help="the summary table: numpy, best hand-written, liftcl default and liftcl "
                             "tuned for SECONDS per kernel (benchmarks/summary.py)")
    parser.add_argument("--json", metavar="OUT", help="with --tune: also write the table as JSON")
    parser.add_argument("--only", metavar="NAMES",
                        help="with --tune: a comma-separated subset of kernels (else the NAMES given)")
    opts = parser.parse_args(argv)
    if opts.tune <= 0 and (opts.json or opts.only):
        parser.error("--json and --only go with --tune (they are options of the summary table)")
    if opts.tune > 0:
        import summary

        only = opts.only.split(",") if opts.only else opts.names or None
        known = {k.name for k in summary.kernels(opts.quick)}
        if only and not set(only) <= known:
            parser.error(f"unknown kernels {sorted(set(only) - known)}; the summary has {sorted(known)}")
        summary.run(opts.tune, opts.quick, opts.repeat, only, opts.json)
        return
    dev = lift.devices.current()
    print(f"liftcl benchmarks on {dev.name} ({dev.platform} {dev.driver_version}, {dev.compute_units} compute units)")
    print(f"device facts: {lift.devices.facts.summary(dev)}")
    names = opts.names or ["baselines", *MODULES]
    if "baselines" in names:
        bench_baselines(22 if opts.quick else 24, 2048 if opts.quick else 4096, opts.repeat)
    for name in names:
        if name in MODULES:
            bench_example(MODULES[name], SIZES[name][1 if opts.quick else 0], opts.repeat, opts.tune)


if __name__ == "__main__":
    main()
