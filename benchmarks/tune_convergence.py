"""How soon `lift.tune` reaches a good kernel: time to within 5% of the best any run found.

    python benchmarks/tune_convergence.py trace gemv --budget 300 --out gemv-after.json
    (cd ../old-checkout && python ../main/benchmarks/tune_convergence.py trace gemv --out gemv-before.json)
    python benchmarks/tune_convergence.py judge gemv-before.json gemv-after.json

Not a test. `trace` tunes one workload (`db=False`, seed 0, in this checkout's liftcl) and writes
every improvement of the best measured time with the seconds since the call and the program's
choices, and the tune's counts: candidates, distinct kernel sources, distinct (source, launch)
pairs, proposals skipped as redundant, rejected ones. Run it with a fresh `XDG_CACHE_HOME` (cold
build caches) and nothing else on the machine, one tune at a time; a checkout of an older commit
traces the same workloads (the script only needs `lift.tune`, `Progress.update` and
`Record.choices`).

`judge` does not trust the times the tunes measured (a 2-core VM's neighbours move them by a
third): it rebuilds every program on the traces with this checkout's `lift.compile(program,
choices=...)`, times them all in one process, interleaved (7 rounds, median of 5 runs each), takes
the fastest as the reference best, and prints each run's time to within 5% of it: the elapsed
seconds of the first trace point whose program re-times within 5%.

Workloads: `matmul` (512^3, benchmarks/summary.py), `conv` (thesis Listing 4.1, 32x32x32), `gemv`
(2048^2, examples/gemv.py), and any name of benchmarks/seed_programs.py's SEEDS at its `quick`
sizes.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "benchmarks"))

TARGET = 1.05  # within 5% of the best


def workload(which: str) -> tuple[Any, tuple]:
    """(program, inputs) of a workload name (see the module docstring)."""
    rng = np.random.default_rng(0)
    if which == "matmul":
        from summary import matmul_program

        n = 512
        return matmul_program(), (rng.standard_normal((n, n), dtype=np.float32),
                                  rng.standard_normal((n, n), dtype=np.float32))
    if which == "conv":
        import conv

        return conv.listing_4_1(), conv.inputs(32, 32, 32)
    if which == "gemv":
        import gemv

        return gemv.high_level(), gemv.inputs(2048, 2048)
    import seed_programs

    seed = next((s for s in seed_programs.SEEDS if s.name == which), None)
    if seed is None:
        raise SystemExit(f"unknown workload {which!r}: matmul, conv, gemv or a seed's name")
    return seed.build(), seed.inputs(seed.quick)


def trace(which: str, budget: float, out: str) -> None:
    import lift
    from lift.explore import progress

    prog, args = workload(which)
    points: list[dict[str, Any]] = []
    start = time.perf_counter()
    update = progress.Progress.update

    def traced(self: Any, history: Any, rank: Any, reused: int = 0) -> None:
        ok = [r for r in history if r.ok and r.time is not None]
        if ok:
            best = min(ok, key=lambda r: r.time)
            if not points or best.time < points[-1]["time"]:
                chosen = best.choices if best.choices is not None else best.candidate
                points.append({"t": round(time.perf_counter() - start, 2), "time": best.time, "n": len(history),
                               "choices": chosen.to_json(), "src": best.source_hash})
        update(self, history, rank, reused)

    progress.Progress.update = traced  # type: ignore[method-assign]
    r = lift.tune(prog, *args, budget=budget, db=False, progress=False, seed=0)
    built = [h for h in r.history if h.source_hash and h.choices is not None]
    stats = r.stats
    Path(out).write_text(json.dumps({
        "which": which, "wall": round(time.perf_counter() - start, 1), "candidates": len(r.history),
        "ok": sum(1 for h in r.history if h.ok), "rejected": stats.get("rejected"),
        "redundant": stats.get("redundant"), "unsynchronisable": stats.get("unsynchronisable"),
        "distinct_sources": len({h.source_hash for h in built}),
        "distinct_kernels": len({(h.source_hash, json.dumps(h.choices.to_json().get("launch", {}), sort_keys=True))
                                 for h in built}),
        "best_choices": r.choices.to_json(), "trace": points}))


def judge(files: list[str]) -> None:
    import lift
    from lift.choices import Choices

    runs = [(f, json.loads(Path(f).read_text())) for f in files]
    prog, args = workload(runs[0][1]["which"])
    programs: dict[str, Any] = {}

    def key(choices: dict) -> str:
        return json.dumps(choices, sort_keys=True)

    for _, run in runs:
        for point in [*run["trace"], {"choices": run["best_choices"]}]:
            k = key(point["choices"])
            if k not in programs:
                try:
                    programs[k] = lift.compile(prog, choices=Choices.from_json(point["choices"]))
                except Exception as err:  # noqa: BLE001 - an older checkout's choices may not rebuild
                    print(f"not rebuilt ({type(err).__name__}): {str(err).splitlines()[0][:100]}")
    times: dict[str, list[float]] = {k: [] for k in programs}
    for r in range(7):
        order = list(programs) if r % 2 == 0 else list(reversed(programs))
        for k in order:
            times[k].append(statistics.median(programs[k].time(*args, repeat=5)))
    med = {k: statistics.median(v) for k, v in times.items()}
    best = min(med.values())
    print(f"{runs[0][1]['which']}: {len(programs)} programs re-timed, reference best {best * 1e3:.4f} ms")
    for name, run in runs:
        hit = next((p for p in run["trace"] if med.get(key(p["choices"]), float("inf")) <= TARGET * best), None)
        reached = f"{hit['t']:.2f} s (candidate {hit['n']})" if hit else f"not within {run['wall']} s"
        print(f"  {Path(name).name:30s} candidates {run['candidates']:5d}, sources {run['distinct_sources']:5d}, "
              f"kernels {run['distinct_kernels']:5d}, redundant {run.get('redundant')}, "
              f"rejected {run.get('rejected')}; within 5%: {reached}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("trace", help="tune one workload and write its trace")
    t.add_argument("workload")
    t.add_argument("--budget", type=float, default=300.0)
    t.add_argument("--out", required=True)
    j = sub.add_parser("judge", help="re-time the traces of one workload's runs")
    j.add_argument("files", nargs="+")
    a = ap.parse_args()
    if a.cmd == "trace":
        trace(a.workload, a.budget, a.out)
    else:
        judge(a.files)


if __name__ == "__main__":
    main()
