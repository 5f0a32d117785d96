"""The measure phase of benchmarks/gpu_check.py: the device's copy and FMA limits, then each
workload compiled by default and tuned, checked against float64 numpy, timed, and compared with
the limit it is bound by (ratios and the issue's targets: bandwidth kernels >= 0.8 x copy,
matmul >= 0.5 x FMA, conv layers >= 0.4 x FMA)."""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import axpy
import conv
import dot
import gemv
import gpu_limits
import numpy as np
import vgg

import lift
from lift.program import Program


@dataclass(frozen=True)
class Workload:
    """One kernel: `make(scale, quick)` gives (program, arguments, float64 result, bytes or flops)."""

    name: str
    bound: str  # "bandwidth" (GB/s, against the copy kernel) | "compute" (GFLOP/s, against the FMA kernel)
    target: float  # the ratio to that limit the issue asks for on an H100
    make: Callable[[float, bool], tuple[Any, tuple, np.ndarray, float]]


def _n(scale: float) -> int:
    return 1 << max(12, round(26 + np.log2(scale)))  # 2^26 floats at scale 1


def _side(full: int, scale: float, power: float, step: int = 64) -> int:
    return max(step, int(full * scale ** power) // step * step)


def _axpy(scale: float, quick: bool) -> tuple:
    a, x, y = axpy.inputs(int(np.log2(_n(scale))))
    return axpy.high_level(), (a, x, y), np.float64(a) * x + y, 12.0 * x.size


def _dot(scale: float, quick: bool) -> tuple:
    x, y = dot.inputs(int(np.log2(_n(scale))))
    return dot.high_level(), (x, y), np.asarray(np.dot(x.astype(np.float64), y)), 8.0 * x.size


def _stencil(scale: float, quick: bool) -> tuple:
    from summary import stencil_program

    x = np.random.default_rng(2).random(_n(scale), dtype=np.float32)
    xp = np.pad(x.astype(np.float64), 1)
    return stencil_program(), (x,), xp[:-2] + xp[1:-1] + xp[2:], 8.0 * x.size


def _gemv(scale: float, quick: bool) -> tuple:
    side = _side(8192, scale, 0.5)
    a, v = gemv.inputs(side, side)
    return gemv.high_level(), (a, v), a.astype(np.float64) @ v, 4.0 * (a.size + v.size + side)


def _matmul(scale: float, quick: bool) -> tuple:
    from summary import matmul_program

    side = _side(4096, scale, 1 / 3)
    rng = np.random.default_rng(3)
    a, b = rng.random((side, side), dtype=np.float32), rng.random((side, side), dtype=np.float32)
    return matmul_program(), (a, b), a.astype(np.float64) @ b, 2.0 * side ** 3


def _conv(index: str) -> Callable[[float, bool], tuple]:
    def make(scale: float, quick: bool) -> tuple:
        full = next(layer for layer in vgg.LAYERS if index in layer.index.split(","))
        layer = vgg.Layer(full.index, full.cin, max(8, round(full.size * scale ** 0.5)), full.cout)
        inp, wts = vgg.layer_inputs(layer)
        want = vgg.reference(inp.astype(np.float64), wts.astype(np.float64))
        return conv.listing_4_1(), (inp, wts), want.reshape(layer.size, layer.size, layer.cout), layer.flops()

    return make


WORKLOADS = (Workload("axpy", "bandwidth", 0.8, _axpy), Workload("dot", "bandwidth", 0.8, _dot),
             Workload("stencil", "bandwidth", 0.8, _stencil), Workload("gemv", "bandwidth", 0.8, _gemv),
             Workload("matmul", "compute", 0.5, _matmul), Workload("vgg2", "compute", 0.4, _conv("2")),
             Workload("vgg10", "compute", 0.4, _conv("10")))
NAMES = tuple(w.name for w in WORKLOADS)


def check(got: Any, want: np.ndarray, rtol: float = 1e-3) -> tuple[str, float]:
    """("ok" | "WRONG", the largest error relative to the result's largest magnitude)."""
    g = np.asarray(got, dtype=np.float64).reshape(np.shape(want))
    scale = max(float(np.max(np.abs(want))) if want.size else 1.0, 1e-30)
    err = float(np.max(np.abs(g - want))) / scale if want.size else 0.0
    return ("ok" if err <= rtol else "WRONG"), err


def _timed(make: Callable[[], Any], args: tuple, want: np.ndarray, repeat: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        prog = make()
        verdict, err = check(prog(*args), want)
        seconds = statistics.median(prog.time(*args, repeat=repeat)) if verdict == "ok" else None
    except Exception as e:  # noqa: BLE001 - the report names every failure and goes on
        return {"check": "FAILED", "error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}",
                "build_seconds": round(time.perf_counter() - t0, 1)}
    return {"check": verdict, "max_rel_error": err, "seconds": seconds,
            "build_seconds": round(time.perf_counter() - t0, 1), "choices": str(getattr(prog, "choices", ""))[:300]}


def limits(scale: float, repeat: int, quick: bool) -> dict[str, Any]:
    """The copy kernel's GB/s (8 bytes per float moved) and the FMA chains' GFLOP/s, each checked."""
    n = _n(scale)
    x = np.random.default_rng(4).random(n, dtype=np.float32)
    copy = _timed(lambda: Program(gpu_limits.copy_plan()), (x,), x.astype(np.float64), repeat)
    copy["gbs"] = 8.0 * n / copy["seconds"] / 1e9 if copy.get("seconds") else None
    items, iters = (1 << 12, 256) if quick else (1 << 20, 4096)
    seed = np.random.default_rng(5).random(items, dtype=np.float32)
    bc = np.asarray(gpu_limits.FMA_ARGS, np.float32)
    fma = _timed(lambda: Program(gpu_limits.fma_plan(iters)), (bc, seed), gpu_limits.fma_expected(seed, iters),
                 repeat)
    fma["gflops"] = gpu_limits.fma_flops(items, iters) / fma["seconds"] / 1e9 if fma.get("seconds") else None
    fma.update(work_items=items, iterations=iters, chains=gpu_limits.CHAINS)
    return {"copy": copy, "fma": fma, "copy_floats": n}


def _rates(row: dict[str, Any], amount: float, limit: float | None, target: float) -> None:
    if row.get("seconds"):
        row["rate"] = amount / row["seconds"] / 1e9
        if limit:
            row["ratio"] = row["rate"] / limit
            row["target_met"] = row["ratio"] >= target


def measure(scale: float, budget: float, limit: float, repeat: int, only: list[str] | None,
            quick: bool) -> dict[str, Any]:
    """The limits, then every workload (default, then tuned for `budget` s) until `limit` s have passed."""
    deadline = time.perf_counter() + limit
    lim = limits(scale, repeat, quick)
    print(f"copy {lim['copy'].get('gbs') or 0:.1f} GB/s ({lim['copy']['check']}), "
          f"FMA {lim['fma'].get('gflops') or 0:.1f} GFLOP/s ({lim['fma']['check']})", flush=True)
    rows = []
    for w in WORKLOADS:
        if only and w.name not in only:
            continue
        row: dict[str, Any] = {"name": w.name, "bound": w.bound, "target": w.target,
                               "unit": "GB/s" if w.bound == "bandwidth" else "GFLOP/s"}
        rows.append(row)
        if time.perf_counter() > deadline - 5:
            row["skipped"] = "the measure phase's time limit"
            continue
        program, args, want, amount = w.make(scale, quick)
        row["sizes"] = [list(np.shape(a)) for a in args]
        ref = lim["copy"].get("gbs") if w.bound == "bandwidth" else lim["fma"].get("gflops")
        row["default"] = _timed(lambda p=program: lift.compile(p), args, want, repeat)
        _rates(row["default"], amount, ref, w.target)
        left = deadline - time.perf_counter() - 5
        b = min(budget, left)
        if budget > 0 and b >= min(1.0, budget):
            def tuned(p: Any = program, b: float = b, a: tuple = args) -> Any:
                return lift.tune(p, *a, budget=b, db=False, progress=False).best

            row["tuned"] = _timed(tuned, args, want, repeat)
            row["tuned"]["budget"] = round(b, 1)
            _rates(row["tuned"], amount, ref, w.target)
        elif budget > 0:
            row["tuned"] = {"check": "skipped", "error": "the measure phase's time limit"}
        print(line(row), flush=True)
    return {"limits": lim, "kernels": rows}


def line(row: dict[str, Any]) -> str:
    def part(r: dict[str, Any] | None) -> str:
        if not r:
            return "-"
        if not r.get("rate"):
            return f"{r['check']} {r.get('error', '')[:80]}"
        ratio = f" = {r['ratio']:.2f} x limit" if r.get("ratio") is not None else ""
        return f"{r['rate']:9.1f} {row['unit']}{ratio}"

    return f"{row['name']:8} default {part(row.get('default'))} | tuned {part(row.get('tuned'))}"


_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|deselected|xfailed|xpassed)")


def pytest_counts(output: str) -> dict[str, Any]:
    """The counts of pytest's last summary line and the FAILED/ERROR lines of its short summary."""
    summary = next((ln for ln in reversed(output.splitlines()) if _COUNT.search(ln)), "")
    counts = {k.rstrip("s") if k.startswith("error") else k: int(n) for n, k in _COUNT.findall(summary)}
    failures = [ln.split(" ", 1)[1] for ln in output.splitlines() if ln.startswith(("FAILED ", "ERROR "))]
    return {"counts": counts, "summary": summary.strip("= "), "failures": failures}
