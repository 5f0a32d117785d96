"""Parallel reductions (issue 17 items 1-2): the atomic combine vs the two-kernel combine vs the default.

    python benchmarks/reductions.py [--quick] [--repeat N] [--json OUT]

For each workload every contender is compiled from the same high-level program with explicit
choices of the `reduce_chunks` point (width 8, a chunk size giving ~1024 work-items, `pad` where
8*T does not divide the length), checked against numpy (float64) and timed *interleaved* with the
others and with numpy in one loop (medians; `Program.time` is the sum of the kernel event times of
a run, so the atomic contender includes its fill launch and the two-kernel one its second kernel).
The ratio column is numpy time / kernel time (> 1: faster than numpy).
Contenders: `1-item` (`choices={}`: the solver's form, one work-item looping over the array, which
was the default before), `default` (lift.compile as is: since issue 17, float8 chunks of 2048
scalars per work-item, atomic combine, tail step: rewrites/defaults.py), `2-kernel` (partials
array, then a one-work-item kernel), `atomic` (each work-item combines its partial into the result
with a compare-and-swap loop); the last two with ~1024 work-items and the tail step where needed.
Medians and minima are both shown (the machine is shared: medians move with the load).
Row and column sums are nested reductions, which
`reduce_atomic` does not cover (its result must be the kernel's): row sums compare the default
with the chunked inner reduction; column sums show the default only (the chunked column reduction
is refused today: its partials would need private memory of symbolic size).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import lift  # noqa: E402
from lift import Array, Float, Size, fun, map, reduce, transpose  # noqa: E402
from lift.rewrites.chunks import reduce_chunks  # noqa: E402

N, M = Size("N"), Size("M")
ITEMS = 1024  # work-items aimed at
WIDTH = 8


def chunk(n: int, width: int = WIDTH) -> tuple[int, bool]:
    """(T, pad): a chunk of T vectors of `width` giving about ITEMS work-items, a divisor of the
    length where one is within a factor 2 of that, else padded."""
    target = max(min(16, n // width), n // (width * ITEMS), 1)  # at least 16 vectors a work-item
    if n % width == 0:
        m = n // width
        near = [t for t in range(max(1, target // 2), 2 * target + 1) if m % t == 0]
        if near:
            return min(near, key=lambda t: abs(t - target)), False
    return target, True


def total(combine: str | None, n: int) -> Any:
    """sum(x): as written (combine None) or chunked with `combine` (the tail step where needed)."""
    if combine is None:
        return fun([Array(Float, N)], lambda x: reduce(lift.add, 0.0) << x)
    t, rest = chunk(n)
    return fun([Array(Float, N)], lambda x: reduce_chunks(reduce(lift.add, 0.0), size=t, width=WIDTH, combine=combine,
                                                          tail=rest, label="R") << x)


def row_sums(chunked: bool, n: int) -> Any:
    if not chunked:
        return fun([Array(Array(Float, N), M)], lambda x: map(lambda r: reduce(lift.add, 0.0) << r) << x)
    t, pad = chunk(n)
    t = max(1, n // (WIDTH * 16)) if not pad else t  # 16 chunks per row
    return fun([Array(Array(Float, N), M)], lambda x: map(lambda r: reduce_chunks(
        reduce(lift.add, 0.0), size=t, width=WIDTH, pad=pad, label="R") << r) << x)


def col_sums() -> Any:
    return fun([Array(Array(Float, N), M)], lambda x: map(lambda c: reduce(lift.add, 0.0) << c) << transpose << x)


def workloads(quick: bool) -> list[tuple[str, tuple, Any, list[tuple[str, Any]]]]:
    big = 1 << 20 if quick else 16_226_304
    rows = [(256, 4096), (4096, 256)] if quick else [(1024, 16384), (16384, 1024)]
    cols = (2048, 768) if quick else (8192, 768)
    out = []
    for n in (1024, 2176, big):
        out.append((f"reduce_sum {n}", (n,), lambda x: x.sum(),
                    [(name, total(c, n), ch) for name, c, ch in (
                        ("1-item", None, {}), ("default", None, None), ("2-kernel", "kernel", None),
                        ("atomic", "atomic", None))]))
    for m, n in rows:
        out.append((f"row_sums {m}x{n}", (m, n), lambda x: x.sum(1),
                    [("default", row_sums(False, n), None), ("chunked", row_sums(True, n), None)]))
    out.append((f"col_sums {cols[0]}x{cols[1]}", cols, lambda x: x.sum(0),
                [("default", col_sums(), None)]))  # chunked columns: refused (private partials of symbolic size)
    return out


def run(quick: bool, repeat: int, only: str = "") -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for name, shape, ref, contenders in workloads(quick):
        if not name.startswith(only):
            continue
        x = rng.uniform(-1, 1, shape).astype(np.float32)
        want = ref(x.astype(np.float64))
        progs, status = {}, {}
        for cname, prog, choices in contenders:
            try:
                p = lift.compile(prog, choices=choices)
                got = np.asarray(p(x), dtype=np.float64).reshape(np.shape(want))
                tol = max(1e-4, 4 * np.sqrt(max(shape)) * 2.0 ** -24) * max(1.0, float(np.max(np.abs(want))))
                ok = bool(np.allclose(got, want, rtol=tol, atol=tol))
                status[cname] = "ok" if ok else f"WRONG ({float(np.max(np.abs(got - want))):.3g})"
                progs[cname] = p
            except lift.LiftError as e:
                status[cname] = f"refused: {type(e).__name__}: {str(e).splitlines()[0][:100]}"
        times: dict[str, list[float]] = {c: [] for c in progs}
        times["numpy"] = []
        xf = x
        for _ in range(repeat):  # interleaved: every contender and numpy in each round
            for c, p in progs.items():
                times[c].append(statistics.median(p.time(x, repeat=1)))
            start = time.perf_counter()
            ref(xf)
            times["numpy"].append(time.perf_counter() - start)
        med = {c: statistics.median(v) for c, v in times.items()}
        low = {c: min(v) for c, v in times.items()}
        rows.append({"workload": name, "status": status, "ms": {c: v * 1e3 for c, v in med.items()},
                     "min_ms": {c: v * 1e3 for c, v in low.items()},
                     "vs_numpy": {c: med["numpy"] / v for c, v in med.items() if c != "numpy" and v > 0},
                     "vs_numpy_min": {c: low["numpy"] / v for c, v in low.items() if c != "numpy" and v > 0},
                     "ndrange": {c: [str(r.global_size) for r in p.ndrange] for c, p in progs.items()}})
    return rows


def table(rows: list[dict]) -> str:
    lines = []
    for r in rows:
        parts = [f"numpy {r['ms']['numpy']:.3f} ms (min {r['min_ms']['numpy']:.3f})"]
        for c, st in r["status"].items():
            if c in r["ms"]:
                parts.append(f"{c} {st} {r['ms'][c]:.3f} ms x{r['vs_numpy'][c]:.2f} (min x{r['vs_numpy_min'][c]:.2f})")
            else:
                parts.append(f"{c} {st}")
        lines.append(f"{r['workload']:24} " + " | ".join(parts))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="reduced sizes")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--only", default="", help="workloads whose name starts with this")
    args = ap.parse_args(argv)
    rows = run(args.quick, args.repeat, args.only)
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if all(s == "ok" for r in rows for s in r["status"].values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
