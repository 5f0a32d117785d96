"""Per-candidate compile latency of the tuner: rewriting + solving + code generation, the
OpenCL build excluded (`Evaluator.plan`), for matmul and the conv layer.

    python benchmarks/compile_latency.py [CANDIDATES]

Not a test. For each program: the cold time of the first candidate (its spaces built), then
the median and maximum over the next candidates the tuner's strategy proposes (spaces cached
per structural choice, constraint proofs cached by constraint).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import conv  # noqa: E402
import matmul  # noqa: E402

from lift.explore.evaluate import Evaluator  # noqa: E402
from lift.explore.search import RandomSearch  # noqa: E402
from lift.explore.seeds import Seeded  # noqa: E402
from lift.explore.tune import _device, _search_space, _sizes  # noqa: E402


def latency(name: str, expr, arrays, n: int) -> dict:
    dev = _device(None)
    sizes = _sizes(expr, arrays)
    t0 = time.perf_counter()
    expr, structural, auto = _search_space(expr, sizes, True)
    pipe = Evaluator(expr, arrays, dev, sizes)
    strategy = RandomSearch(pipe, structural, seed=0)
    if auto:
        strategy = Seeded(pipe, structural, auto, strategy)
    t_setup = time.perf_counter() - t0
    times, history = [], []
    from lift.explore.evaluate import Record

    for _ in range(n):
        t = time.perf_counter()
        cand = strategy.propose(history)
        if cand is None:
            break
        t_prop = time.perf_counter() - t
        t = time.perf_counter()
        try:
            pipe.plan(cand) if hasattr(pipe, "plan") else pipe.build(cand)
            ok = True
        except Exception:  # noqa: BLE001 - an invalid candidate still costs its time
            ok = False
        times.append((t_prop, time.perf_counter() - t, ok))
        history.append(Record(cand, False, "not run"))
    plan_s = [p for _, p, _ in times[1:]] or [0.0]
    prop_s = [p for p, _, _ in times[1:]] or [0.0]
    row = {"program": name, "setup_s": t_setup, "first_propose_s": times[0][0], "first_plan_s": times[0][1],
           "median_plan_s": statistics.median(plan_s), "max_plan_s": max(plan_s),
           "median_propose_s": statistics.median(prop_s), "candidates": len(times),
           "generated": sum(ok for *_, ok in times)}
    print(f"{name:8} setup {t_setup:6.3f} s  first: propose {times[0][0]:6.3f} s plan {times[0][1]:6.3f} s  "
          f"then median plan {row['median_plan_s']:6.3f} s (max {row['max_plan_s']:6.3f}), median propose "
          f"{row['median_propose_s']:6.3f} s over {len(times) - 1}; {row['generated']} generated")
    return row


def _no_opencl_build() -> None:
    """Before `Evaluator.plan` existed: time `Evaluator.build` with `Program` not building."""
    import types

    import lift.compile

    lift.compile.Program = lambda plan, **k: types.SimpleNamespace(plan=plan, source=plan.source, choices=None)


def main(n: int = 20) -> None:
    if not hasattr(Evaluator, "plan"):
        _no_opencl_build()
    latency("matmul", matmul.high_level(), matmul.inputs(1024, 1024, 1024), n)
    latency("conv", conv.listing_4_1(), conv.inputs(64, 64, 64), n)


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:]))
