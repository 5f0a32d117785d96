"""Per-candidate compile latency of the tuner, end to end: drawing a candidate from the joint
constraint space (the strategy's `propose`: seeds completed by the solver, random samples) +
rewriting + solving + code generation (`Evaluator.plan`), the OpenCL build excluded; for matmul
1024^3 and the conv layer 64x64, 64 -> 64 channels.

    python benchmarks/compile_latency.py [CANDIDATES] [--rounds R] [--compare]

Not a test. For each program: the first candidate (its spaces built) and the median and
maximum over the next candidates the tuner's default strategy proposes. `--compare` also runs
the z3-only drawing (no concrete sampler: one z3 query per variable per sample, an optimising
query per seed), interleaved with the default round by round in this process, and prints the
medians of both. Caches of the arithmetic (lru) survive between runs in one process, so the
contender that runs second is favoured: alternate with `--z3-first` in fresh processes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import conv  # noqa: E402
import matmul  # noqa: E402

from lift.constraints import model as model_mod  # noqa: E402
from lift.constraints import sampling  # noqa: E402
from lift.explore import seeds as seeds_mod  # noqa: E402
from lift.explore.evaluate import Evaluator, Record  # noqa: E402
from lift.explore.search import RandomSearch  # noqa: E402
from lift.explore.seeds import Seeded  # noqa: E402
from lift.explore.tune import _device, _search_space, _sizes  # noqa: E402

PROGRAMS = {"matmul": lambda: (matmul.high_level(), matmul.inputs(1024, 1024, 1024)),
            "conv": lambda: (conv.listing_4_1(), conv.inputs(64, 64, 64))}


def latency(name: str, n: int) -> dict:
    """Propose + plan each of `n` candidates of a fresh search; seconds per candidate."""
    expr, arrays = PROGRAMS[name]()
    dev, sizes = _device(None), _sizes(expr, arrays)
    expr, structural, auto = _search_space(expr, sizes, True)
    pipe = Evaluator(expr, arrays, dev, sizes)
    strategy = RandomSearch(pipe, structural, seed=0)
    if auto:
        strategy = Seeded(pipe, structural, auto, strategy)
    rows, history = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        cand = strategy.propose(history)
        if cand is None:
            break
        t1 = time.perf_counter()
        try:
            pipe.plan(cand)
        except Exception:  # noqa: BLE001 - an invalid candidate still costs its time
            pass
        t2 = time.perf_counter()
        rows.append((t1 - t0, t2 - t1))
        history.append(Record(cand, False, "not run"))
    total = [p + q for p, q in rows[1:]] or [0.0]
    return {"first": sum(rows[0]), "median": statistics.median(total), "max": max(total),
            "propose": statistics.median(p for p, _ in rows[1:]), "plan": statistics.median(q for _, q in rows[1:]),
            "candidates": len(rows)}


class Z3Only:
    """Drawing as before the concrete sampler: z3 pivots per sample, an optimising query per seed."""

    def __enter__(self) -> None:
        self.saved = (model_mod.Model._sampler, seeds_mod.SCAN_MAX)
        model_mod.Model._sampler = lambda self: None
        seeds_mod.SCAN_MAX = 0

    def __exit__(self, *exc: object) -> None:
        model_mod.Model._sampler, seeds_mod.SCAN_MAX = self.saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("candidates", type=int, nargs="?", default=20)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--z3-first", action="store_true", help="with --compare: z3-only before the sampler")
    a = ap.parse_args()
    modes = (["z3-only", "sampler"] if a.z3_first else ["sampler", "z3-only"]) if a.compare else ["sampler"]
    got: dict[tuple[str, str], list[dict]] = {}
    for _ in range(a.rounds):
        for name in PROGRAMS:
            for mode in modes:
                sampling._COMPILED.clear()  # each round starts cold
                if mode == "z3-only":
                    with Z3Only():
                        got.setdefault((name, mode), []).append(latency(name, a.candidates))
                else:
                    got.setdefault((name, mode), []).append(latency(name, a.candidates))
    print(f"{'program':8} {'drawing':8} {'first':>7} {'median':>7} {'max':>7} {'propose':>8} {'plan':>7}  "
          f"(s per candidate, end to end; medians over {a.rounds} round(s) of {a.candidates} candidates)")
    for (name, mode), rs in got.items():
        med = {k: statistics.median(r[k] for r in rs) for k in ("first", "median", "max", "propose", "plan")}
        print(f"{name:8} {mode:8} {med['first']:7.3f} {med['median']:7.3f} {med['max']:7.3f} "
              f"{med['propose']:8.3f} {med['plan']:7.3f}")


if __name__ == "__main__":
    main()
