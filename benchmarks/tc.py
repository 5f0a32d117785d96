"""Section 6 of the Tensor Comprehensions paper through liftcl: each workload compiled from its TC
(`lift.tc`), next to the same computation written by hand as a lambda (benchmarks/seed_programs.py)
and numpy, in one run. Kernel times (`tc ms`, `hand ms`) are medians of `Program.time` (kernel
events, transfers excluded); call times (`tc call ms`, `hand call ms`) are medians of the wall time
of the call `prog(*arrays)` (numpy arrays in, numpy arrays out: what a user times); numpy's time is
the median wall time of the same operation; each program's kernel and call, and numpy, are timed
round-robin in one loop. `--tune S` adds tuned columns (S seconds) for the TC program and the
hand-made one, timed alike. The ratio `tc/hand` is the hand-made kernel's time over the TC's (>= 0.9
is the issue's bar); `tc call x np` and `hand call x np` are numpy's time over the program's call
(above 1: the call is faster than numpy).

    python benchmarks/tc.py [--quick] [--tune 30] [--repeat 5] [--only tmm,tbmm]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import seed_programs as hand  # noqa: E402
from _common import call_seconds, close, settle_blas  # noqa: E402

import lift  # noqa: E402

TC = Path(__file__).resolve().parent.parent / "examples" / "tc"
MLP3_O4 = """
def MLP3(float(B,N) I, float(O,N) W2, float(O) B2, float(P,O) W3, float(P) B3,
         float(Q,P) W4, float(Q) B4) -> (O4) {
    O2(b,o) = B2(o)
    O2(b,o) += I(b,n) * W2(o,n)
    O2(b,o) = fmaxf(O2(b,o), 0)
    O3(b,p) = B3(p)
    O3(b,p) += O2(b,o) * W3(p,o)
    O3(b,p) = fmaxf(O3(b,p), 0)
    O4(b,q) = B4(q)
    O4(b,q) += O3(b,p) * W4(q,p)
    O4(b,q) = fmaxf(O4(b,q), 0)
}
"""  # examples/tc/mlp3.tc returning only O4, the layer the classifier reads, as the hand-made mlp3 does


@dataclass(frozen=True)
class Workload:
    name: str
    tc: Callable[[], Any]
    hand: Callable[[], Any]
    shapes: Callable[..., tuple]
    numpy: Callable[..., Any]
    full: tuple
    quick: tuple
    fixed: bool = False  # built for its sizes (gconv: as the hand-made one, whose filter sizes are constants)


def _relu_fc(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.maximum(x @ w.T + b, 0)


def _tc(file: str, name: str) -> Callable[..., Any]:
    return lambda **sizes: lift.tc((TC / file).read_text(), file=str(TC / file), sizes=sizes or None)[name]


KH = KW = 3  # gconv's filter (the paper's table gives N, G, F, C, W, H)


def gconv_hand(n: int, g: int, f: int, c: int, w: int, h: int) -> Any:
    """Grouped convolution by hand, conv.py's Listing 4.1 per group: flat windows zipped with flat filters,
    the bias added after the sum (the TC's order)."""
    flt = lift.Float

    def group(xg: Any, wb: Any) -> Any:  # xg [C][H][W]; wb: ([F][C][KH][KW], [F]) of this group
        wins = lift.map_nd(2, lift.join_nd(3)) << lift.transpose_nd(1, 2, 0, 3, 4) \
            << lift.map(lift.slide_nd(2, (KH, KW), 1)) << xg  # [H'][W'][C*KH*KW]
        return lift.map(lambda fb: lift.map_nd(2, lambda win: lift.add(lift.reduce(lift.add, 0.0)
                        << lift.map(lift.mult) << lift.zip(win, fb[0]), fb[1])) << wins) \
            << lift.zip(lift.map(lift.join_nd(3)) << wb[0], wb[1])

    def arr(t: Any, *dims: int) -> Any:
        for d in reversed(dims):
            t = lift.Array(t, d)
        return t

    return lift.fun([arr(flt, n, g, c, h, w), arr(flt, g, f, c, KH, KW), arr(flt, f)],
                    lambda x, w1, b: lift.map(lambda xn: lift.map(lambda gw: group(gw[0], (gw[1], b)))
                                              << lift.zip(xn, w1)) << x)


def _gconv_numpy(x: np.ndarray, w1: np.ndarray, b: np.ndarray) -> np.ndarray:
    oh, ow = x.shape[3] - KH + 1, x.shape[4] - KW + 1
    out = np.zeros((x.shape[0], x.shape[1], w1.shape[1], oh, ow), dtype=x.dtype)
    for i in range(KH):
        for j in range(KW):
            out += np.einsum("ngchw,gfc->ngfhw", x[:, :, :, i:i + oh, j:j + ow], w1[:, :, :, i, j])
    return out + b[None, None, :, None, None]


WORKLOADS = [
    Workload("tmm", _tc("tmm.tc", "tmm"), hand.tmm, lambda m, n, k: ((m, k), (n, k)), lambda a, b: a @ b.T,
             (128, 256, 32), (64, 128, 32)),  # the paper's (M, K, N) = (128, 32, 256)
    Workload("tmm", _tc("tmm.tc", "tmm"), hand.tmm, lambda m, n, k: ((m, k), (n, k)), lambda a, b: a @ b.T,
             (128, 1024, 1024), (128, 256, 256)),
    Workload("tbmm", _tc("tbmm.tc", "tbmm"), hand.tbmm, lambda b, n, m, k: ((b, n, m), (b, k, m)),
             lambda x, y: np.einsum("bnm,bkm->bnk", x, y), (500, 26, 72, 26), (100, 26, 72, 26)),
    Workload("gconv", lambda n, g, f, c, w, h: _tc("gconv.tc", "gconv")(N=n, G=g, F=f, C=c, W=w, H=h, KH=KH, KW=KW),
             gconv_hand, lambda n, g, f, c, w, h: ((n, g, c, h, w), (g, f, c, KH, KW), (f,)), _gconv_numpy,
             (32, 32, 16, 16, 14, 14), (4, 8, 16, 16, 14, 14), fixed=True),
    Workload("MLP3", lambda: lift.tc(MLP3_O4)["MLP3"], hand.mlp3,
             lambda b, n, o, p, q: ((b, n), (o, n), (o,), (p, o), (p,), (q, p), (q,)),
             lambda x, w2, b2, w3, b3, w4, b4: _relu_fc(_relu_fc(_relu_fc(x, w2, b2), w3, b3), w4, b4),
             (128, 1024, 512, 256, 128), (32, 256, 128, 64, 32)),
]


def _inputs(shapes: tuple) -> tuple:
    rng = np.random.default_rng(0)
    return tuple(rng.random(s, dtype=np.float32) - np.float32(0.5) for s in shapes)


def _timed(progs: dict[str, Any], args: tuple, np_fn: Callable[[], Any], repeat: int) -> dict[str, float]:
    """Median seconds of each program's kernels (key: the program's), of its call (key + "_call")
    and of numpy ("numpy"), measured round-robin: each round times every program's kernels and then
    its call, then numpy."""
    times: dict[str, list[float]] = {k: [] for k in [*(x for k in progs for x in (k, f"{k}_call")), "numpy"]}
    for _ in range(repeat):
        for k, p in progs.items():
            times[k].append(statistics.median(p.time(*args, repeat=1)))
            times[f"{k}_call"].append(call_seconds(p, args, 1))
        start = time.perf_counter()
        np_fn()
        times["numpy"].append(time.perf_counter() - start)
        settle_blas()
    return {k: statistics.median(v) for k, v in times.items() if v}


def run(w: Workload, sizes: tuple, tune: float, repeat: int) -> dict:
    """Compile (and tune) both programs, check them against numpy, time them."""
    args = _inputs(w.shapes(*sizes))
    want = w.numpy(*(a.astype(np.float64) for a in args))
    row: dict = {"name": w.name, "sizes": "x".join(map(str, sizes)), "status": "ok"}
    progs: dict[str, Any] = {}
    builders = [(k, (lambda b=b: b(*sizes)) if w.fixed else b) for k, b in (("tc", w.tc), ("hand", w.hand))]
    for kind, build in builders:
        start = time.perf_counter()
        progs[kind] = lift.compile(build())
        ok, err = close(progs[kind](*args), want, rtol=1e-3, atol=1e-3)
        row[f"{kind}_compile_s"] = time.perf_counter() - start
        if tune > 0:
            try:
                progs[f"{kind}_tuned"] = lift.tune(build(), *args, budget=tune, db=False, progress=False).best
            except Exception as e:  # noqa: BLE001 - the table says which tune failed and goes on
                row["status"] = f"{kind} tune failed: {type(e).__name__}"
                print(f"{w.name} {kind}: tune failed: {type(e).__name__}: {e}", file=sys.stderr)
                continue
            ok2, err2 = close(progs[f"{kind}_tuned"](*args), want, rtol=1e-3, atol=1e-3)
            ok, err = ok and ok2, max(err, err2)
        if not ok:
            row["status"] = f"WRONG {kind} (max error {err:.3g})"
    row.update(_timed(progs, args, lambda: w.numpy(*args), repeat))
    return row


def _ms(s: float | None) -> str:
    return f"{s * 1e3:9.3f}" if s is not None else f"{'-':>9s}"


def _ratio_label(prog: str) -> str:
    """The header of a program's `call x np` column (numpy's time over the call's)."""
    return f"{prog} call x np"


def _width(col: str) -> int:
    """The printed width of a time column: its header's, at least 11."""
    return max(11, len(col.replace("_call", " call")) + 3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--tune", type=float, default=0.0, metavar="S", help="also tune both programs for S seconds")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated workload names")
    opts = ap.parse_args(argv)
    only = set(filter(None, opts.only.split(",")))
    print(f"device: {lift.devices.current().name}")
    progs = ["tc", "hand"] + (["tc_tuned", "hand_tuned"] if opts.tune > 0 else [])
    cols = ["tc", "tc_call", "hand", "hand_call", "numpy"] + (
        ["tc_tuned", "tc_tuned_call", "hand_tuned", "hand_tuned_call"] if opts.tune > 0 else [])
    print(f"{'workload':8s} {'sizes':20s} {'status':24s} "
          + " ".join(f"{c.replace('_call', ' call') + ' ms':>{_width(c)}s}" for c in cols)
          + "   tc/hand" + ("  tuned tc/hand" if opts.tune > 0 else "")
          + "".join(f"  {_ratio_label(p)}" for p in progs))
    worst = 0
    for w in WORKLOADS:
        if only and w.name not in only:
            continue
        row = run(w, w.quick if opts.quick else w.full, opts.tune, opts.repeat)
        ratio = row["hand"] / row["tc"]
        line = f"{row['name']:8s} {row['sizes']:20s} {row['status'][:24]:24s} " + " ".join(
            f"{_ms(row.get(c)):>{_width(c)}s}" for c in cols) + f"   {ratio:7.2f}"
        if opts.tune > 0:
            tuned = row["hand_tuned"] / row["tc_tuned"] if "hand_tuned" in row and "tc_tuned" in row else None
            line += f"  {tuned:13.2f}" if tuned is not None else f"  {'-':>13s}"
        for p in progs:
            call = row.get(f"{p}_call")
            width = len(_ratio_label(p))
            line += f"  {row['numpy'] / call:{width}.2f}" if call else f"  {'-':>{width}s}"
        print(line, flush=True)
        worst = max(worst, row["status"] != "ok")
    return worst


if __name__ == "__main__":
    sys.exit(main())
