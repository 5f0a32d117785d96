"""Hand-written OpenCL baselines for matmul (register blocks 4x16 and 8x8 with float8), a
3-point stencil (float8 per work-item) and the STREAM triad (float8 / float16 per work-item),
as `KernelSource` plans run through liftcl's runtime (`Program(plan)`), like bench.py's
axpy/dot/gemv. See ../shared/notes/pocl-performance.md for why these shapes are fast on PoCL.

matmul takes A [M][K] and B [K][N] row-major (the plain program `map(r => map(c => dot(r, c))
<< transpose << B) << A`); a work-item owns a BM x BN block of C, reads B's rows as float8
through aligned pointer casts, broadcasts A's scalars, and keeps BM x BN/8 float8 accumulators.
`packed_plan` first copies A's BM-row blocks and B's BN-column strips into contiguous panels (two
small kernels), so each work-item reads two sequential streams: with power-of-two row strides
(N = K = 1024: 4 KiB) the in-place reads land on a few cache sets and a new page at every step of k.
"""

from __future__ import annotations

from lift.arith import as_arith
from lift.plan import BufferSpec, KernelArg, KernelSource, Launch
from lift.types import Array, Float, Size

M, N, K = Size("M"), Size("N"), Size("K")


def _args(*names: str, sizes: tuple[str, ...] = ()) -> tuple[KernelArg, ...]:
    return tuple(KernelArg("buffer", b) for b in names) + tuple(KernelArg("size", s) for s in sizes)


def matmul_src(bm: int, bn: int) -> str:
    """C block of bm rows x bn columns (bn a multiple of 8) per work-item."""
    v = bn // 8
    accs = [f"c{i}_{j}" for i in range(bm) for j in range(v)]
    lines = [f"kernel void mm{bm}x{bn}(global const float* A, global const float* B, global float* C,",
             "                  int M, int N, int K) {",
             f"  int c = get_global_id(0) * {bn}, r = get_global_id(1) * {bm};",
             "  " + " ".join(f"float8 {a} = (float8)(0.0f);" for a in accs),
             "  for (int k = 0; k < K; k++) {",
             "    global const float8* b = (global const float8*)(B + (size_t)k * N + c);",
             "    " + " ".join(f"float8 b{j} = b[{j}];" for j in range(v)),
             "    " + " ".join(f"float a{i} = A[(size_t)(r + {i}) * K + k];" for i in range(bm))]
    return "\n".join(lines + _block_tail(bm, v)) + "\n"


def _block_tail(bm: int, v: int) -> list[str]:
    """The block's multiply-adds (a_i times b_j into c_i_j), the end of the k loop, the stores of
    the bm x v float8 accumulators into C and the end of the kernel."""
    lines = ["    " + " ".join(f"c{i}_{j} += a{i} * b{j};" for j in range(v)) for i in range(bm)]
    lines += ["  }"]
    for i in range(bm):
        lines.append(f"  {{ global float8* o = (global float8*)(C + (size_t)(r + {i}) * N + c); "
                     + " ".join(f"o[{j}] = c{i}_{j};" for j in range(v)) + " }")
    return lines + ["}"]


def matmul_plan(bm: int, bn: int) -> KernelSource:
    """C = A B with a bm x bn register block per work-item (M % bm == 0, N % bn == 0)."""
    name = f"mm{bm}x{bn}"
    bufs = (BufferSpec("A", Float, M * K, role="input", param=0), BufferSpec("B", Float, K * N, role="input", param=1),
            BufferSpec("C", Float, M * N, role="output"))
    launch = Launch(name, _args("A", "B", "C", sizes=("M", "N", "K")), (N // bn, M // bm))
    return KernelSource(matmul_src(bm, bn), (name,), bufs, (launch,), ("C",), Array(Array(Float, N), M),
                        ("M", "N", "K"), (Array(Array(Float, K), M), Array(Array(Float, N), K)))


def packed_src(bm: int, bn: int) -> str:
    """`matmul_src`'s block reading packed panels: A as [M/bm][K][bm], B as [N/bn][K][bn] (both
    contiguous step after step of k), and the two copy kernels that pack them."""
    v = bn // 8
    accs = [f"c{i}_{j}" for i in range(bm) for j in range(v)]
    lines = [f"kernel void pack_a{bm}(global const float* A, global float* P, int K) {{",
             "  int k = get_global_id(0), rb = get_global_id(1);",
             f"  for (int i = 0; i < {bm}; i++)",
             f"    P[((size_t)rb * K + k) * {bm} + i] = A[((size_t)rb * {bm} + i) * K + k];",
             "}",
             f"kernel void pack_b{bn}(global const float* B, global float* P, int N, int K) {{",
             "  int k = get_global_id(0), cb = get_global_id(1);",
             f"  global const float8* b = (global const float8*)(B + (size_t)k * N + cb * {bn});",
             f"  global float8* p = (global float8*)(P + ((size_t)cb * K + k) * {bn});",
             "  " + " ".join(f"p[{j}] = b[{j}];" for j in range(v)),
             "}",
             f"kernel void mmp{bm}x{bn}(global const float* A, global const float* B, global float* C,",
             "                  int M, int N, int K) {",
             f"  int cb = get_global_id(0), rb = get_global_id(1), c = cb * {bn}, r = rb * {bm};",
             f"  global const float* a = A + (size_t)rb * K * {bm};",
             f"  global const float8* b = (global const float8*)(B + (size_t)cb * K * {bn});",
             "  " + " ".join(f"float8 {x} = (float8)(0.0f);" for x in accs),
             "  for (int k = 0; k < K; k++) {",
             "    " + " ".join(f"float8 b{j} = b[k * {v} + {j}];" for j in range(v)),
             "    " + " ".join(f"float a{i} = a[k * {bm} + {i}];" for i in range(bm))]
    return "\n".join(lines + _block_tail(bm, v)) + "\n"


def packed_plan(bm: int, bn: int) -> KernelSource:
    """C = A B with A and B packed into panels first, then a bm x bn register block per work-item."""
    name = f"mmp{bm}x{bn}"
    bufs = (BufferSpec("A", Float, M * K, role="input", param=0), BufferSpec("B", Float, K * N, role="input", param=1),
            BufferSpec("PA", Float, M * K), BufferSpec("PB", Float, K * N),
            BufferSpec("C", Float, M * N, role="output"))
    launches = (Launch(f"pack_a{bm}", _args("A", "PA", sizes=("K",)), (K, M // bm)),
                Launch(f"pack_b{bn}", _args("B", "PB", sizes=("N", "K")), (K, N // bn)),
                Launch(name, _args("PA", "PB", "C", sizes=("M", "N", "K")), (N // bn, M // bm)))
    ins = (Array(Array(Float, K), M), Array(Array(Float, N), K))
    return KernelSource(packed_src(bm, bn), (f"pack_a{bm}", f"pack_b{bn}", name), bufs, launches, ("C",),
                        Array(Array(Float, N), M), ("M", "N", "K"), ins)


STENCIL_SRC = """
kernel void stencil3(global const float* x, global float* out, int N) {
  int i = get_global_id(0) * 8;
  float8 v = *(global const float8*)(x + i);
  float l = i > 0 ? x[i - 1] : 0.0f;
  float r = i + 8 < N ? x[i + 8] : 0.0f;
  float8 left = (float8)(l, v.s0, v.s1, v.s2, v.s3, v.s4, v.s5, v.s6);
  float8 right = (float8)(v.s1, v.s2, v.s3, v.s4, v.s5, v.s6, v.s7, r);
  *(global float8*)(out + i) = left + v + right;
}
"""


def stencil_plan() -> KernelSource:
    """out[i] = x[i-1] + x[i] + x[i+1] (zero outside), 8 outputs per work-item."""
    bufs = (BufferSpec("x", Float, N, role="input", param=0), BufferSpec("out", Float, N, role="output"))
    launch = Launch("stencil3", _args("x", "out", sizes=("N",)), (N // 8,))
    return KernelSource(STENCIL_SRC, ("stencil3",), bufs, (launch,), ("out",), Array(Float, N), ("N",),
                        (Array(Float, N),))


def triad_src(w: int, stream: bool = False) -> str:
    """The triad kernel; `stream`: its result written with non-temporal stores (the macro
    of lift/codegen/stream.py: no read of the result's lines first, where clang targets x86-64)."""
    from lift.codegen.stream import MACRO

    value = f"((global const float{w}*)b)[i] + s[0] * ((global const float{w}*)c)[i]"
    store = (f"  LIFT_STREAM_STORE(&((global float{w}*)a)[i], {value});\n" if stream
             else f"  ((global float{w}*)a)[i] = {value};\n")
    name = f"triad{w}{'_stream' if stream else ''}"
    return ((MACRO + "\n" if stream else "") +
            f"kernel void {name}(global const float* s, global const float* b, global const float* c,\n"
            f"                    global float* a, int N) {{\n"
            f"  int i = get_global_id(0);\n" + store + "}\n")


def triad_plan(w: int, stream: bool = False) -> KernelSource:
    """STREAM triad a = b + s c, `w` floats per work-item (3 arrays of N floats move)."""
    bufs = (BufferSpec("s", Float, as_arith(1), role="input", param=0),
            BufferSpec("b", Float, N, role="input", param=1), BufferSpec("c", Float, N, role="input", param=2),
            BufferSpec("a", Float, N, role="output"))
    name = f"triad{w}{'_stream' if stream else ''}"
    launch = Launch(name, _args("s", "b", "c", "a", sizes=("N",)), (N // w,))
    return KernelSource(triad_src(w, stream), (name,), bufs, (launch,), ("a",), Array(Float, N), ("N",),
                        (Float, Array(Float, N), Array(Float, N)))


__all__ = ["matmul_plan", "matmul_src", "packed_plan", "packed_src", "stencil_plan", "triad_plan"]
