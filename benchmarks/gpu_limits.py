"""The device's limits, measured by two hand-written kernels run through liftcl's runtime:

- `copy_plan`: out[i] = in[i], a float4 per work-item (16-byte loads and stores, coalesced on a
  GPU): the bandwidth a kernel that reads and writes each byte once can reach;
- `fma_plan`: `CHAINS` independent chains x = x * b + c of `iters` steps per work-item, whose
  multiplier and addend are read from a buffer at run time and whose ends are summed into the
  output, so no compiler can fold or drop them: the FP32 rate (2 flops per step). The steps are
  written `x * b + c`, which OpenCL C contracts into one FMA where the hardware has it (NVIDIA's
  FFMA); an explicit `fma()` is a slow library call on PoCL's CPU device.

Both are `KernelSource` plans like benchmarks/hand.py's; `fma_expected` is the closed form of
the chains, against which the kernel's result is checked.
"""

from __future__ import annotations

import numpy as np

from lift.arith import as_arith
from lift.plan import BufferSpec, KernelArg, KernelSource, Launch
from lift.types import Array, Float, Size

N = Size("N")
CHAINS = 16  # independent chains per work-item: enough instruction-level parallelism to fill the FMA pipes
FMA_ARGS = (0.999, 0.001)  # x <- x * 0.999 + 0.001 converges to 1: no overflow, no denormals

COPY_SRC = """
kernel void copy4(global const float4* restrict in, global float4* restrict out) {
  size_t i = get_global_id(0);
  out[i] = in[i];
}
"""


def copy_plan() -> KernelSource:
    """out = in over N floats (N a multiple of 4): 8 N bytes move."""
    bufs = (BufferSpec("in", Float, N, role="input", param=0), BufferSpec("out", Float, N, role="output"))
    launch = Launch("copy4", (KernelArg("buffer", "in"), KernelArg("buffer", "out")), (N // 4,))
    return KernelSource(COPY_SRC, ("copy4",), bufs, (launch,), ("out",), Array(Float, N), ("N",), (Array(Float, N),))


def fma_src(iters: int) -> str:
    """`CHAINS` chains x_k <- x_k * b + c, `iters` steps, starting from seed[i] + k / 64."""
    xs = [f"x{k}" for k in range(CHAINS)]
    init = " ".join(f"float {x} = s + {k}.0f / 64.0f;" for k, x in enumerate(xs))
    steps = " ".join(f"{x} = {x} * b + c;" for x in xs)
    total = " + ".join(xs)
    return (f"kernel void fma_chain(global const float* bc, global const float* seed, global float* out) {{\n"
            f"  size_t i = get_global_id(0);\n  float b = bc[0], c = bc[1], s = seed[i];\n  {init}\n"
            f"  for (int t = 0; t < {iters}; t++) {{ {steps} }}\n"
            f"  out[i] = {total};\n}}\n")


def fma_plan(iters: int) -> KernelSource:
    """One work-item per seed (N of them): 2 * CHAINS * iters flops each."""
    bufs = (BufferSpec("bc", Float, as_arith(2), role="input", param=0),
            BufferSpec("seed", Float, N, role="input", param=1), BufferSpec("out", Float, N, role="output"))
    args = tuple(KernelArg("buffer", b) for b in ("bc", "seed", "out"))
    return KernelSource(fma_src(iters), ("fma_chain",), bufs, (Launch("fma_chain", args, (N,)),), ("out",),
                        Array(Float, N), ("N",), (Array(Float, 2), Array(Float, N)))


def fma_expected(seed: np.ndarray, iters: int) -> np.ndarray:
    """The chains' sum in float64: x_t = b^t x_0 + c (1 - b^t) / (1 - b), summed over the chains."""
    b, c = FMA_ARGS
    bt = b ** iters
    x0 = seed.astype(np.float64)[:, None] + np.arange(CHAINS) / 64.0
    return (bt * x0 + c * (1 - bt) / (1 - b)).sum(axis=1)


def fma_flops(n: int, iters: int) -> float:
    return 2.0 * CHAINS * iters * n
