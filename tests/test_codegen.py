"""Code generation: every OpenCL pattern compiled, run on the device and compared with the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from codegen_oracle import check, floats
from lift import (
    Array,
    Float,
    Int,
    Size,
    Tuple,
    as_scalar,
    as_vector,
    fun,
    get,
    join,
    let,
    map,
    map_glb,
    map_lcl,
    map_seq,
    map_wrg,
    ocl_kernel,
    pad,
    reduce,
    reduce_seq,
    slide,
    slide_nd,
    split,
    to_global,
    to_local,
    to_private,
    transpose,
    transpose_w,
    user_fun,
    value,
    vectorise,
    zip,
)
from lift.arith import Var, floordiv, mod
from lift.codegen import build, generate
from lift.codegen.c_ast import Assign, CCall, CIndex, Decl, For, walk_stmts
from lift.errors import UnsupportedError

N, M, W, H = Size("N"), Size("M"), Size("W"), Size("H")
RNG = np.random.default_rng(7)
X, Y = floats(RNG, 64), floats(RNG, 64)
A2 = floats(RNG, 8, 6)
pytestmark = pytest.mark.device


@user_fun
def sumdiff(a: Float, b: Float) -> Tuple(Float, Float):
    return (a + b, a - b)


def stencil2d():
    """Thesis Listing 2.2."""
    return fun([Array(Array(Float, 3), 3), Array(Array(Float, W), H)],
               lambda weights, data: map_wrg(map_lcl(
                   lambda nbh: to_global(lift.id) << reduce_seq(
                       lambda acc, lr: acc + lr[0] * lr[1], to_private(lift.id) << value(0.0, Float))
                   << zip(join << nbh, join << weights))) << slide_nd(2, 3, 1) << data)


# ------------------------------------------------------------ element-wise maps


def test_map_glb_user_function():
    f = fun([Array(Float, N)], lambda x: map_glb(lambda v: v * 2.0 + 1.0) << x)
    plan = check(f, X)  # the default ND-range covers the array: one trip per work-item, no loop
    assert "int gl = get_global_id(0);" in plan.source and "for (" not in plan.source
    plan = check(f, X, global_size=16)  # fewer work-items than elements: the strided loop of Listing 2.3
    assert "gl += get_global_size(0)" in plan.source


def test_map_glb_two_dimensions():
    f = fun([Array(Array(Float, M), N)], lambda a: map_glb(map_glb(lambda v: v * 2.0), dim=1) << a)
    plan = check(f, A2)
    assert plan.launches[0].global_size == (M, N)


def test_map_seq_and_zip():
    f = fun([Array(Float, N), Array(Float, N)],
            lambda x, y: join << map_glb(map_seq(lift.mult)) << split(4) << zip(x, y))
    check(f, X, Y)


def test_split_join_index_arithmetic_is_simplified():
    f = fun([Array(Float, N)], lambda x: join << map_glb(map_seq(lift.id)) << split(4) << x)
    plan = check(f, X)
    assert "out[4*gl + i] = id(x[4*gl + i])" in plan.source


def test_reduce_seq_dot_product():
    f = fun([Array(Float, N), Array(Float, N)],
            lambda x, y: reduce_seq(lambda acc, p: acc + p[0] * p[1], 0.0) << zip(x, y))
    plan = check(f, X, Y)
    assert "acc = add(acc, mult(x[i], y[i]))" in plan.source


def test_reduce_per_row_private_accumulator():
    f = fun([Array(Float, N)], lambda x: map_glb(lambda r: reduce_seq(lift.add, 0.0) << r) << split(8) << x)
    plan = check(f, X)
    assert "float acc" in plan.source


def test_let_materialises_once():
    f = fun([Array(Float, N)],
            lambda x: let(lambda s: map_glb(lambda v: v * s) << x) << (reduce_seq(lift.add, 0.0) << x))
    plan = check(f, X)
    assert plan.source.count("for (int i = 0; i < N; i++)") == 1


def test_tuple_results_struct_of_arrays():
    f = fun([Array(Float, N), Array(Float, N)], lambda x, y: map_glb(sumdiff) << zip(x, y))
    plan = check(f, X, Y)
    assert plan.outputs == ("out_0", "out_1")


def test_get_of_a_tuple_result():
    f = fun([Array(Float, N), Array(Float, N)],
            lambda x, y: map_glb(lambda p: get(1) << sumdiff(p[0], p[1])) << zip(x, y))
    check(f, X, Y)


def test_generic_user_function_is_mangled_per_type():
    xi = np.arange(64, dtype=np.int32)
    f = fun([Array(Float, N), Array(Int, N)],
            lambda a, b: zip(map_glb(lambda v: v + 1.0) << a, map_glb(lambda v: v + 1) << b))
    plan = check(f, X, xi)
    assert "float add(" in plan.source and "int add_1(" in plan.source


def test_indexing_an_array():
    f = fun([Array(Array(Float, M), N)], lambda a: map_glb(lambda row: lift.id(row[2])) << a)
    check(f, A2)


# ------------------------------------------------------------- layout patterns


def test_pad_is_an_inline_conditional():
    f = fun([Array(Float, N)], lambda x: map_glb(lift.id) << pad(2, 3, 7.0) << x)
    plan = check(f, X)
    assert "? x[gl - 2] : 7.0f" in plan.source


def test_slide_window_sums():
    f = fun([Array(Float, N)], lambda x: map_glb(lambda w: reduce_seq(lift.add, 0.0) << w) << slide(3, 1) << x)
    check(f, X)


def test_transpose_and_transpose_w():
    check(fun([Array(Array(Float, M), N)], lambda a: map_glb(map_seq(lift.id)) << transpose << a), A2)
    check(fun([Array(Array(Float, M), N)], lambda a: transpose_w << map_glb(map_seq(lift.id)) << a), A2)


def test_map_of_layout_function_is_a_view():
    f = fun([Array(Array(Float, M), N)],
            lambda a: map_glb(map_seq(map_seq(lift.id))) << map(split(2)) << a)
    check(f, A2)


# -------------------------------------------------------- work-groups and local memory


def test_listing_2_2_compiles_to_listing_2_3():
    prog = build(stencil2d()).unit
    (kernel,) = prog.kernels
    loops = [s for s in walk_stmts(kernel.body) if isinstance(s, For)]
    assert [lp.kind for lp in loops] == ["wrg", "lcl", "seq"]
    wrg, lcl, red = (lp.var for lp in loops)
    assert loops[0].bound == H - 2 and loops[1].bound == W - 2 and loops[2].bound == 9
    assert "get_group_id(0)" in loops[0].init.text and "get_local_id(0)" in loops[1].init.text
    acc = [s for s in walk_stmts(loops[1].body) if isinstance(s, Decl)]
    assert len(acc) == 1 and acc[0].space == "private"  # toPrivate(id): the accumulator
    update = next(s for s in walk_stmts(loops[2].body) if isinstance(s, Assign))
    reads = _indices(update.rhs)
    assert reads["weights"] == red
    assert reads["data"] == (wrg + floordiv(red, 3)) * W + lcl + mod(red, 3)  # Listing 2.3 line 11
    store = [s for s in loops[1].body.stmts if isinstance(s, Assign)][-1]
    assert store.lhs.base == "out" and store.lhs.index == wrg * (W - 2) + lcl


def test_listing_2_2_runs():
    check(stencil2d(), floats(RNG, 3, 3), floats(RNG, 10, 12))


def _indices(e) -> dict[str, Var]:
    out = {}
    if isinstance(e, CIndex):
        out[e.base] = e.index
    if isinstance(e, CCall):
        for a in e.args:
            out.update(_indices(a))
    return out


def test_tiled_transpose_through_local_memory():
    f = fun([Array(Float, N)], lambda x: join << map_wrg(
        lambda t: map_lcl(lift.id) << join << transpose << split(4) << to_local(map_lcl(lift.id)) << t)
        << split(16) << x)
    plan = check(f, X)
    assert "local float tmp[16]" in plan.source
    assert plan.launches[0].local_size == (16,)


def test_local_memory_of_symbolic_size_is_a_kernel_argument():
    f = fun([Array(Array(Float, M), N)],
            lambda a: map_wrg(lambda row: map_lcl(lift.id) << to_local(map_lcl(lambda v: v * 2.0)) << row) << a)
    plan = check(f, A2)
    local = [b for b in plan.buffers if b.space == "local"]
    assert len(local) == 1 and local[0].count == M


def test_local_size_and_global_size_arguments():
    f = fun([Array(Float, 64)], lambda x: map_glb(lift.id) << x)
    plan = check(f, X, global_size=64)
    assert "for (" not in plan.source  # the ND-range covers the array: one trip, no loop
    plan = check(f, X, global_size=32, local_size=8)
    assert "for (" in plan.source and plan.launches[0].local_size == (8,)


# -------------------------------------------------------------------- vectors


def test_vectorised_map_uses_aligned_vector_pointers():
    f = fun([Array(Float, N), Array(Float, N)],
            lambda x, y: as_scalar << map_glb(vectorise(lift.add, 4)) << zip(as_vector(4) << x, as_vector(4) << y))
    plan = check(f, X, Y)
    assert "((global float4*)x)[gl]" in plan.source and "vload" not in plan.source


def test_unaligned_vector_reads_use_vload():
    f = fun([Array(Float, N)],
            lambda x: map_glb(lambda w: map_seq(vectorise(lift.id, 4)) << as_vector(4) << w)
            << slide(4, 1) << x)
    plan = check(f, X)
    assert "vload4(0, x + gl" in plan.source


def test_vector_of_sixteen_never_uses_vload16():
    f = fun([Array(Float, N)],
            lambda x: map_glb(lambda w: map_seq(vectorise(lift.id, 16)) << as_vector(16) << w)
            << slide(16, 1) << x)
    plan = check(f, X)
    assert "vload16" not in plan.source


# --------------------------------------------------------------- several kernels


def test_ocl_kernels_share_a_temporary_buffer():
    f = fun([Array(Float, N)], lambda x: ocl_kernel(lambda q: map_glb(map_seq(lift.id)) << q) << transpose
            << ocl_kernel(lambda q: map_glb(map_seq(lambda v: v * 2.0)) << q) << split(8) << x)
    plan = check(f, X)
    assert len(plan.kernels) == 2 and [b.role for b in plan.buffers].count("temp") == 1


def test_high_level_program_is_lowered():
    dot = fun([Array(Float, N), Array(Float, N)], lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y))
    plan = check(dot, X, Y)
    # map(mult) is fused into the reduction's operator: one kernel, no temporary array
    assert len(plan.kernels) == 1 and [b.role for b in plan.buffers].count("temp") == 0
    check(fun([Array(Array(Float, M), N)], lambda a: map(map(lambda v: v + 1.0)) << transpose << a), A2)


# ----------------------------------------------------------------- unsupported


def test_iterate_over_local_maps_is_unsupported_and_names_the_node():
    # iterate itself compiles (tests/test_codegen_iterate.py); map_lcl inside it would need barriers
    f = fun([Array(Array(Float, 16), N)], lambda x: map_wrg(
        lambda g: lift.iterate(2, lambda y: to_local(map_lcl(lift.id)) << y) << g) << x)
    with pytest.raises(UnsupportedError) as err:
        generate(f)
    assert "iterate" in str(err.value) and err.value.loc is not None


def test_private_memory_needs_a_constant_size():
    f = fun([Array(Array(Float, M), N)],
            lambda a: map_glb(lambda r: map_seq(lift.id) << to_private(map_seq(lift.id)) << r) << a)
    with pytest.raises(UnsupportedError, match="constant size"):
        generate(f)


# ---------------------------------------------------------- reference programs


@pytest.mark.parametrize("name", ["dot", "gemv", "matmul", "stencil2d", "conv"])
def test_reference_programs_lowered_and_compiled(name):
    import programs as progs

    r = progs.rand
    cases = {"dot": (progs.dot_program, (r(100), r(100, seed=1))),
             "gemv": (progs.gemv_program, (r(7, 9), r(9))),
             "matmul": (progs.matmul_program, (r(5, 6), r(4, 6))),
             "stencil2d": (progs.stencil2d_program, (r(3, 3), r(9, 11))),
             "conv": (lambda: progs.conv_program(3, 3, 1, 1), (r(6, 7, 2), r(3, 3, 3, 2)))}
    make, args = cases[name]
    check(make(), *args)
