"""What a user times: the call `y = k(a, b)` from numpy arrays in to a numpy array out, beside
the kernel time (`Program.time`: summed kernel events), numpy, and the floor of a bare pyopencl
launch of the same kernel; then a chain of programs on device arrays against its kernels.

    python benchmarks/calls.py [--rounds R] [--quick]

Not a test: it prints tables. Every row's contenders are timed interleaved, round after round
(numpy, the call, the kernel; their order rotated each round), and each column is the median
over the rounds of the per-round medians; numpy's BLAS threads settle before each kernel.
The columns: call ms (the same arrays each time: the call replays the last one), new arr ms (new
array objects on the same memory each time, as a user making arrays per call: worked out
afresh), call / kernel (1.0: the call costs what its kernels cost) and numpy / call (above 1: the
user's call is faster than numpy's).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import axpy  # noqa: E402
import matmul  # noqa: E402
from _common import settle_blas  # noqa: E402

import lift  # noqa: E402
from lift import Array, Float, Size, fun, map, pad, reduce, slide, zip  # noqa: E402

N = Size("N")


def dot_program() -> Any:
    return fun([Array(Float, N), Array(Float, N)], lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y))


def stencil_program() -> Any:
    """A 3-point average with zero boundaries: map(sum / 3) << slide(3, 1) << pad(1, 1, 0)."""
    return fun([Array(Float, N)], lambda x: map(lambda w: (reduce(lift.add, 0.0) << w) * (1.0 / 3.0))
               << slide(3, 1) << pad(1, 1, 0.0) << x)


def stencil_numpy(x: np.ndarray) -> np.ndarray:
    p = np.pad(x, 1)
    return (p[:-2] + p[1:-1] + p[2:]) * np.float32(1.0 / 3.0)


def wall(fn: Callable[[], Any], repeat: int) -> float:
    """Median wall seconds of `fn()` over `repeat` runs."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bare_launch(prog: lift.Program, arrays: tuple, repeat: int) -> float:
    """The floor: the program's kernels enqueued on buffers made beforehand, then a finish
    (plain pyopencl: no argument handling, no allocation, no result)."""
    import pyopencl as cl

    lane = prog._lane()
    leaves, key = prog._signature(arrays)
    shape = prog._planned(arrays, key)
    runner = shape.program
    lane = runner._lane()
    bufs, held, _, misaligned, _ = runner._bind_inputs(lane, shape, leaves)
    for name, _, _, nbytes in shape.outputs:
        bufs[name] = lane.pool.get(name, nbytes)
    kernels = runner._relaxed_kernels(lane) if misaligned else lane.kernels
    launches = []
    for kernel, gsize, lsize, args in shape.launches:
        k = kernels[kernel]
        k.set_args(*[bufs[a] if type(a) is str else a for a in args])
        lane.args.pop(id(k), None)  # what the program's calls last set is gone: their next call sets it again
        launches.append((k, gsize, lsize))
    queue = lane.dc.queue

    def run() -> None:
        for k, gsize, lsize in launches:
            cl.enqueue_nd_range_kernel(queue, k, gsize, lsize)
        queue.finish()

    run()
    out = wall(run, repeat)
    del held
    return out


def fresh_views(arrays: tuple) -> list[Any]:
    """New array objects on the same memory (`a[...]`): a call on them is worked out as a call on
    arrays it has not seen (no replay of the last call, new in-place buffers for large ones)."""
    return [a[...] if isinstance(a, np.ndarray) else a for a in arrays]


def row(name: str, prog: lift.Program, arrays: tuple, ref: Callable[[], Any], rounds: int, repeat: int,
        floor: bool = False) -> dict[str, float]:
    """Interleaved rounds of numpy, the call and the kernel (and the bare launch); medians."""
    got, want = prog(*arrays), ref()
    if not np.allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=2e-3, atol=1e-3):
        raise SystemExit(f"{name}: the call's result differs from numpy's")
    contenders: dict[str, Callable[[], float]] = {
        "numpy": lambda: wall(ref, repeat),
        "call": lambda: wall(lambda: prog(*arrays), repeat),
        "new": lambda: wall(lambda: prog(*fresh_views(arrays)), repeat),
        "kernel": lambda: statistics.median(prog.time(*arrays, repeat=repeat)),
    }
    if floor:
        contenders["bare"] = lambda: bare_launch(prog, arrays, repeat)
    seen: dict[str, list[float]] = {k: [] for k in contenders}
    order = list(contenders)
    for r in range(rounds):
        for what in order[r % len(order):] + order[:r % len(order)]:
            if what != "numpy":
                settle_blas()
            seen[what].append(contenders[what]())
    got = prog(*arrays)  # after the rounds (replays, bare launches, timings between the calls): still right
    if not np.allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=2e-3, atol=1e-3):
        raise SystemExit(f"{name}: after the rounds, the call's result differs from numpy's")
    return {k: statistics.median(v) for k, v in seen.items()}


def chain(rounds: int, n: int, steps: int = 10) -> tuple[float, float, float]:
    """(seconds of `steps` stencil programs chained on device arrays and read once, the sum of
    their kernels, numpy's seconds for the same steps)."""
    prog = lift.compile(stencil_program())
    x = np.random.default_rng(1).random(n, dtype=np.float32)

    def chained() -> np.ndarray:
        d = prog(x, keep=True, sync=False)
        for _ in range(steps - 1):
            d = prog(d, sync=False)
        return np.asarray(d)

    def numpy_steps() -> np.ndarray:
        y = x
        for _ in range(steps):
            y = stencil_numpy(y)
        return y

    if not np.allclose(chained(), numpy_steps(), rtol=1e-4, atol=1e-5):
        raise SystemExit("chain: the result differs from numpy's")
    calls, kernels, numpys = [], [], []
    d = lift.to_device(x)
    for _ in range(rounds):
        settle_blas()
        calls.append(wall(chained, 3))
        kernels.append(steps * statistics.median(prog.time(d, repeat=3)))
        numpys.append(wall(numpy_steps, 3))
    return statistics.median(calls), statistics.median(kernels), statistics.median(numpys)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds per row (default 7)")
    parser.add_argument("--quick", action="store_true", help="2^20 instead of 2^24 elements, matmul 512^3")
    args = parser.parse_args(argv)
    big = 20 if args.quick else 24
    msize = 512 if args.quick else 1024
    rng = np.random.default_rng(0)
    dev = lift.devices.current()
    print(f"device: {dev.name} ({dev.platform_version or dev.version}); zero copy: "
          f"{lift.runtime.open_device().zero_copy}; rounds: {args.rounds}")
    n = 1 << big
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    a = np.float32(1.5)
    small_x, small_y = x[:1 << 10].copy(), y[:1 << 10].copy()
    am, bm = matmul.inputs(msize, msize, msize)
    b_rows = np.ascontiguousarray(bm.T)
    cases = [
        (f"axpy (user function) 2^{big}", lift.compile(axpy.high_level()), (a, x, y), lambda: a * x + y, 5, False),
        (f"dot 2^{big}", lift.compile(dot_program()), (x, y), lambda: np.dot(x, y), 5, False),
        (f"3-point stencil (pad, slide) 2^{big}", lift.compile(stencil_program()), (x,), lambda: stencil_numpy(x),
         5, False),
        (f"matmul {msize}^3", lift.compile(matmul.variants()[0].program), (am, bm), lambda: am @ b_rows, 3, False),
        ("dot 2^10", lift.compile(dot_program()), (small_x, small_y), lambda: np.dot(small_x, small_y), 200, True),
        ("axpy 2^10", lift.compile(axpy.high_level()), (a, small_x, small_y), lambda: a * small_x + small_y, 200,
         True),
    ]
    print(f"\n{'program':38s} {'call ms':>10s} {'new arr ms':>10s} {'kernel ms':>10s} {'numpy ms':>10s} "
          f"{'call/kernel':>12s} {'numpy/call':>11s} {'numpy/kernel':>13s} {'bare ms':>9s} {'call/bare':>10s}")
    for name, prog, arrays, ref, repeat, floor in cases:
        m = row(name, prog, arrays, ref, args.rounds, repeat, floor)
        bare = f"{m['bare'] * 1e3:9.4f} {m['call'] / m['bare']:10.2f}" if "bare" in m else ""
        print(f"{name:38s} {m['call'] * 1e3:10.4f} {m['new'] * 1e3:10.4f} {m['kernel'] * 1e3:10.4f} "
              f"{m['numpy'] * 1e3:10.4f} {m['call'] / m['kernel']:12.2f} {m['numpy'] / m['call']:11.2f} "
              f"{m['numpy'] / m['kernel']:13.2f} {bare}", flush=True)
    calls, kernels, numpys = chain(args.rounds, n)
    print(f"\nchain of 10 stencil programs on device arrays, 2^{big}: {calls * 1e3:.3f} ms, their kernels "
          f"{kernels * 1e3:.3f} ms (x{calls / kernels:.2f}), numpy {numpys * 1e3:.3f} ms (numpy/chain "
          f"x{numpys / calls:.2f})")


if __name__ == "__main__":
    main()
