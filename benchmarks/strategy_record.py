"""Record a replay table: uniform samples of a program's search space, each timed `repeat` times.

    python benchmarks/strategy_record.py matmul 600 tables/matmul256.json --size 256 --repeat 7
    python benchmarks/strategy_record.py retime tables/matmul256.json 20   # noise: time some rows again
    python benchmarks/strategy_record.py repass tables/matmul256.json OUT  # a second pass over every row

Not a test. Candidates are drawn as `lift.tune(strategy="uniform")` draws them (the automatic
points placed, their seeds first, then uniform random samples), built and run in the tuner's
worker process, checked against the interpreter, then timed `repeat` times after a warm-up; the
row keeps every run (`times`), their median (`time`, what replay reads), the load average and
the seconds the evaluation took. The table is written every 10 candidates, so a recording can be
stopped at any time. `retime` times `n` rows again (the fastest half and a random half of them)
and prints the spread of the medians between the two recordings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import strategies  # noqa: E402

from lift.choices import Choices  # noqa: E402
from lift.explore.evaluate import Evaluator  # noqa: E402
from lift.explore.points import key as point_key  # noqa: E402
from lift.explore.search import RandomSearch  # noqa: E402
from lift.explore.seeds import Seeded  # noqa: E402
from lift.explore.tune import _device, _search_space, _sizes  # noqa: E402
from lift.explore.worker import measure_isolated, shared  # noqa: E402


def evaluator(name: str, size: int | None) -> tuple[Evaluator, dict, list[str]]:
    """The tuner's evaluator for the plain program, with its worker and its structural space."""
    expr, args = strategies.programs(name, size)
    sizes = _sizes(expr, args)
    expr, structural, labels = _search_space(expr, sizes, True)
    dev = _device(None)
    pipe = Evaluator(expr, args, dev, sizes, repeat=1)
    pipe._seen = _Forget()  # every row is built and timed itself (the tuner times a kernel once)
    pipe.worker = shared(dev, args)
    pipe.start_reference()
    return pipe, structural, labels


class _Forget(dict):
    """A `_seen` table of the evaluator that keeps nothing."""

    def __setitem__(self, key: str, value: object) -> None:
        pass


def _kernel(pipe: Evaluator, cand: Choices) -> str:
    """What the tuner de-duplicates by: the generated source and the launch sizes."""
    try:
        plan, _ = pipe.plan(cand)
    except Exception:  # noqa: BLE001 - not generated: the row is rejected anyway
        return ""
    return hashlib.sha256((plan.source + repr(plan.launches)).encode()).hexdigest()[:24]


def timed(pipe: Evaluator, cand: Choices, repeat: int) -> dict:
    """One row: checked in the worker, then `repeat` timed runs of the program it just built."""
    t0 = time.perf_counter()
    rec = measure_isolated(pipe, cand, pipe.worker)
    row = {"choices": cand.to_json(), "ok": rec.ok, "reason": rec.reason, "time": None, "times": [],
           "load": os.getloadavg()[0], "kernel": _kernel(pipe, cand)}
    if rec.ok and rec.time is not None:
        got = pipe.worker.call(("time", repeat), 60.0) if rec.time < 1.0 else None
        row["times"] = list(got.value[0]) if got is not None and got.ok else [rec.time]
        row["time"] = statistics.median(row["times"])
    row["wall_s"] = time.perf_counter() - t0
    return row


def record(name: str, budget: float, out: str, size: int | None, repeat: int, seed: int) -> None:
    pipe, structural, labels = evaluator(name, size)
    search = Seeded(pipe, structural, labels, RandomSearch(pipe, structural, seed=seed))
    seeds = {point_key(c) for c in search.seeds()}
    history, rows, start = [], [], time.perf_counter()
    from lift.explore.evaluate import Record

    while time.perf_counter() - start < budget:
        cand = search.propose(history)
        if cand is None:
            break
        row = timed(pipe, cand, repeat)
        row["seed"] = point_key(cand) in seeds
        rows.append(row)
        history.append(Record(cand, row["ok"], row["reason"], row["time"]))
        t = f"{row['time'] * 1e3:9.3f} ms" if row["ok"] else row["reason"][:60]
        print(f"{len(rows):4d} {time.perf_counter() - start:6.0f}s load {row['load']:.1f} {t}", flush=True)
        if len(rows) % 10 == 0:
            _write(out, rows, name, size, repeat)
    _write(out, rows, name, size, repeat)
    pipe.close_reference()
    print(f"{name}: {len(rows)} candidates, {sum(r['ok'] for r in rows)} correct -> {out}")


def _write(out: str, rows: list[dict], name: str, size: int | None, repeat: int) -> None:
    meta = {"program": name, "size": size, "repeat": repeat, "time": "median of the runs",
            "cpu": "AMD EPYC Zen 4, 2 vCPUs, shared", "device": "PoCL 3.0-rc2 pthread"}
    Path(out).write_text(json.dumps({"meta": meta, "rows": rows}, indent=0))


def retime(path: str, n: int, repeat: int) -> None:
    """Time `n` rows again (the fastest n/2 and n/2 others at random); print both medians."""
    d = json.loads(Path(path).read_text())
    meta = d.get("meta", {})
    pipe, _, _ = evaluator(meta["program"], meta["size"])
    ok = sorted((r for r in d["rows"] if r["ok"]), key=lambda r: r["time"])
    pick = ok[:n // 2] + random.Random(1).sample(ok[n // 2:], min(len(ok) - n // 2, n - n // 2))
    ratios = []
    for r in pick:
        again = timed(pipe, pipe.decode(r["choices"]), meta.get("repeat", 7))
        if again["ok"]:
            ratios.append(again["time"] / r["time"])
            spread = (max(again["times"]) - min(again["times"])) / again["time"]
            print(f"{r['time'] * 1e3:9.3f} ms -> {again['time'] * 1e3:9.3f} ms (x{ratios[-1]:.2f}; "
                  f"runs spread {spread:.0%}, load {again['load']:.1f})", flush=True)
    pipe.close_reference()
    if ratios:
        qs = statistics.quantiles(ratios, n=10) if len(ratios) > 2 else ratios
        print(f"{len(ratios)} rows: second/first median ratio {statistics.median(ratios):.3f} "
              f"(10%..90%: {qs[0]:.3f}..{qs[-1]:.3f}, min {min(ratios):.3f}, max {max(ratios):.3f})")


def repass(path: str, out: str, repeat: int) -> None:
    """Time every correct row again, in another order (one more pass over the table): the row's
    `time` becomes the median of its passes' medians (robust to one pass disturbed by the
    machine's other users, either way), `time_min` the smallest, `time1`, `time2`, ... each
    pass's. A row whose kernel (source and launch) an earlier row already had takes that row's
    first measurement (the first pass timed each kernel once)."""
    d = json.loads(Path(path).read_text())
    meta = d.get("meta", {})
    pipe, _, _ = evaluator(meta["program"], meta["size"])
    rows = [r for r in d["rows"] if r["ok"]]
    k = 1 + sum(1 for n in range(2, 10) if f"time{n}" in rows[0])
    order = list(range(len(rows)))
    random.Random(k).shuffle(order)
    for n, i in enumerate(order):
        r = rows[i]
        again = timed(pipe, pipe.decode(r["choices"]), repeat)
        r.setdefault("time1", r["time"])
        r[f"times{k + 1}"], r["kernel"], r[f"load{k + 1}"] = again["times"], again["kernel"], again["load"]
        r[f"time{k + 1}"] = again["time"] if again["ok"] else None
        print(f"{n:4d} {r['time1'] * 1e3:9.3f} -> {(r[f'time{k + 1}'] or 0) * 1e3:9.3f} ms", flush=True)
        if n % 20 == 0:
            Path(out).write_text(json.dumps(d, indent=0))
    first: dict[str, float] = {}
    for r in rows:
        if r["kernel"] and r["kernel"] in first:
            r["time1"], r["duplicate"] = first[r["kernel"]], True
        elif r["kernel"]:
            first[r["kernel"]] = r["time1"]
        passes = [t for t in (r.get(f"time{n}") for n in range(1, k + 2)) if t is not None]
        r["time"], r["time_min"] = statistics.median(passes), min(passes)
    d["meta"]["time"] = (f"the median of {k + 1} medians of {repeat} runs ({k + 1} passes over the table, in "
                         "different orders); time_min: the smallest of them")
    Path(out).write_text(json.dumps(d, indent=0))
    pipe.close_reference()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", help="matmul, conv, or retime")
    ap.add_argument("arg", help="budget in seconds (retime: the table)")
    ap.add_argument("out", nargs="?", help="the table to write (retime: how many rows)")
    ap.add_argument("--size", type=int)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.name == "retime":
        retime(a.arg, int(a.out or 20), a.repeat)
    elif a.name == "repass":
        repass(a.arg, a.out, a.repeat)
    else:
        record(a.name, float(a.arg), a.out, a.size, a.repeat, a.seed)


if __name__ == "__main__":
    main()
