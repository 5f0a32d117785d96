"""Equal meaning, equal speed: several spellings of each family, plain `lift.compile` (or tuned),
timed interleaved in one run; each spelling's speed over its family's fastest spelling, and its
call's over numpy.

    python benchmarks/formulations.py [--tune SECONDS] [--quick] [--only matmul,dot,...] [--rounds R]

Spellings (lift/spellings.py): the built-in one; the user's own add/mult (`own_ops`, commuted
too); a function of the zipped pair (`pair`); one fused fold step (`fused`); the other zip order;
transposes that cancel; map fission; a `let`; and combinations. Sizes as issue 25 asks: matmul
768^3, dot 2^22, gemv 4096^2, conv 64->64 3x3 on 64x64 (padded), stencil 2^22 (3-point sum).

Each round times, in a shuffled order, every spelling's kernels (the fastest of 3 runs of
`Program.time`: summed kernel events, transfers excluded), every spelling's call `prog(*arrays)`
(numpy arrays in, numpy arrays out: what a user times; the median wall time of 3 calls after a
warm-up) and numpy (the median wall time of 3 runs of the same operation, then a pause while its
BLAS threads settle); each column is the median over the rounds. Per spelling: kernel ms, `call
ms`, the kernel's throughput, `x of best` (the family's fastest kernel time over this kernel's)
and `call x numpy` (numpy's time over the call's: above 1, the call is faster); the family's line
gives numpy's time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

from _common import call_seconds, numpy_seconds  # noqa: E402
from test_normalise import _conv, _dot, _gemv, _inputs, _matmul, _stencil  # noqa: E402

import lift  # noqa: E402
from lift.spellings import spell  # noqa: E402

SPELLINGS = {
    "built-in": (), "own add/mult": ("own_ops",), "pair function": ("pair",), "fused step": ("fused",),
    "zip order": ("zip_order",), "own + fused": ("own_ops", "fused"), "pair + zip order": ("pair", "zip_order"),
    "transposes + let": ("transposes", "let"), "fission": ("fission",),
}
FAMILIES = {"matmul": (_matmul, 768, 256), "dot": (_dot, 1 << 22, 1 << 16), "gemv": (_gemv, 4096, 512),
            "conv": (lambda n: _conv(n, 64), 64, 16), "stencil": (_stencil, 1 << 22, 1 << 16)}


def _conv_numpy(inp: np.ndarray, wts: np.ndarray) -> np.ndarray:
    """_conv's meaning: out[y][x][k] = sum over (i, j, c) of padded[y + i][x + j][c] * wts[k][i][j][c]."""
    n = inp.shape[0]
    padded = np.pad(inp, ((1, 1), (1, 1), (0, 0)))
    out = np.zeros((n, n, wts.shape[0]), dtype=inp.dtype)
    for i in range(3):
        for j in range(3):
            out += padded[i:i + n, j:j + n, :] @ wts[:, i, j, :].T
    return out


def _stencil_numpy(x: np.ndarray) -> np.ndarray:
    padded = np.pad(x, 1)
    return padded[:-2] + padded[1:-1] + padded[2:]


NUMPY = {"matmul": lambda a, b: a @ b, "dot": np.dot, "gemv": lambda a, v: a @ v, "conv": _conv_numpy,
         "stencil": _stencil_numpy}  # each family's operation in numpy, on the same inputs


def work(family: str, n: int) -> tuple[float, str]:
    """The work of one run: (amount, unit) for the family at size n."""
    if family == "matmul":
        return 2 * n ** 3 / 1e9, "GFLOP/s"
    if family == "conv":
        return 2 * n * n * 64 * 64 * 9 / 1e9, "GFLOP/s"
    if family == "gemv":
        return 4 * n * n / 1e9, "GB/s"
    return 8 * n / 1e9, "GB/s"  # dot: two floats read per element; stencil: one read, one written


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tune", type=float, default=0.0, help="tune each spelling for this many seconds")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    ap.add_argument("--only", default="", help="comma-separated families")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--spellings", default="", help="comma-separated spelling names (default: all)")
    args = ap.parse_args(argv)
    families = [f for f in FAMILIES if not args.only or f in args.only.split(",")]
    print(f"device: {lift.devices.current().name}; spellings timed interleaved, medians of {args.rounds} rounds")
    for family in families:
        make, full, quick = FAMILIES[family]
        n = quick if args.quick else full
        canon = make(n)
        arrays = _inputs(canon, seed=1)
        want = None
        progs: dict[str, lift.Program] = {}
        compile_s: dict[str, float] = {}
        for name, kinds in SPELLINGS.items():
            if args.spellings and name not in args.spellings.split(","):
                continue
            prog = spell(canon, *kinds) if kinds else canon
            if kinds and str(prog) == str(canon):
                continue  # the spelling has no site in this family
            t = time.perf_counter()
            k = lift.tune(prog, *arrays, budget=args.tune, progress=False).best if args.tune else lift.compile(prog)
            compile_s[name] = time.perf_counter() - t
            got = k(*arrays)
            want = got if want is None else want
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
            progs[name] = k
        np_fn = NUMPY[family]
        np.testing.assert_allclose(np_fn(*arrays), want, rtol=1e-3, atol=1e-3)
        contenders = [*((name, "kernel") for name in progs), *((name, "call") for name in progs), ("numpy", "")]
        times: dict[tuple[str, str], list[float]] = {c: [] for c in contenders}
        for _ in range(args.rounds):
            order = list(contenders)
            random.shuffle(order)
            for name, what in order:
                if what == "kernel":
                    times[name, what].append(min(progs[name].time(*arrays, repeat=3)))
                elif what == "call":
                    times[name, what].append(call_seconds(progs[name], arrays, 3))
                else:
                    times[name, what].append(numpy_seconds(partial(np_fn, *arrays), 3))  # then BLAS settles
        med = {c: statistics.median(ts) for c, ts in times.items()}
        best = min(med[name, "kernel"] for name in progs)
        np_s = med["numpy", ""]
        amount, unit = work(family, n)
        tag = f" tuned {args.tune:g} s" if args.tune else ""
        print(f"\n{family} (n={n}){tag}: numpy {np_s * 1e3:.3f} ms")
        for name in progs:
            s, call = med[name, "kernel"], med[name, "call"]
            pts = ",".join(sorted(progs[name].choices.points)) or "-"
            print(f"  {name:18s} {s * 1e3:9.3f} ms  call {call * 1e3:9.3f} ms  {amount / s:7.1f} {unit}"
                  f"  x{best / s:5.2f} of best  call x{np_s / call:6.2f} numpy"
                  f"  (compile {compile_s[name]:.2f} s, points {pts})")


if __name__ == "__main__":
    main()
