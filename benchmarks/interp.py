"""The interpreter (the oracle) next to numpy: how long `lift.interpret` takes at real sizes.

    python benchmarks/interp.py [--repeat N] [--best] [--precise] [--quick] [--tune SECONDS] [NAME ...]

Not a test: it prints one table. For every case, interpret and numpy run interleaved, `repeat`
times each (cases that interpret in over 5 s once), and the medians are shown with their ratio
(interpret time over numpy time); `--best`: the minima instead (on a shared machine, the runs that
got the cores they asked for; numpy's two-thread BLAS suffers most from the others' load).
`--precise` adds a column for `interpret(..., precise=True)`, the float64 reference that tuning and
kernel checks compare against. `--tune S` runs `lift.tune` of the high-level matmul at 256^3 with a
budget of S seconds and prints how long its reference (the float32 and the float64 interpretation)
took and how many candidates it tried. Each result is checked against numpy in float64, within
Higham's bound for a recursive float32 sum of n products, (n + 1) u sum |x_i y_i| (u = 2^-24), and
the element-wise fallbacks are counted (`Stats`). The load average is printed before and after (the
machine may be shared).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import conv  # noqa: E402
import dot  # noqa: E402
import gemv  # noqa: E402
import matmul  # noqa: E402

import lift  # noqa: E402
from lift import Array, Float, Size, fun, map, pad, reduce, slide  # noqa: E402
from lift.interpret import Stats  # noqa: E402

N = Size("N")
U = 2.0**-24


def stencil3():
    """map(w => reduce(add, 0) << w) << slide(3, 1) << pad(1, 1, 0) << x: a 3-point sum."""
    return fun([Array(Float, N)], lambda x: map(lambda w: reduce(lift.add, 0.0) << w)
               << slide(3, 1) << pad(1, 1, 0.0) << x)


def stencil3_numpy(x: np.ndarray) -> np.ndarray:
    p = np.pad(x, 1)
    return p[:-2] + p[1:-1] + p[2:]


@dataclass
class Case:
    """One row: a program, its arguments, numpy's way, and |terms| for the error bound."""

    name: str
    program: Any
    args: tuple
    numpy: Callable[[], Any]
    want: Callable[[], Any]  # float64 numpy result
    terms: Callable[[], tuple[Any, int]]  # (sum of |terms| per output, terms per output)


def _mm(m: int) -> Case:
    a, bt = matmul.inputs(m, m, m)
    b = np.ascontiguousarray(bt.T)
    return Case(f"matmul {m}^3", matmul.high_level(), (a, bt), lambda: a @ b,
                lambda: a.astype(np.float64) @ b.astype(np.float64),
                lambda: (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64), m))


def _dot(log2n: int) -> Case:
    x, y = dot.inputs(log2n)
    return Case(f"dot 2^{log2n}", dot.high_level(), (x, y), lambda: np.dot(x, y),
                lambda: np.dot(x.astype(np.float64), y.astype(np.float64)),
                lambda: (np.abs(x.astype(np.float64)) @ np.abs(y.astype(np.float64)), len(x)))


def _stencil(log2n: int) -> Case:
    x = np.random.default_rng(0).random(1 << log2n, dtype=np.float32)
    return Case(f"stencil3 2^{log2n}", stencil3(), (x,), lambda: stencil3_numpy(x),
                lambda: stencil3_numpy(x.astype(np.float64)), lambda: (stencil3_numpy(np.abs(x).astype(np.float64)), 3))


def _gemv(m: int) -> Case:
    a, v = gemv.inputs(m, m)
    return Case(f"gemv {m}^2", gemv.high_level(), (a, v), lambda: a @ v,
                lambda: a.astype(np.float64) @ v.astype(np.float64),
                lambda: (np.abs(a).astype(np.float64) @ np.abs(v).astype(np.float64), m))


def _vgg2() -> Case:
    """VGG-16 layer 2 (thesis Table 4.3): 224 x 224 x 64 -> 64 channels, 3 x 3, as Listing 4.1."""
    inp, wts = conv.inputs(224, 64, 64)
    k = conv.KH * conv.KW * inp.shape[2]
    return Case("VGG-16 layer 2", conv.listing_4_1(), (inp, wts), lambda: conv.reference(inp, wts),
                lambda: conv.reference(inp.astype(np.float64), wts.astype(np.float64)),
                lambda: (conv.reference(np.abs(inp).astype(np.float64), np.abs(wts).astype(np.float64)), k))


def cases(quick: bool) -> list[Case]:
    if quick:
        return [_mm(256), _dot(20), _stencil(20), _gemv(1024)]
    return [_mm(512), _mm(1024), _dot(22), _dot(24), _stencil(22), _stencil(24), _gemv(4096), _vgg2()]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def check(c: Case, got: Any) -> str:
    """"ok" within Higham's bound (n + 1) u sum|terms| (and a few ulps of the result), else the error."""
    want, (mag, n) = c.want(), c.terms()
    err = np.abs(np.asarray(got, dtype=np.float64) - want)
    bound = (n + 1) * U * mag + 4 * U * np.abs(want)
    worst = float(np.max(err / np.maximum(bound, 1e-300)))
    return "ok" if worst <= 1.0 else f"WRONG ({worst:.2g} x bound)"


def run(c: Case, repeat: int, precise: bool, stat: Callable[[list[float]], float] = statistics.median) -> None:
    stats = Stats()
    t, out = timed(lambda: lift.interpret(c.program, *c.args, stats=stats))
    c.numpy()  # warm-up
    reps = 1 if t > 5 else repeat
    ti, tn, tp = [t], [], []
    for k in range(reps):
        tn.append(timed(c.numpy)[0])
        if k + 1 < reps:
            ti.append(timed(lambda: lift.interpret(c.program, *c.args))[0])
        if precise:
            tp.append(timed(lambda: lift.interpret(c.program, *c.args, precise=True))[0])
    mi, mn = stat(ti), stat(tn)
    wide = f"{stat(tp):9.3f} s" if precise else ""
    print(f"{c.name:18} {mi:9.3f} s {wide} {mn * 1e3:10.2f} ms {mi / mn:9.1f}x   {check(c, out):10} "
          f"fallbacks: {len(stats.fallbacks)}", flush=True)


def tune_matmul(budget: float) -> None:
    """`lift.tune` of examples/matmul.py's high-level program at 256^3: reference time, candidates."""
    from lift.explore.evaluate import Evaluator

    spent: list[float] = []
    compute = Evaluator.compute_reference

    def timed_reference(self: Evaluator) -> None:
        t0 = time.perf_counter()
        compute(self)
        spent.append(time.perf_counter() - t0)

    a, bt = matmul.inputs(256, 256, 256)
    with mock.patch.object(Evaluator, "compute_reference", timed_reference), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyopencl's CompilerWarning for every candidate
        t, res = timed(lambda: lift.tune(matmul.high_level(), a, bt, budget=budget, db=False,
                                         progress=False))
    ok = sum(1 for r in res.history if r.ok)
    best = res.best_record.time * 1e3 if res.best_record and res.best_record.time else float("nan")
    print(f"lift.tune matmul 256^3, budget {budget:g} s: {t:.1f} s in all, reference {sum(spent):.2f} s, "
          f"{len(res.history)} candidates ({ok} correct), best {best:.3f} ms", flush=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="cases whose name starts with one of these (default: all)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--best", action="store_true", help="minima instead of medians")
    ap.add_argument("--precise", action="store_true", help="also time interpret(..., precise=True)")
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--tune", type=float, default=0, metavar="SECONDS",
                    help="also run lift.tune of matmul 256^3 with this budget")
    args = ap.parse_args(argv)
    wide = f"{'precise':>11}" if args.precise else ""
    print(f"load average {_load()}")
    print(f"{'case':18} {'interpret':>11} {wide} {'numpy':>13} {'ratio':>10}   check")
    for c in cases(args.quick):
        if not args.names or any(c.name.startswith(n) for n in args.names):
            run(c, args.repeat, args.precise, min if args.best else statistics.median)
    if args.tune:
        tune_matmul(args.tune)
    print(f"load average {_load()}")


def _load() -> str:
    """The 1, 5 and 15-minute load averages (the machine is shared), or "n/a"."""
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


if __name__ == "__main__":
    main()
