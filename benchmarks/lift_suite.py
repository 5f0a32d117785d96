"""Programs of LIFT's own benchmark suite (CGO 2017, CGO 2018 stencils) written as a liftcl user
writes them, each against numpy: kernel time and call time, medians.

    python benchmarks/lift_suite.py [--large] [--repeat N] [NAME ...]

Not a test: it prints one table. Every program is compiled with the default `lift.compile` and
checked against its numpy reference first. Kernel time is the median of `Program.time` (summed
kernel event times, transfers excluded); call time the median wall time of `Program.__call__`
(arguments in, result out); numpy time the median wall time of the numpy reference. Each round
sleeps 0.4 s (numpy's BLAS threads stop spinning), then times the kernel, the call and numpy in
turn, each warm: untimed runs for 3 ms, then the median of three (timed once after an idle pause,
a call pays for waking PoCL's worker threads, 0.5-0.8 ms on a 2-core VM, and numpy for waking
its BLAS threads; and the VM's first 2-3 runs of anything after the pause are 1.5-2x slow).
Kernels are timed one run at a time (`Program.time`), as calls run. The ratios
are numpy's time over liftcl's (above 1: liftcl is faster).

The programs (examples/lift_suite/: `cgo17`, `stencils`, each with its numpy reference): CGO 2017's
N-Body, molecular dynamics over a neighbour list (`gather`), K-Means' assignment step (a fold over
`zip(iota(K), ..)`), nearest neighbour, MRI-Q (sin and cos per voxel per sample), GEMV, ATAX
(`A^T (A x)`), GESUMMV, matrix multiplication in LIFT's four layouts, SRAD's statistics (a
tuple-valued reduction bound by `let`) and an arg-min over `iota`; CGO 2018's Rodinia hotspot,
hotspot3D and SRAD's two stencils (clamped through `pad_nd(mode="clamp")`), SHOC's 2-D stencil,
acoustic, PPCG's jacobi 2-D 5/9-point, gaussian 5x5, grad2d, heat3d, poisson3d and jacobi 3-D
7/13/19/27-point, and CGO 2017's separable convolution (17 taps, a row pass then a column pass
through `transpose`). Sizes: LIFT's small ones by default where this 2-core machine allows (2-D
stencils 1024^2, 3-D 128^3, MM 1024^3), `--large` for the large ones (4096^2, 256^3, 2048^3,
N-Body 16K, MD 73728).
"""

from __future__ import annotations

import argparse
import builtins
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from _common import close  # noqa: E402
from lift_suite import entries, make  # noqa: E402
from lift_suite.case import Case  # noqa: E402

import lift  # noqa: E402
import lift.devices  # noqa: E402
import lift.devices.facts  # noqa: E402

# ------------------------------------------------------------------ timing


SETTLE = 0.4  # seconds for numpy's BLAS threads to stop spinning before a kernel is timed
BURST = 3  # timed runs of each contender per round, after `WARM` (their median is the round's)
WARM = 0.003  # seconds of untimed runs before each contender's timed ones


def _checked(got: Any, want: Any, case: Case) -> tuple[bool, float]:
    """`close` of a result (a tuple of arrays for a program returning tuples) with the case's tolerance."""
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            return False, math.inf
        found = [close(g, w, rtol=case.rtol, atol=case.atol) for g, w in builtins.zip(got, want)]
        return all(ok for ok, _ in found), max(err for _, err in found)
    return close(got, want, rtol=case.rtol, atol=case.atol)


def _call_once(prog: Any, args: tuple) -> float:
    start = time.perf_counter()
    result = prog(*args)
    del result
    return time.perf_counter() - start


def _warm(once: Callable[[], Any]) -> None:
    """Run `once` untimed for at least `WARM` seconds (at least once): after the settling pause the
    VM's first 2-3 runs of anything are 1.5-2x slow (GEMV 2048^2: kernel 0.81, 0.42, 0.38 ms...)."""
    start = time.perf_counter()
    once()
    while time.perf_counter() - start < WARM:
        once()


def _burst(once: Callable[[], float]) -> float:
    """The median of `BURST` timings of `once`, warmed first (`_warm`): a contender timed warm,
    as a loop of calls runs it (PoCL's worker threads and numpy's BLAS threads awake)."""
    _warm(once)
    return statistics.median(once() for _ in range(BURST))


def _numpy_once(case: Case) -> float:
    start = time.perf_counter()
    case.numpy(*case.inputs)
    return time.perf_counter() - start


def run(case: Case, repeat: int) -> str:
    """One row: compile, check against numpy, then `repeat` rounds of (kernel, call, numpy): each
    round waits for numpy's BLAS threads to settle, then times each contender warm (`_burst`);
    medians of the rounds."""
    want = case.numpy(*case.inputs)
    start = time.perf_counter()
    try:
        prog = lift.compile(case.program)
        compile_s = time.perf_counter() - start
        ok, err = _checked(prog(*case.inputs), want, case)
        kernels, calls, refs = [], [], []
        prog.time(*case.inputs, repeat=1)
        for _ in range(repeat):
            time.sleep(SETTLE)
            _warm(lambda: prog.time(*case.inputs, repeat=1))
            kernels.append(statistics.median(prog.time(*case.inputs, repeat=BURST)))
            calls.append(_burst(lambda: _call_once(prog, case.inputs)))
            refs.append(_burst(lambda: _numpy_once(case)))
    except Exception as e:  # noqa: BLE001 - the table reports every failure and goes on
        return f"{case.name:28s} {case.size:18s} FAILED: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
    kernel, call, ref = (statistics.median(v) for v in (kernels, calls, refs))
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
    return f"{entries(a.large)[index][0]:47s} FAILED: the process died: {why.strip()[:90]}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--large", action="store_true", help="LIFT's large sizes")
    ap.add_argument("--repeat", type=int, default=7, help="timed rounds per program (medians)")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # one case, in this process
    ap.add_argument("names", nargs="*", help="run only the programs whose name contains one of these")
    a = ap.parse_args(argv)
    if a.one is not None:
        print(run(make(a.one, a.large), a.repeat), flush=True)
        return 0
    print(f"LIFT suite; medians of {a.repeat} interleaved rounds; ratios: numpy / liftcl")
    dev = lift.devices.current()
    print(f"{dev.name}, {dev.platform_version}; {lift.devices.facts.summary(dev)}")
    print(f"{'program':28s} {'size':18s} {'check':6s} {'compile':8s} {'kernel ms':>9s} {'call ms':>9s} "
          f"{'numpy ms':>9s} {'kernel':>8s} {'call':>8s}")
    for i, (name, _) in enumerate(entries(a.large)):
        if a.names and not any(w.lower() in name.lower() for w in a.names):
            continue
        print(isolated(i, a), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
