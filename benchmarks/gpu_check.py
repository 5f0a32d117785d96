"""The GPU check: one run, within a time limit per phase, of everything a short GPU session measures.

    python benchmarks/gpu_check.py [--phases device,tests,fuzz,measure] [--quick] [--scale S]
                                   [--tune SECONDS] [--only axpy,dot,...] [--out DIR]
    benchmarks/gpu_check.sh ...          # on the device machine: offline install from wheels/ first

Phases (each stops at its own limit, `--limit-PHASE SECONDS`; JSON is rewritten after each):
  device   the OpenCL devices, and the one used: the first usable GPU (else liftcl's default);
           `PYOPENCL_CTX` is set to it for every later phase and subprocess
  tests    `pytest -m "device and not slow"` on that device (tests/device_facts.py skips what
           assumes PoCL's CPU device); pass/fail/skip counts, failures named
  fuzz     `tests/fuzz.py` for `--fuzz-minutes` (default 1); its table
  measure  a hand-written copy kernel (the bandwidth limit) and FMA-chain kernel (the FP32 limit),
           then axpy, dot, stencil (2^26 floats), gemv (8192^2), matmul 4096^3 and the VGG-16 conv
           layers 2 and 10 at batch 1 (examples/vgg.py), each compiled by default and tuned for
           `--tune` seconds (lift.tune), checked against float64 numpy, timed (median of Program.time),
           as GB/s or GFLOP/s and the ratio to the copy or FMA rate measured in the same run
JSON goes to `--out`, else `$OUT`, else nothing: gpu_check.json, with tests.log and fuzz.log.
`--quick` (sizes 1/1024, small conv layers, 1 s tunes) runs the whole script on PoCL in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples"))

import gpu_work  # noqa: E402

PHASES = ("device", "tests", "fuzz", "measure")
LIMITS = {"device": 30.0, "tests": 110.0, "fuzz": 75.0, "measure": 250.0}  # seconds: < 8 minutes with setup


def choose_device(explicit: str | None) -> dict[str, Any]:
    """Every device (usable or not, why) and the one to use: `explicit` (a PYOPENCL_CTX value),
    else the first usable GPU, else liftcl's default; sets `PYOPENCL_CTX` to it."""
    import lift
    from lift.errors import DeviceSkipped

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeviceSkipped)
        infos = lift.devices.list()
    listed = [{"ctx": i.ctx, "platform": i.platform, "platform_version": i.platform_version, "name": i.name,
               "kind": i.kind, "usable": i.usable, "reason": i.reason} for i in infos]
    usable = [i for i in infos if i.usable]
    pick = (explicit or next((i.ctx for i in usable if i.kind == "gpu"), None)
            or next((i.ctx for i in usable if i.default), None))
    if pick is None:
        return {"devices": listed, "chosen": None, "error": "no usable OpenCL device"}
    os.environ["PYOPENCL_CTX"] = pick
    dev = lift.devices.current()
    chosen = {"ctx": pick, "name": dev.name, "platform": dev.platform, "vendor": dev.vendor, "kind": dev.kind,
              "driver": dev.driver_version, "version": dev.version, "compute_units": dev.compute_units,
              "global_mem_bytes": dev.global_mem_bytes, "max_alloc_bytes": dev.max_alloc_bytes,
              "local_mem_bytes": dev.local_mem_bytes, "max_work_group_size": dev.max_work_group_size}
    return {"devices": listed, "chosen": chosen}


def run_limited(cmd: list[str], limit: float, log: Path | None) -> dict[str, Any]:
    """Run `cmd` for at most `limit` seconds (then SIGINT, so pytest still prints its summary; then
    SIGKILL after 15 s); its output, also written to `log`."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
    if log is not None:
        log.write_text(out)
    return {"cmd": " ".join(cmd), "rc": proc.returncode, "timed_out": timed_out,
            "seconds": round(time.perf_counter() - t0, 1), "output": out}


def run_tests(limit: float, out_dir: Path | None, workers: int, select: str, files: list[str]) -> dict[str, Any]:
    """The device-marked tests on the chosen device (pytest-xdist over `workers` processes)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", select,
           "-rfE", "--tb=line", "-n", str(workers), *files]
    res = run_limited(cmd, limit, out_dir / "tests.log" if out_dir else None)
    out = res.pop("output")
    res.update(gpu_work.pytest_counts(out), tail=out[-2000:])
    return res


def run_fuzz(minutes: float, limit: float, out_dir: Path | None) -> dict[str, Any]:
    cmd = [sys.executable, str(ROOT / "tests" / "fuzz.py"), "--minutes", str(minutes), "--timeout", "60"]
    res = run_limited(cmd, limit, out_dir / "fuzz.log" if out_dir else None)
    out = res.pop("output")
    res["table"] = [ln for ln in out.splitlines() if ln.startswith(("largest dimension", "<= ", "all "))][-5:]
    res["tail"] = out[-2000:]
    return res


def write(report: dict[str, Any], out_dir: Path | None) -> None:
    if out_dir is not None:
        (out_dir / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--phases", default=",".join(PHASES), help=f"comma-separated subset of {PHASES}")
    ap.add_argument("--quick", action="store_true", help="sizes / 1024, small conv layers, 1 s tunes (for PoCL)")
    ap.add_argument("--scale", type=float, default=None, help="fraction of the full sizes' elements (default 1)")
    ap.add_argument("--tune", type=float, default=None, help="seconds of lift.tune per kernel (default 30; 0: none)")
    ap.add_argument("--only", default="", help=f"comma-separated subset of {', '.join(gpu_work.NAMES)}")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--device", default=os.environ.get("PYOPENCL_CTX"),
                    help="a PYOPENCL_CTX value (default: $PYOPENCL_CTX, else the first usable GPU)")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="folder for gpu_check.json (default $OUT)")
    ap.add_argument("--fuzz-minutes", type=float, default=1.0)
    ap.add_argument("--workers", type=int, default=min(16, os.cpu_count() or 1), help="pytest-xdist workers")
    ap.add_argument("--tests", default="device and not slow", help="the pytest -m expression of the tests phase")
    ap.add_argument("--test-files", default="", help="comma-separated test files (default: the whole suite)")
    ap.add_argument("--setup-seconds", type=float, default=0.0, help="(from gpu_check.sh) seconds of setup")
    for phase, limit in LIMITS.items():
        ap.add_argument(f"--limit-{phase}", type=float, default=limit, help=f"seconds (default {limit:g})")
    opts = ap.parse_args(argv)
    phases = [p for p in opts.phases.split(",") if p]
    if set(phases) - set(PHASES):
        ap.error(f"unknown phases {sorted(set(phases) - set(PHASES))}")
    scale = opts.scale if opts.scale is not None else (2.0 ** -10 if opts.quick else 1.0)
    budget = opts.tune if opts.tune is not None else (1.0 if opts.quick else 30.0)
    out_dir = Path(opts.out) if opts.out else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    report: dict[str, Any] = {"host": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                       "machine": platform.machine()},
                              "setup_seconds": opts.setup_seconds, "scale": scale, "tune_budget": budget,
                              "limits": {p: getattr(opts, f"limit_{p}") for p in PHASES}, "phases": {}}
    t0 = time.perf_counter()
    report["device"] = choose_device(opts.device)  # always: every phase needs PYOPENCL_CTX
    report["phases"]["device"] = round(time.perf_counter() - t0, 1)
    chosen = report["device"].get("chosen")
    print(f"device: {chosen['name']} ({chosen['platform']}, {chosen['driver']}) as PYOPENCL_CTX={chosen['ctx']}"
          if chosen else f"device: none usable: {report['device']}", flush=True)
    write(report, out_dir)
    if chosen is None:
        return 2
    for phase in phases:
        if phase == "device":
            continue
        limit = getattr(opts, f"limit_{phase}")
        t0 = time.perf_counter()
        print(f"\n== {phase} (limit {limit:g} s)", flush=True)
        if phase == "tests":
            files = [f for f in opts.test_files.split(",") if f]
            report["tests"] = run_tests(limit, out_dir, opts.workers, opts.tests, files)
            print(json.dumps({k: v for k, v in report["tests"].items() if k != "failures"}), flush=True)
            for f in report["tests"].get("failures", [])[:40]:
                print("  FAILED", f)
        elif phase == "fuzz":
            report["fuzz"] = run_fuzz(opts.fuzz_minutes, limit, out_dir)
            print("\n".join(report["fuzz"]["table"]), flush=True)
        else:
            only = [n for n in opts.only.split(",") if n] or None
            report["measure"] = gpu_work.measure(scale, budget, limit, opts.repeat, only, opts.quick)
        report["phases"][phase] = round(time.perf_counter() - t0, 1)
        write(report, out_dir)
    report["total_seconds"] = round(time.perf_counter() - t_start + opts.setup_seconds, 1)
    write(report, out_dir)
    print(f"\ntotal {report['total_seconds']} s (setup {opts.setup_seconds:g} s); phases {report['phases']}"
          + (f"; JSON in {out_dir / 'gpu_check.json'}" if out_dir else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
