"""Where the compiler stands on the seed papers' workloads (issue 17): one line per workload.

    python benchmarks/seeds.py --quick            reduced sizes
    python benchmarks/seeds.py [--tune S] [--json OUT] [--only NAME,...] [--repeat N]

Each workload (benchmarks/seed_programs.py) is compiled from its high-level form with the default
lowering (`lift.compile`), run, compared with the numpy reference computed in float64, and timed:
kernel time is the median of `Program.time` (summed kernel event times, transfers excluded); `call`
is the median wall time of the call `prog(*arrays)` (numpy arrays in, numpy arrays out: what a user
times; `_common.call_seconds`); numpy time is the median wall time of the same operation in float32;
the three are measured interleaved in one loop. The ratio `x` is numpy's time over the kernel's,
`call x` numpy's time over the call's (above 1: the kernel, the call, is faster). Status is `ok`,
`WRONG (max error e)`, `refused: <LiftError class>: <first line>` when compile raises a LiftError, or
`crash: <class>: <first line>` for anything else. `--tune S` adds `lift.tune` with a budget of S seconds;
the tuned program is timed in the same round-robin loop as the default one and numpy (kernels and
calls of the default and the tuned program, numpy, in turn), so the two compare on the same numpy
time; where the tune kept the default (the same kernels, launched alike) the row says `(= default)`
and the one program is timed once.
When peer compilers are installed (benchmarks/peers.py: tinygrad in the venv set up by
../shared/tools/peers_bench.py), each row ends with the best peer's time on the same inputs (its
own process, after the liftcl and numpy loops, not interleaved with them) and numpy's time over it;
else the header says why no peer ran. `--no-peers` skips them.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import peers  # noqa: E402
from _common import call_seconds, close, settle_blas  # noqa: E402
from seed_programs import SEEDS, Seed  # noqa: E402

import lift  # noqa: E402
import lift.devices  # noqa: E402
from lift.files import write_atomic  # noqa: E402

U = 2.0 ** -24  # float32 unit roundoff


def tolerance(sum_length: int) -> float:
    """Relative tolerance for a float32 result whose longest sum has `sum_length` terms: 4 sqrt(n) u
    (rounding errors of random sign grow like sqrt(n)), at least 1e-4 (the examples' tolerance).
    Higham's worst-case bound (n + 1) u is ~1 at 16M terms: a check against it could not fail."""
    return max(1e-4, 4.0 * math.sqrt(sum_length) * U)


def judge(seed: Seed, got: Any, want: Any, sizes: tuple) -> tuple[bool, float]:
    """Whether `got` matches the float64 reference `want` (a tuple for multi-output workloads), with
    the tolerance scaled to the sum length and to the magnitude of the result."""
    wants = want if isinstance(want, tuple) else (want,)
    gots = got if isinstance(got, tuple) and isinstance(want, tuple) else (got,)
    if len(gots) != len(wants):
        return False, float("inf")
    rtol = tolerance(seed.sum_length(*sizes))
    ok, worst = True, 0.0
    for g, w in zip(gots, wants):
        w = np.asarray(w, dtype=np.float64)
        g = np.asarray(g)
        if g.size == w.size:
            g = g.reshape(w.shape)
        scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
        good, err = close(g, w, rtol=rtol, atol=rtol * scale)
        ok, worst = ok and good, max(worst, err)
    return ok, worst


def _first_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:120]}"


SHORT_S = 1e-4  # kernels shorter than this are timed SHORT_CALLS times per round
SHORT_CALLS = 9


def _interleaved(progs: list[Any], arrays: tuple, np_fn: Any, repeat: int
                 ) -> tuple[list[float], list[float], float]:
    """(median kernel time of each program, median call time of each program, median numpy wall
    time), measured round-robin in one loop: each program's kernel and its call are contenders of
    their own, beside numpy.
    The order rotates every round: each round has one pause (after numpy, while its BLAS threads
    stop spinning), and whoever runs first after it runs on idle cores with cold caches (numpy
    after the pause took 16% longer than numpy after numpy on this VM, tmm 128x1024x1024); a fixed
    order would hand that place to the same contender every round. Where every program runs under
    `SHORT_S`, a contender's time in a round is the median of `SHORT_CALLS` calls: single runs of a
    few microseconds differ by the worker threads' wake-up (reduce_sum 2176: 4 or 13 us, the same
    kernel in two tables); a call's time in such a round is the median of `SHORT_CALLS` calls
    after a warm-up call (`call_seconds`)."""
    np_fn()
    contenders: list[Any] = [*((p, what) for p in progs for what in ("kernel", "call")), None]  # None: numpy
    short = all(min(p.time(*arrays, repeat=3)) < SHORT_S for p in progs)
    per = SHORT_CALLS if short else 1  # timings per contender and round
    times: list[list[float]] = [[] for _ in contenders]
    for r in range(repeat):
        first = r % len(contenders)
        for i in (*range(first, len(contenders)), *range(first)):
            if contenders[i] is None:
                start = time.perf_counter()
                np_fn()
                times[i].append(time.perf_counter() - start)
                settle_blas()  # numpy's BLAS threads spin after a call: let them stop before a kernel
            elif contenders[i][1] == "kernel":
                runs = [contenders[i][0].time(*arrays, repeat=1)[0] for _ in range(per)]
                times[i].append(statistics.median(runs))
            else:
                times[i].append(call_seconds(contenders[i][0], arrays, per))
    medians = [statistics.median(t) for t in times[:-1]]
    return medians[0::2], medians[1::2], statistics.median(times[-1])


def _compile_and_check(seed: Seed, make: Any, arrays: tuple, want: Any, sizes: tuple) -> tuple[Any, str]:
    """(program or None, status)."""
    try:
        prog = make()
    except lift.LiftError as e:
        return None, f"refused: {_first_line(e)}"
    except Exception as e:  # noqa: BLE001 - the table reports every failure and goes on
        return None, f"crash: {_first_line(e)}"
    try:
        ok, err = judge(seed, prog(*arrays), want, sizes)
    except Exception as e:  # noqa: BLE001
        return None, f"crash (run): {_first_line(e)}"
    return prog, "ok" if ok else f"WRONG (max error {err:.3g})"


def run_seed(seed: Seed, sizes: tuple, repeat: int, tune: float, with_peers: bool = False) -> dict:
    """Compile, check and time one workload (and tune it with a budget); one table row as a dict."""
    arrays = seed.inputs(sizes)
    want = seed.reference(*(np.float64(a) if np.ndim(a) == 0 else a.astype(np.float64) for a in arrays))
    row: dict = {"name": seed.name, "sizes": list(sizes)}
    start = time.perf_counter()
    prog, row["status"] = _compile_and_check(seed, lambda: lift.compile(seed.build()), arrays, want, sizes)
    row["compile_s"] = time.perf_counter() - start
    np_fn = lambda: seed.reference(*arrays)  # noqa: E731
    tprog = None
    if tune > 0:
        def tuned() -> Any:
            return lift.tune(seed.build(), *arrays, budget=tune, db=False, progress=False).best

        tprog, row["tuned_status"] = _compile_and_check(seed, tuned, arrays, want, sizes)
        if tprog is not None:
            row["tuned_choices"], row["tuned_ndrange"] = str(tprog.choices), str(tprog.ndrange)
    row["tuned_same"] = same = prog is not None and tprog is not None and same_kernels(
        prog.specialised(*arrays), tprog.specialised(*arrays))  # what the calls run
    timed = [p for p in (prog, None if same else tprog) if p is not None]  # default, tuned and numpy in one loop
    if timed:
        medians, calls, numpy_s = _interleaved(timed, arrays, np_fn, repeat)
        if prog is not None:
            row["kernel_s"], row["call_s"], row["numpy_s"] = medians[0], calls[0], numpy_s
            row["kernels"] = len(prog.kernels)
        if tprog is not None:
            row["tuned_s"], row["tuned_call_s"], row["numpy_tuned_s"] = medians[-1], calls[-1], numpy_s
    if with_peers:
        got = peers.best(seed.name, arrays, want, repeat=repeat)
        row["peer"], row["peer_s"], row["peers"] = got.get("peer"), got.get("median_s"), got.get("all", got.get("why"))
    return row


def same_kernels(a: Any, b: Any) -> bool:
    """Whether two programs run the same kernels with the same launch sizes (the tune kept the
    default): timed once, as one program (two timings of one kernel differ only by noise)."""
    return a.source == b.source and [str(nd) for nd in a.ndrange] == [str(nd) for nd in b.ndrange]


def _ms(s: float | None) -> str:
    return f"{s * 1e3:10.3f} ms" if s is not None else f"{'-':>13s}"


def _ratio(num: float | None, den: float | None) -> str:
    return f"x{num / den:7.3f}" if num and den else f"{'-':>8s}"


def format_row(row: dict) -> str:
    """One printed line: name, size, status, kernel, call and numpy time, the ratios numpy / kernel
    and numpy / call (`call x`); the tuned program's the same way."""
    size = "x".join(str(s) for s in row["sizes"])
    k, c, n = row.get("kernel_s"), row.get("call_s"), row.get("numpy_s")
    line = (f"{row['name']:16s} {size:20s} {row['status'][:70]:70s} {_ms(k)} call {_ms(c)} | numpy {_ms(n)} "
            f"{_ratio(n, k)} call {_ratio(n, c)}")
    if "tuned_status" in row:
        t, tc = row.get("tuned_s"), row.get("tuned_call_s")
        nt = row.get("numpy_tuned_s", n)  # numpy timed in the tuned program's own interleaved loop
        status = row["tuned_status"][:40] + (" (= default)" if row.get("tuned_same") else "")
        line += f" | tuned {status} {_ms(t)} call {_ms(tc)} {_ratio(nt, t)} call {_ratio(nt, tc)}"
    if row.get("peer_s"):
        line += f" | {row['peer']} {_ms(row['peer_s'])} x{n / row['peer_s']:7.3f}" if n else ""
    elif "peers" in row:
        line += " | peers -"
    return line


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="reduced sizes")
    ap.add_argument("--tune", type=float, default=0.0, metavar="S", help="also lift.tune with budget S seconds")
    ap.add_argument("--json", type=Path, metavar="OUT", help="write the table as JSON")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-peers", action="store_true", help="do not run the peer compilers (benchmarks/peers.py)")
    args = ap.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    print(f"seed workloads ({'quick' if args.quick else 'full'} sizes) on {lift.devices.current().name}; "
          "kernel, call and numpy timed interleaved, medians")
    print(f"device facts: {lift.devices.facts.summary(lift.devices.current())}")
    usable = {} if args.no_peers else peers.status()
    with_peers = any(v == "ok" for v in usable.values())
    if usable:
        print("peers: " + "; ".join(f"{p} {why}" for p, why in usable.items()))
    rows = []
    for seed in SEEDS:
        if only and seed.name not in only:
            continue
        row = run_seed(seed, seed.quick if args.quick else seed.full, args.repeat, args.tune, with_peers)
        print(format_row(row), flush=True)
        rows.append(row)
    if args.json:
        write_atomic(args.json, json.dumps({"device": lift.devices.current().name, "quick": args.quick,
                                            "tune_budget": args.tune, "rows": rows}, indent=1))
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
