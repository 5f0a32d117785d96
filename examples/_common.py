"""Shared helpers of the example scripts and benchmarks: check against numpy, time (the kernel, the
call, numpy), print one line per variant."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import lift
import lift.devices


@dataclass(frozen=True)
class Variant:
    """One way of writing an example: a program and the sizes it needs."""

    name: str
    program: Any  # a lift Lambda
    note: str = ""
    compile_kw: dict = field(default_factory=dict)  # e.g. local_size for map_wrg/map_lcl programs


@dataclass(frozen=True)
class Work:
    """How much an example does, for throughput: bytes moved and floating-point operations."""

    bytes: float
    flops: float
    metric: str = "GB/s"  # or "GFLOP/s"

    def rate(self, seconds: float) -> str:
        """The throughput in this example's metric."""
        amount = self.flops if self.metric == "GFLOP/s" else self.bytes
        return f"{amount / seconds / 1e9:8.2f} {self.metric}"


def close(got: Any, want: Any, rtol: float = 1e-4, atol: float = 1e-4) -> tuple[bool, float]:
    """Whether `got` matches `want` and the largest absolute error."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return False, float("inf")
    err = float(np.max(np.abs(got - want))) if got.size else 0.0
    return bool(np.allclose(got, want, rtol=rtol, atol=atol)), err


# After a call, numpy's BLAS threads spin for ~0.14 s before they sleep (measured with
# time.process_time around a sleep on the 2-core Zen 1 VM): OpenCL kernels timed in that window
# ran at half speed (the conv layer's 4.7 ms kernels at 9 ms right after numpy's im2col + GEMM).
NUMPY_SETTLE = 0.3


def settle_blas() -> None:
    """Wait until numpy's BLAS threads stop spinning, before an OpenCL kernel is timed."""
    time.sleep(NUMPY_SETTLE)


def numpy_seconds(fn: Callable[[], Any], repeat: int = 5) -> float:
    """Median wall time of `fn()` after one warm-up; returns after its BLAS threads have settled
    (`settle_blas`), so a kernel timed next does not share the cores with them."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    settle_blas()
    return statistics.median(times)


def call_seconds(prog: Any, arrays: tuple, repeat: int = 5) -> float:
    """Median wall time of the call `prog(*arrays)` (numpy arrays in, numpy arrays out: what a user
    times, argument handling, launches and the result included) over `repeat` runs after one
    warm-up call. `prog` is a `lift.Program` (a tuned one, `lift.tune(...).best`, is called alike)."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat!r}")
    prog(*arrays)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        result = prog(*arrays)  # kept until the clock stops, as `y = prog(a, b)` keeps it
        times.append(time.perf_counter() - start)
        del result
    return statistics.median(times)


def run_variant(v: Variant, arrays: tuple, want: Any, work: Work, *, repeat: int = 3,
                rtol: float = 1e-4, atol: float = 1e-4, post: Callable[[Any], Any] = lambda r: r) -> bool:
    """Compile, check against numpy and time one variant; print one line; True when correct."""
    try:
        prog = lift.compile(v.program, **v.compile_kw)
        ok, err = close(post(prog(*arrays)), want, rtol, atol)
        seconds = statistics.median(prog.time(*arrays, repeat=repeat))
    except Exception as e:  # noqa: BLE001 - an example reports every failure and goes on
        print(f"  {v.name:28s} FAILED: {type(e).__name__}: {str(e).splitlines()[0]}")
        return False
    verdict = "ok" if ok else f"WRONG (max error {err:.3g})"
    print(f"  {v.name:28s} {verdict:6s} {seconds * 1e3:9.3f} ms {work.rate(seconds)}  {v.note}")
    return ok


def run_example(title: str, variants: list[Variant], arrays: tuple, want: Any, work: Work,
                numpy_fn: Callable[[], Any], **kw: Any) -> bool:
    """Run every variant and numpy; print a small table; True when all variants are correct."""
    print(f"{title} on {lift.devices.current().name}")
    results = [run_variant(v, arrays, want, work, **kw) for v in variants]
    seconds = numpy_seconds(numpy_fn)
    print(f"  {'numpy':28s} {'ref':6s} {seconds * 1e3:9.3f} ms {work.rate(seconds)}")
    return all(results)
