"""Peer compilers on the seed workloads (issue 27 item 6; an optional extra): the best peer's time
per workload, for `benchmarks/seeds.py`'s table.

The peers live outside the repository, in their own virtual environment (set-up in
`../shared/tools/peers_bench.py`'s header: `$PEERS/venv`, tinygrad 0.14 and Apache TVM 0.27); this
module finds its python (`$LIFTCL_PEERS_PYTHON`, else `$PEERS/venv/bin/python`, else
`~/.cache/liftcl-peers/venv/bin/python`) and runs itself there, one child process per workload and
peer, on the inputs the parent wrote (an .npz with the float64 reference): the child builds the
workload in the peer's own API, checks it against the reference (max |out - ref| / max |ref| <=
1e-3) and prints its median time (`--repeat` runs after a warm-up) as one JSON line. A peer that is
not installed, or that cannot run here (tinygrad's CL backend needs a system OpenCL ICD loader:
pointed at the PyPI PoCL wheel's bundled loader with OPENCL_PATH it segfaults; its CPU backend
needs clang), is reported as such and the table goes on without it.

Peers: `tinygrad-cl` (DEV=CL, OpenCL/PoCL), `tinygrad-cpu` (DEV=CPU, clang JIT), timed as TinyJit
replays + synchronize, inputs resident; default schedules (no BEAM). TVM is not written for the
seed workloads (peers_bench.py runs it on matmul and conv): `tvm` reports "not written".

    python benchmarks/peers.py --status                      which peers can run (from any python)
    from peers import best; best(name, arrays, reference)    {"peer", "median_s"} or {"why"}
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

PEERS = ("tinygrad-cl", "tinygrad-cpu")
TIMEOUT_S = 300.0


def peer_python() -> Path | None:
    """The peers' python, or None when no peers venv is installed."""
    env = os.environ.get("LIFTCL_PEERS_PYTHON")
    roots = [Path(env)] if env else []
    if os.environ.get("PEERS"):
        roots.append(Path(os.environ["PEERS"]) / "venv" / "bin" / "python")
    roots.append(Path.home() / ".cache" / "liftcl-peers" / "venv" / "bin" / "python")
    return next((p for p in roots if p.is_file()), None)


def status(timeout: float = 60.0) -> dict[str, str]:
    """Each peer: "ok", "not installed" or why it cannot run (a one-line reason)."""
    py = peer_python()
    if py is None:
        return {p: "not installed" for p in (*PEERS, "tvm")}
    out = {}
    for p in PEERS:
        got = _child(py, ["--probe", p], timeout)
        out[p] = "ok" if got.get("ok") else got.get("why", "cannot run")
    out["tvm"] = "not written for the seed workloads (../shared/tools/peers_bench.py: matmul, conv)"
    return out


def best(name: str, arrays: tuple, reference: Any, repeat: int = 5, peers: tuple[str, ...] = PEERS,
         timeout: float = TIMEOUT_S) -> dict[str, Any]:
    """The fastest correct peer on workload `name` with `arrays` (float32) against the float64
    `reference` (an array or a tuple): {"peer", "median_s", "all": {peer: seconds or why}} or
    {"why": ...} when none ran."""
    py = peer_python()
    if py is None:
        return {"why": "peers not installed"}
    refs = reference if isinstance(reference, tuple) else (reference,)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.npz"
        np.savez(data, **{f"a{i}": np.asarray(a) for i, a in enumerate(arrays)},
                 **{f"r{i}": np.asarray(r, dtype=np.float64) for i, r in enumerate(refs)})
        runs = {p: _child(py, ["--run", p, "--workload", name, "--data", str(data), "--repeat", str(repeat)], timeout)
                for p in peers}
    ok = {p: r["median_s"] for p, r in runs.items() if r.get("ok")}
    every = {p: r.get("median_s") if r.get("ok") else r.get("why", "failed") for p, r in runs.items()}
    if not ok:
        return {"why": "; ".join(f"{p}: {w}" for p, w in every.items()), "all": every}
    top = min(ok, key=ok.__getitem__)
    return {"peer": top, "median_s": ok[top], "all": every}


def _child(py: Path, args: list[str], timeout: float) -> dict[str, Any]:
    try:
        done = subprocess.run([str(py), __file__, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"ok": False, "why": f"timed out after {timeout:.0f} s"}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        err = (done.stderr.strip().splitlines() or [f"exited with status {done.returncode}, no output"])[-1]
        return {"ok": False, "why": err[:160]}
    return json.loads(lines[-1])


# ----------------------------------------------------------------------------- in the peers' python


def _tinygrad_programs() -> dict[str, Callable[..., Any]]:
    """Each seed workload (benchmarks/seed_programs.py) in tinygrad's Tensor API; inputs as there."""
    def fc_relu(x: Any, w: Any, b: Any) -> Any:
        return (x @ w.T + b).relu()

    def conv(stride: int) -> Callable[..., Any]:  # [H][W][C] input, [M][3][3][C] filters, valid
        return lambda x, w: x.permute(2, 0, 1).unsqueeze(0).conv2d(w.permute(0, 3, 1, 2), stride=stride)[0] \
            .permute(1, 2, 0)

    def stencil(img: Any, w: Any) -> Any:
        return img.reshape(1, 1, *img.shape).conv2d(w.reshape(1, 1, 3, 3), padding=1)[0, 0]

    def unsharp(x: Any) -> Any:
        taps = [1 / 16, 4 / 16, 6 / 16, 4 / 16, 1 / 16]

        def blur(a: Any, axis: int) -> Any:
            pads = [(0, 0)] * a.ndim
            pads[axis] = (2, 2)
            p, n = a.pad(tuple(pads)), a.shape[axis]
            return sum(p.shrink(tuple((i, i + n) if d == axis else None for d in range(a.ndim))) * taps[i]
                       for i in range(5))

        by = blur(blur(x, 2), 1)
        return ((x - by).abs() < 0.001).where(x, x * 4 - by * 3)

    def conv1d(x: Any, w: Any) -> Any:
        return x.reshape(1, 1, 1, -1).conv2d(w.reshape(1, 1, 1, -1))[0, 0, 0]

    return {
        "reduce_sum": lambda x: x.sum(),
        "row_sums": lambda x: x.sum(1),
        "col_sums": lambda x: x.sum(0),
        "two_reductions": lambda a, b, c: ((a + b).sum(), c.max()),
        "add_mul_sum0": lambda x, a, b: ((x + a) * b).sum(0),
        "sgemm": lambda al, a, b, c, be: al * (a @ b) + be * c,
        "tmm": lambda a, b: a @ b.T,
        "tbmm": lambda a, b: a @ b.transpose(1, 2),
        "gemm_bias_relu": fc_relu,
        "mlp3": lambda x, w1, b1, w2, b2, w3, b3: fc_relu(fc_relu(fc_relu(x, w1, b1), w2, b2), w3, b3),
        "conv1d_3": conv1d,
        "conv1d_17": conv1d,
        "conv_valid": conv(1),
        "conv_stride2": conv(2),
        "quant_conv_relu": lambda img, w: stencil((img * 16).floor() / 16, w).relu(),
        "maxpool": lambda x: x.max_pool2d(kernel_size=(2, 2)),
        "unsharp_mask": unsharp,
    }


def _tinygrad_setup(peer: str) -> Any:
    for k in ("CL", "CPU", "GPU", "CLANG", "LLVM", "BEAM", "NOOPT"):  # old-style selectors assert in 0.14
        os.environ.pop(k, None)
    os.environ["DEV"] = "CL" if peer == "tinygrad-cl" else "CPU"
    from tinygrad import Device, Tensor  # reads the environment at import

    dev = Device[Device.DEFAULT]
    (Tensor([1.0, 2.0]) + 1).realize()
    dev.synchronize()
    return dev


def _run(peer: str, name: str, data: Path, repeat: int) -> dict[str, Any]:
    dev = _tinygrad_setup(peer)
    from tinygrad import Tensor, TinyJit

    programs = _tinygrad_programs()
    if name not in programs:
        return {"ok": False, "why": f"{name} is not written for {peer}"}
    npz = np.load(data)
    arrays = [npz[f"a{i}"] for i in range(sum(k.startswith("a") for k in npz.files))]
    refs = [npz[f"r{i}"] for i in range(sum(k.startswith("r") for k in npz.files))]
    ts = [Tensor(a).realize() if a.ndim else float(a) for a in arrays]
    dev.synchronize()

    def once() -> tuple:
        out = programs[name](*ts)
        outs = out if isinstance(out, tuple) else (out,)
        return tuple(o.realize() for o in outs)

    jit = TinyJit(once)
    got = jit()
    dev.synchronize()
    for g, r in zip(got, refs):
        err = float(np.max(np.abs(g.numpy().reshape(r.shape) - r))) / max(float(np.max(np.abs(r))), 1e-30)
        if not err <= 1e-3:
            return {"ok": False, "why": f"wrong result (max relative error {err:.3g})"}
    for _ in range(2):
        jit()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        jit()
        dev.synchronize()
        times.append(time.perf_counter() - start)
    return {"ok": True, "median_s": float(np.median(times)), "peer": peer}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--status", action="store_true", help="which peers can run here")
    ap.add_argument("--probe", metavar="PEER", help="(child) whether PEER runs in this python")
    ap.add_argument("--run", metavar="PEER", help="(child) time PEER on --workload with --data")
    ap.add_argument("--workload", default="")
    ap.add_argument("--data", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    if args.status:
        for peer, why in status().items():
            print(f"{peer:14s} {why}")
        return 0
    try:
        if args.probe:
            _tinygrad_setup(args.probe)
            out: dict[str, Any] = {"ok": True}
        elif args.run:
            out = _run(args.run, args.workload, args.data, args.repeat)
        else:
            ap.print_help()
            return 2
    except ImportError as e:
        out = {"ok": False, "why": f"not installed ({e.name})"}
    except Exception as e:  # noqa: BLE001 - the parent reports why a peer cannot run, and goes on
        out = {"ok": False, "why": f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:140]}"}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
