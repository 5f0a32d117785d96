"""Compare search strategies cheaply: record measurements once, replay strategies over them.

    python benchmarks/strategies.py record matmul 300 matmul.json   # a uniform tune, every candidate kept
    python benchmarks/strategies.py replay matmul.json conv.json [--seeds 5]

Not a test. `record` runs `lift.tune(strategy="uniform")` on the plain high-level program
(matmul 256^3 written with `transpose << B`, or the conv layer 32x32, 32 -> 32 channels; `--size`;
small, because the reference interpretation runs inside the budget)
and writes every candidate with its outcome (`lift.explore.search.Table`). `replay` runs the
uniform and the informed strategy over each table with `lift.explore.search.replay` for
each seed and prints how many evaluations each needed to reach the uniform strategy's best
time; the informed strategy should need at most half as many.

Tables (benchmarks/tables/): matmul512.json (257 candidates, `transpose << B`) and conv32.json
(525, the conv layer 32x32, 32 -> 32 channels), recorded with benchmarks/strategy_record.py
(the automatic block_nest points active, each candidate timed 7 times, three passes over the
table in different orders, time = the median of the passes' medians); matmul256.json and
conv24.json (session 3: `record` below, one time per candidate, no block_nest point) are kept
for comparison. Rows hold each candidate's choices as JSON, so a table recorded later with new
kinds of choices replays the same way.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import conv  # noqa: E402

import lift  # noqa: E402
from lift import Array, Float, Size, fun, map, reduce, transpose, zip  # noqa: E402
from lift.explore import search  # noqa: E402


def matmul_program():
    """C = A B, B read column-wise through `transpose` (the plain high-level program)."""
    m, n, k = Size("M"), Size("N"), Size("K")
    return fun([Array(Array(Float, k), m), Array(Array(Float, n), k)],
               lambda a, b: map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c))
                                << (transpose << b)) << a)


SIZES = {"matmul": 256, "conv": 32}  # large enough that the kernel, not the launch, decides the time


def programs(name: str, size: int | None = None):
    rng = np.random.default_rng(0)
    n = size or SIZES.get(name, 0)
    if name == "matmul":
        return matmul_program(), (rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32))
    if name == "conv":
        return conv.listing_4_1(), conv.inputs(n, n, n)
    raise SystemExit(f"unknown program {name!r}: matmul or conv")


def record(name: str, budget: float, out: str, size: int | None = None) -> None:
    expr, args = programs(name, size)
    res = lift.tune(expr, *args, budget=budget, db=False, strategy="uniform", progress=True)
    table = search.Table.from_history(res.history)
    Path(out).write_text(json.dumps(table.to_json(), indent=1))
    print(f"{name}: {len(table.rows)} candidates, {sum(r['ok'] for r in table.rows.values())} correct, "
          f"best {table.best_time() * 1e3:.3f} ms -> {out}")


def compare(paths: list[str], seeds: int, share: float = 0.5, tolerance: float = 0.05,
            name: str = "informed", **options) -> bool:
    """For each seed: uniform sampling gets `share` of the table as its budget of evaluations
    (rows drawn without replacement in an order shuffled by the seed); "uniform's best time" is
    the best time it measured within that budget, and reaching it means measuring a time at
    most that best times (1 + `tolerance`) (stated before any run: 5% by default, about the
    timing noise of this machine). Printed per seed: the evaluations uniform sampling itself
    needed to get there, and those the strategy `name` needed (budget + 1: not within the budget).
    The verdict (exit status) is the previous sessions' criterion, the strategy within half of
    uniform's budget on every seed; the stricter reading, within half of the evaluations uniform
    needed, is printed beside it (per seed and as the ratio of the means)."""
    good = True
    for path in paths:
        table = search.Table.from_json(json.loads(Path(path).read_text()))
        budget = max(2, int(len(table.rows) * share))
        need = []
        for seed in range(seeds):
            uni = search.replay(table, "uniform", seed=seed, limit=budget)
            target = min(t for t in uni.times if t is not None) * (1 + tolerance)
            inf = search.replay(table, name, seed=seed, limit=budget, stop=target, **options)
            need_u, need_i = uni.evaluations_to(target), inf.evaluations_to(target)
            need.append((need_u, need_i if need_i is not None else budget + 1))
            print(f"{path} seed {seed}: uniform's best in {budget} evaluations {target * 1e3:.3f} ms "
                  f"(+{tolerance:.0%}) reached after {need_u}; {name} after {need_i}", flush=True)
        ok = all(i <= budget / 2 for _, i in need)
        strict = sum(i <= u / 2 for u, i in need)
        mean_u, mean_i = statistics.mean(u for u, _ in need), statistics.mean(i for _, i in need)
        good &= ok
        print(f"{path}: {len(table.rows)} candidates, budget {budget}; mean evaluations to uniform's best: "
              f"uniform {mean_u:.1f}, {name} {mean_i:.1f} (ratio {mean_i / mean_u:.2f}); {name} within half "
              f"the budget on every seed: {'yes' if ok else 'NO'} ({sum(i <= budget / 2 for _, i in need)}/"
              f"{seeds}); within half of uniform's own evaluations: {strict}/{seeds} seeds")
        print(f"  per seed (uniform, {name}): {need}")
    return good


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("name")
    r.add_argument("budget", type=float)
    r.add_argument("out")
    r.add_argument("--size", type=int, help="matmul n (n x n x n) or conv n (n x n image, n -> n channels)")
    p = sub.add_parser("replay")
    p.add_argument("tables", nargs="+")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--share", type=float, default=0.5, help="uniform's budget, a share of the table")
    p.add_argument("--tolerance", type=float, default=0.05,
                   help="reaching within this fraction of uniform's best counts (default 5%%: timing noise)")
    p.add_argument("--strategy", default="informed", help="the strategy compared with uniform sampling")
    p.add_argument("--model", default="forest", help="the informed strategy's model: forest or ridge")
    p.add_argument("--pool", type=int, help="the informed strategy chooses among this many random rows "
                   "(as tune's pool of 64 random candidates; default: every untried row)")
    a = ap.parse_args()
    if a.cmd == "record":
        record(a.name, a.budget, a.out, a.size)
    else:
        opts = {"model": a.model, "pool": a.pool} if a.strategy == "informed" else {}
        sys.exit(0 if compare(a.tables, a.seeds, a.share, a.tolerance, a.strategy, **opts) else 1)


if __name__ == "__main__":
    main()
