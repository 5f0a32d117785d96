"""Candidates per minute of `lift.tune`: local sequential, local pipelined, Ray with 1 and 2 builders.

    python benchmarks/tune_throughput.py --budget 60                 # matmul 1024^3 and the conv layer
    python benchmarks/tune_throughput.py --budget 20 --matmul 256 --modes sequential pipelined
    python benchmarks/tune_throughput.py --json out.json

Not a test. Each workload is tuned once per mode with the same budget, seed and strategy, on the
same device, with no tuning database (`db=False`: every candidate is measured); a mode's figure
is the candidates finished (built, run, checked and timed, or rejected) per minute of the tune,
and the winner's time. Modes: `sequential` (`ahead=0`: build, then run, one after the other),
`pipelined` (`ahead=2`: the driver builds while the worker runs), `ray1` / `ray2` (a local Ray
cluster, `cluster="ray"`, one runner actor on this device and 1 or 2 builder tasks at once;
the Ray start, once, is not counted). The reference interpretation and the default lowering
are inside every mode's budget alike.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))

MODES = ("sequential", "pipelined", "ray1", "ray2")


def workloads(matmul_n: int, conv_size: int) -> dict[str, tuple[Any, tuple]]:
    import conv
    import matmul

    return {f"matmul {matmul_n}^3": (matmul.program, matmul.inputs(matmul_n, matmul_n, matmul_n)),
            f"conv {conv_size}x{conv_size} 32->32": (conv.program, conv.inputs(conv_size))}


def run_mode(mode: str, program: Any, arrays: tuple, budget: float, seed: int) -> dict[str, Any]:
    import lift

    kw: dict[str, Any] = {"ahead": 0} if mode == "sequential" else {"ahead": 2} if mode == "pipelined" else \
        {"cluster": "ray", "builders": int(mode[3:])}
    t0 = time.perf_counter()
    res = lift.tune(program, *arrays, budget=budget, db=False, progress=False, seed=seed, **kw)
    wall = time.perf_counter() - t0
    n = len(res.history)
    return {"mode": mode, "candidates": n, "ok": sum(r.ok for r in res.history), "seconds": wall,
            "per_minute": 60.0 * n / wall, "best_ms": res.best_record.time * 1e3 if res.best_record.time else None}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per tune (default 60)")
    ap.add_argument("--matmul", type=int, default=1024, metavar="N", help="matmul N^3 (default 1024)")
    ap.add_argument("--conv", type=int, default=32, metavar="S", help="conv layer S x S (default 32)")
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", metavar="OUT")
    opts = ap.parse_args(argv)
    import lift

    if any(m.startswith("ray") for m in opts.modes):
        from lift.explore import cluster

        t0 = time.perf_counter()
        cluster.start_local(num_cpus=max(2, os.cpu_count() or 2))
        print(f"Ray started in {time.perf_counter() - t0:.1f} s (not counted)", flush=True)
    dev = lift.devices.current()
    print(f"device {dev.name}; {os.cpu_count()} CPUs; budget {opts.budget:g} s per tune", flush=True)
    rows = []
    for name, (program, arrays) in workloads(opts.matmul, opts.conv).items():
        for mode in opts.modes:
            row = {"workload": name, **run_mode(mode, program, arrays, opts.budget, opts.seed)}
            rows.append(row)
            best = f"{row['best_ms']:.3f} ms" if row["best_ms"] else "?"
            print(f"{name:22s} {mode:10s} {row['candidates']:4d} candidates ({row['ok']} correct) in "
                  f"{row['seconds']:6.1f} s: {row['per_minute']:6.1f} per minute, best {best}", flush=True)
    if opts.json:
        Path(opts.json).write_text(json.dumps({"device": dev.name, "cpus": os.cpu_count(), "budget": opts.budget,
                                               "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
