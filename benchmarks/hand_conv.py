"""A hand-written OpenCL 3x3 convolution (the baseline of shared/notes/pocl-performance.md) next to
the direct and GEMM kernels that examples/vgg.py derives, the plain Listing 4.1 (examples/conv.py)
compiled by default with its sizes fixed (the automatic points), and numpy's im2col + GEMM, in one run.

    python benchmarks/hand_conv.py [--size 64] [--cin 64] [--cout 64] [--repeat 5] [--tune SECONDS]

The hand-written kernel gives each work-item two float8 along an output row (16 pixels) times
four output channels (8 float8 accumulators); the input rows are read through aligned
`float8` pointer casts and the shifted windows built by swizzles. It reads the image as padded
[C][H+2][W+8] and writes [M][H][W] (the host rearranges the arrays; only kernel time is
measured, as for every row). Not a test: it prints one table; timings on a shared machine are
noisy, so the contenders are interleaved and the median of `--repeat` runs is reported.
With `--tune S`, `lift.tune` first searches the direct variant's points (vgg.annotated without
the im2col point: register blocking, vector width, tiling, flattening, mapping) for S seconds,
and the tuned program runs interleaved with the others.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import conv  # noqa: E402
import vgg  # noqa: E402
from _common import settle_blas  # noqa: E402

import lift  # noqa: E402
from lift.arith import as_arith  # noqa: E402
from lift.plan import BufferSpec, KernelArg, KernelSource, Launch  # noqa: E402
from lift.program import Program  # noqa: E402
from lift.types import Array, Float  # noqa: E402

SRC = """
#define C {C}
#define H {H}
#define W {W}
#define WP (W + 8)
kernel void conv_hand(global const float* in, global const float* w, global float* out) {{
  int x0 = get_global_id(0) * 16, y = get_global_id(1), m0 = get_global_id(2) * 4;
  float8 acc[4][2];
  for (int j = 0; j < 4; j++) {{ acc[j][0] = (float8)(0.0f); acc[j][1] = (float8)(0.0f); }}
  for (int c = 0; c < C; c++) {{
    for (int ky = 0; ky < 3; ky++) {{
      global const float* row = in + (c * (H + 2) + y + ky) * WP + x0;
      float8 a = *(global const float8*)(row);
      float8 b = *(global const float8*)(row + 8);
      float8 d = *(global const float8*)(row + 16);
      float8 l0[3] = {{a, (float8)(a.s1234, a.s567, b.s0), (float8)(a.s2345, a.s67, b.s01)}};
      float8 l1[3] = {{b, (float8)(b.s1234, b.s567, d.s0), (float8)(b.s2345, b.s67, d.s01)}};
      for (int kx = 0; kx < 3; kx++) {{
        for (int j = 0; j < 4; j++) {{
          float wv = w[(((m0 + j) * 3 + ky) * 3 + kx) * C + c];
          acc[j][0] += l0[kx] * wv;
          acc[j][1] += l1[kx] * wv;
        }}
      }}
    }}
  }}
  for (int j = 0; j < 4; j++) {{
    global float* o = out + ((m0 + j) * H + y) * W + x0;
    *(global float8*)(o) = acc[j][0];
    *(global float8*)(o + 8) = acc[j][1];
  }}
}}
"""


def plan(c: int, h: int, w: int, m: int) -> KernelSource:
    """The hand-written kernel for one layer (sizes compiled in); W a multiple of 16, M of 4."""
    if w % 16 or m % 4:
        raise ValueError("the hand-written kernel needs W % 16 == 0 and M % 4 == 0")
    n_in, n_w, n_out = c * (h + 2) * (w + 8), m * 9 * c, m * h * w
    bufs = (BufferSpec("in", Float, as_arith(n_in), role="input", param=0),
            BufferSpec("w", Float, as_arith(n_w), role="input", param=1),
            BufferSpec("out", Float, as_arith(n_out), role="output"))
    args = tuple(KernelArg("buffer", b) for b in ("in", "w", "out"))
    launch = Launch("conv_hand", args, (as_arith(w // 16), as_arith(h), as_arith(m // 4)))
    return KernelSource(SRC.format(C=c, H=h, W=w), ("conv_hand",), bufs, (launch,), ("out",),
                        Array(Float, n_out), (), (Array(Float, n_in), Array(Float, n_w)))


def hand_layout(inp: np.ndarray) -> np.ndarray:
    """[H][W][C] -> padded [C][H+2][W+8] (one zero row above and below, one zero column left)."""
    h, w, c = inp.shape
    out = np.zeros((c, h + 2, w + 8), dtype=np.float32)
    out[:, 1:h + 1, 1:w + 1] = inp.transpose(2, 0, 1)
    return out.reshape(-1)


def run_hand(inp: np.ndarray, wts: np.ndarray) -> tuple[Program, tuple[np.ndarray, np.ndarray]]:
    """The hand-written program and its (rearranged) arguments."""
    h, w, c = inp.shape
    return Program(plan(c, h, w, wts.shape[0])), (hand_layout(inp), np.ascontiguousarray(wts.reshape(-1)))


def numpy_im2col_gemm(inp: np.ndarray, wts: np.ndarray) -> np.ndarray:
    """numpy's im2col and a float32 matrix product (BLAS)."""
    return vgg.reference(inp, wts)


def plain(inp: np.ndarray, wts: np.ndarray) -> Any:
    """Listing 4.1 written plainly (examples/conv.py), its sizes fixed to the arguments': what
    `lift.compile` does with it by default (the automatic `block_nest` point, rewrites/auto.py)."""
    from lift.interpret import bind_sizes
    from lift.realise import substitute_sizes

    prog = conv.listing_4_1()
    return substitute_sizes(prog, bind_sizes([p.ptype for p in prog.params], (inp, wts), prog))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--cin", type=int, default=64)
    ap.add_argument("--cout", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tune", type=float, default=0.0, help="seconds of lift.tune for the direct variant")
    a = ap.parse_args(argv)
    layer = vgg.Layer(f"{a.cin}->{a.cout}", a.cin, a.size, a.cout)
    inp, wts = vgg.layer_inputs(layer)
    want = vgg.reference(inp.astype(np.float64), wts.astype(np.float64))
    hand, hand_args = run_hand(inp, wts)
    got = np.asarray(hand(*hand_args)).reshape(a.cout, a.size * a.size).T
    progs = {v: lift.compile(vgg.annotated(layer), choices=vgg.choices(layer, v)) for v in ("direct", "gemm")}
    progs["plain (auto points)"] = lift.compile(plain(inp, wts))
    if a.tune > 0:
        tuned = lift.tune(vgg.annotated(layer, im2col=False), inp, wts, budget=a.tune, db=False, auto=False,
                          progress=False)
        progs["tuned direct"] = tuned.best
        print(f"tuned direct: {tuned.stats['candidates']} candidates; choices {tuned.best.choices}")
    checks = {"hand-written OpenCL": bool(np.allclose(got, want, rtol=1e-3, atol=1e-3))}
    for v, p in progs.items():
        out = np.asarray(p(inp, wts)).reshape(a.size * a.size, a.cout)
        checks[f"generated {v}"] = bool(np.allclose(out, want, rtol=1e-3, atol=1e-3))
    checks["numpy im2col+GEMM"] = True
    times: dict[str, list[float]] = {k: [] for k in checks}
    for _ in range(a.repeat):  # interleaved
        times["hand-written OpenCL"] += hand.time(*hand_args, repeat=1)
        for v, p in progs.items():
            times[f"generated {v}"] += p.time(inp, wts, repeat=1)
        t0 = time.perf_counter()
        numpy_im2col_gemm(inp, wts)
        times["numpy im2col+GEMM"].append(time.perf_counter() - t0)
        settle_blas()  # numpy's BLAS threads spin after a call: let them stop before the next kernel
    print(f"conv 3x3, {a.size}x{a.size}, {a.cin} -> {a.cout} channels; median of {a.repeat}, interleaved; "
          f"device {lift.devices.current().name if hasattr(lift.devices.current(), 'name') else ''}")
    for k, ts in times.items():
        s = statistics.median(ts)
        print(f"  {k:32s} {'ok' if checks[k] else 'WRONG':5s} {s * 1e3:9.3f} ms {layer.flops() / s / 1e9:8.2f} GFLOP/s")


if __name__ == "__main__":
    main()
