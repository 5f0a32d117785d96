"""`bench.py --tune S`: one table, in one run, of numpy, the best hand-written OpenCL kernel,
liftcl's default compile and liftcl tuned for S seconds, from the plain high-level programs.

    python benchmarks/bench.py --tune 120 [--json OUT] [--only axpy,dot,...] [--quick]

Not a test. Every contender is checked against a float64 numpy result, then all contenders of
a kernel are timed round-robin (`ROUNDS` rounds of `repeat` runs, interleaved, in a new order
every round, medians; numpy's BLAS threads let settle after its turn), so machine load hits them
alike. Bandwidth kernels are also compared with the STREAM triad, timed in the same rounds as
the kernel's contenders (the best of float8 and float16 per work-item each round: "x triad"
with plain stores, STREAM's measure; "x strm" the best with streaming stores too, the
bandwidth a kernel writing with them can reach), so a load spike during one kernel does not
skew its ratio to a triad measured minutes before. The triad streams 48 MiB (--quick) or
192 MiB; a kernel whose data fits the last-level cache can beat it.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import axpy  # noqa: E402
import conv  # noqa: E402
import dot  # noqa: E402
import gemv  # noqa: E402
import hand  # noqa: E402

import lift  # noqa: E402
from lift import Array, Float, Size, fun, map, pad, reduce, slide, transpose, zip  # noqa: E402
from lift.explore.points import describe  # noqa: E402
from lift.files import write_atomic  # noqa: E402
from lift.program import Program  # noqa: E402

ROUNDS = 5
N, M, K = Size("N"), Size("M"), Size("K")


def stencil_program() -> Any:
    """out[i] = x[i-1] + x[i] + x[i+1], zero outside: map(reduce(+)) << slide(3, 1) << pad(1, 1, 0)."""
    return fun([Array(Float, N)], lambda x: map(lambda w: reduce(lift.add, 0.0) << w)
               << slide(3, 1) << pad(1, 1, 0.0) << x)


def matmul_program() -> Any:
    """C = A B, B read column-wise through `transpose` (B is [K][N] row-major)."""
    return fun([Array(Array(Float, K), M), Array(Array(Float, N), K)],
               lambda a, b: map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c))
                                << (transpose << b)) << a)


def im2col_conv(inp: np.ndarray, wts: np.ndarray) -> np.ndarray:
    """numpy's convolution as im2col + GEMM: [H][W][C] (padded by 1) x [M][3][3][C] -> [H][W][M]."""
    h, w, c = inp.shape
    xp = np.pad(inp, ((1, 1), (1, 1), (0, 0)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(0, 1))  # [H][W][C][3][3]
    cols = np.ascontiguousarray(cols.transpose(0, 1, 3, 4, 2)).reshape(h * w, 9 * c)
    return (cols @ wts.reshape(wts.shape[0], 9 * c).T).reshape(h, w, wts.shape[0])


@dataclass
class Kernel:
    """One row of the table: the plain program, its arguments, numpy and hand-written contenders."""

    name: str
    program: Any
    args: tuple
    want: Any
    numpy: Callable[[], Any]
    hand: dict[str, Callable[[], Any]]
    bytes: float = 0.0
    flops: float = 0.0
    rtol: float = 1e-3
    results: dict[str, Any] = field(default_factory=dict)


def kernels(quick: bool) -> list[Kernel]:
    import bench  # the axpy, dot and gemv baselines live there

    rng = np.random.default_rng(0)
    log2n, rows, mm, cv = (22, 2048, 512, 32) if quick else (24, 4096, 1024, 64)
    n = 1 << log2n
    a, x, y = axpy.inputs(log2n)
    xs, ys = dot.inputs(log2n)
    gm, gv = gemv.inputs(rows, rows)
    sx = rng.random(n, dtype=np.float32)
    xp = np.pad(sx.astype(np.float64), 1)
    ma, mb = rng.random((mm, mm), dtype=np.float32), rng.random((mm, mm), dtype=np.float32)
    ci, cw = conv.inputs(cv, cv, cv)
    out = [
        Kernel("axpy", axpy.high_level(), (a, x, y), np.float64(a) * x + y, lambda: a * x + y,
               {"float16 per work-item": lambda: Program(bench.axpy_plan())}, bytes=3.0 * x.nbytes),
        Kernel("dot", dot.high_level(), (xs, ys), np.dot(xs.astype(np.float64), ys), lambda: np.dot(xs, ys),
               {"float16 chunks": lambda: Program(bench.dot_plan())}, bytes=2.0 * xs.nbytes),
        Kernel("stencil", stencil_program(), (sx,), xp[:-2] + xp[1:-1] + xp[2:],
               lambda: np.convolve(sx, np.ones(3, np.float32), "same"),
               {"float8 per work-item": lambda: Program(hand.stencil_plan())}, bytes=2.0 * sx.nbytes),
        Kernel("gemv", gemv.high_level(), (gm, gv), gm.astype(np.float64) @ gv, lambda: gm @ gv,
               {"float8 row per work-item": lambda: Program(bench.gemv_plan())}, bytes=float(gm.nbytes)),
        Kernel("matmul", matmul_program(), (ma, mb), ma.astype(np.float64) @ mb, lambda: ma @ mb,
               {"4x16 block, float8": lambda: Program(hand.matmul_plan(4, 16)),
                "8x8 block, float8": lambda: Program(hand.matmul_plan(8, 8)),
                "4x16 packed, float8": lambda: Program(hand.packed_plan(4, 16))}, flops=2.0 * mm ** 3),
        Kernel("conv", conv.listing_4_1(), (ci, cw), im2col_conv(ci.astype(np.float64), cw.astype(np.float64)),
               lambda: im2col_conv(ci, cw), _hand_conv(ci, cw), flops=2.0 * cv * cv * cv * 9 * cv),
    ]
    return out


class _Own:
    """A hand-written program that runs on its own (rearranged) arguments; its output is put back
    in the reference's layout by `post`. Only kernel time is measured, as for every contender."""

    def __init__(self, prog: Program, args: tuple, post: Callable[[Any], Any]) -> None:
        self.prog, self.args, self.post = prog, args, post

    def __call__(self, *_: Any) -> Any:
        return self.post(self.prog(*self.args))

    def time(self, *_: Any, repeat: int = 5) -> list[float]:
        return self.prog.time(*self.args, repeat=repeat)


def _hand_conv(inp: np.ndarray, wts: np.ndarray) -> dict[str, Callable[[], Any]]:
    """The hand-written conv of benchmarks/hand_conv.py (reads [C][H+2][W+8], writes [M][H][W])."""
    try:
        import hand_conv
    except ImportError:
        return {}
    h, w, _ = inp.shape
    m = wts.shape[0]

    def make() -> _Own:
        prog, args = hand_conv.run_hand(inp, wts)
        return _Own(prog, args, lambda out: np.asarray(out).reshape(m, h * w).T.reshape(h, w, m))

    return {"2 float8 x 4 channels": make}


def triads(quick: bool) -> list[tuple[Program, tuple[Any, ...], float, bool]]:
    """STREAM triad programs (float8 and float16 per work-item, plain and streaming stores: the
    best of them is the bandwidth a kernel can reach), checked, with their arguments and bytes moved."""
    n = 1 << (22 if quick else 24)
    rng = np.random.default_rng(1)
    s, b, c = np.float32(3.0), rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = []
    for w, stream in ((8, False), (16, False), (8, True), (16, True)):
        p = Program(hand.triad_plan(w, stream))
        if not np.allclose(p(s, b, c), b + s * c, rtol=1e-5):
            raise RuntimeError(f"the triad kernel (float{w}, stream={stream}) is wrong")
        out.append((p, (s, b, c), 3.0 * 4 * n, stream))
    return out


def _check(got: Any, want: Any, rtol: float) -> str:
    g, w = np.asarray(got, dtype=np.float64).reshape(np.shape(want)), np.asarray(want, dtype=np.float64)
    scale = float(np.max(np.abs(w))) if w.size else 1.0
    err = float(np.max(np.abs(g - w))) if w.size else 0.0
    if err <= rtol * max(scale, 1e-30):
        return "ok"
    return "inexact" if err <= 0.05 * max(scale, 1e-30) else "WRONG"


def contenders(k: Kernel, budget: float) -> dict[str, tuple[Any, str, str]]:
    """name -> (program or callable, check verdict, note); failures have program None."""
    out: dict[str, tuple[Any, str, str]] = {}
    for label, make in k.hand.items():
        out[f"hand: {label}"] = _built(make, k)
    out["liftcl default"] = _built(lambda: lift.compile(k.program), k)
    out["liftcl default, sizes fixed"] = _built(lambda: lift.compile(_fixed(k)), k)
    if budget > 0:
        t0 = time.perf_counter()
        try:
            res = lift.tune(k.program, *k.args, budget=budget, db=False, progress=False)
            prog, note = res.best, f"{len(res.history)} candidates, {time.perf_counter() - t0:.0f} s"
            won = describe(res.best_record.candidate) if res.best_record is not None else ""
            note += "; " + (" ".join(p for p in won.split() if ":" in p) or won)[:70]  # the winner's points
            out["liftcl tuned"] = (prog, _check(prog(*k.args), k.want, k.rtol), note)
        except Exception as e:  # noqa: BLE001 - the table reports failures and goes on
            out["liftcl tuned"] = (None, "FAILED", f"{type(e).__name__}: {str(e).splitlines()[0][:90]}")
    return out


def _fixed(k: Kernel) -> Any:
    """The program with its sizes fixed to the arguments' (the default automatic points of
    `lift.compile` need constant sizes: rewrites.auto.default_points)."""
    from lift.interpret import bind_sizes
    from lift.realise import substitute_sizes

    return substitute_sizes(k.program, bind_sizes([p.ptype for p in k.program.params], k.args, k.program))


def _built(make: Callable[[], Any], k: Kernel) -> tuple[Any, str, str]:
    try:
        prog = make()
        verdict = _check(prog(*k.args), k.want, k.rtol)
        special = getattr(prog, "specialisations", ())  # a program with symbolic sizes: what its call ran
        note = f"call specialised in {special[-1].seconds:.2f} s: {special[-1].reason}"[:120] if special else ""
        return prog, verdict, note
    except Exception as e:  # noqa: BLE001
        return None, "FAILED", f"{type(e).__name__}: {str(e).splitlines()[0][:90]}"


def timed(k: Kernel, progs: dict[str, tuple[Any, str, str]], repeat: int,
          triad: list[tuple[Program, tuple[Any, ...], float, bool]]) -> tuple[dict[str, float], tuple | None]:
    """Round-robin: every contender (and numpy, and for a bandwidth kernel the STREAM triad, the best
    width each round) timed in each of ROUNDS rounds; medians, and the triad's bytes/s with plain
    stores (STREAM's measure) and the best with or without streaming stores (or None)."""
    from _common import numpy_seconds

    runs: dict[str, list[float]] = {"numpy": []}
    triad_bps: list[tuple[float, float]] = []
    names = ["numpy", *(["triad"] if k.bytes else []), *progs]
    order = random.Random(0)
    for _ in range(ROUNDS):
        # a new order every round, so no contender always runs right after another
        for name in order.sample(names, len(names)):
            if name == "numpy":
                runs["numpy"].append(numpy_seconds(k.numpy, repeat))  # returns once BLAS has settled
                continue
            if name == "triad":
                bps = [(nb / statistics.median(p.time(*a, repeat=repeat)), stream) for p, a, nb, stream in triad]
                triad_bps.append((max(b for b, st in bps if not st), max(b for b, _ in bps)))
                continue
            prog, verdict, _ = progs[name]
            if prog is not None and verdict != "WRONG":
                try:
                    runs.setdefault(name, []).append(statistics.median(prog.time(*k.args, repeat=repeat)))
                except Exception:  # noqa: BLE001
                    continue
    times = {name: statistics.median(ts) for name, ts in runs.items() if ts}
    if not triad_bps:
        return times, None
    return times, (statistics.median(b for b, _ in triad_bps), statistics.median(b for _, b in triad_bps))


def rate(k: Kernel, seconds: float) -> float:
    """GB/s for bandwidth kernels, GFLOP/s for compute kernels."""
    return (k.bytes if k.bytes else k.flops) / seconds / 1e9


def report(rows: list[dict[str, Any]]) -> None:
    triad = ", ".join(f"{r['kernel']} {r['triad_gbs']:.1f} GB/s ({r['stream_gbs']:.1f} streaming)"
                      for r in rows if r["triad_gbs"])
    print(f"\nSTREAM triad (and with streaming stores), timed beside each bandwidth kernel: {triad or '-'}")
    print(f"{'kernel':8} {'contender':28} {'check':8} {'ms':>10} {'rate':>12}  {'x numpy':>8} {'x hand':>7} "
          f"{'x triad':>7} {'x strm':>7}  note")
    for r in rows:
        for c in r["contenders"]:
            ms = f"{c['seconds'] * 1e3:10.3f}" if c["seconds"] else f"{'-':>10}"
            rt = f"{c['rate']:7.1f} {r['unit']:4}" if c["rate"] else f"{'-':>12}"
            ratios = [f"{c[x]:{w}.2f}" if c.get(x) else f"{'-':>{w}}"
                      for x, w in (("vs_numpy", 8), ("vs_hand", 7), ("vs_triad", 7), ("vs_stream", 7))]
            print(f"{r['kernel']:8} {c['name']:28} {c['check']:8} {ms} {rt}  {' '.join(ratios)}  {c['note']}")


def run(budget: float, quick: bool, repeat: int, only: list[str] | None, json_out: str | None) -> list[dict]:
    dev = lift.devices.current()
    print(f"liftcl summary on {dev.name} ({dev.platform} {dev.driver_version}); tune budget {budget:g} s; "
          f"contenders interleaved, {ROUNDS} rounds x {repeat} runs, medians")
    print(f"device facts: {lift.devices.facts.summary(dev)}")
    triad = triads(quick)
    rows = []
    for k in kernels(quick):
        if only and k.name not in only:
            continue
        progs = contenders(k, budget)
        times, triad_bps = timed(k, progs, repeat, triad)
        hand_best = min((t for n, t in times.items() if n.startswith("hand: ")), default=None)
        unit = "GB/s" if k.bytes else "GFLOP/s"
        cs = []
        for name in ["numpy", *progs]:
            t = times.get(name)
            verdict, note = ("ok", "") if name == "numpy" else progs[name][1:]
            cs.append({"name": name, "check": verdict, "note": note, "seconds": t,
                       "rate": rate(k, t) if t else None,
                       "vs_numpy": times["numpy"] / t if t else None,
                       "vs_hand": hand_best / t if t and hand_best else None,
                       "vs_triad": rate(k, t) * 1e9 / triad_bps[0] if t and triad_bps else None,
                       "vs_stream": rate(k, t) * 1e9 / triad_bps[1] if t and triad_bps else None})
        rows.append({"kernel": k.name, "unit": unit, "contenders": cs,
                     "triad_gbs": triad_bps[0] / 1e9 if triad_bps else None,
                     "stream_gbs": triad_bps[1] / 1e9 if triad_bps else None})
        report(rows[-1:])
    print()
    report(rows)
    if json_out:
        write_atomic(json_out, json.dumps({"device": dev.name, "platform": dev.platform, "budget": budget,
                                           "rows": rows}, indent=1))
        print(f"-> {json_out}")
    return rows
