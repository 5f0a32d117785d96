"""The interpreter against numpy: the example programs and one program per pattern."""

from __future__ import annotations

import numpy as np
import pytest

import lift
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
    iterate,
    join,
    join_nd,
    let,
    map,
    map_glb,
    map_lcl,
    map_nd,
    map_seq,
    map_wrg,
    ocl_kernel,
    pad,
    pad_nd,
    reduce,
    reduce_seq,
    slide,
    slide_nd,
    split,
    split_nd,
    take,
    to_global,
    to_local,
    to_private,
    transpose,
    transpose_nd,
    transpose_w,
    value,
    vectorise,
    zip,
    zip_nd,
)
from programs import (
    N,
    conv_numpy,
    conv_program,
    dot_program,
    gemv_program,
    matmul_program,
    rand,
    stencil2d_numpy,
    stencil2d_program,
)

M = Size("M")


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64),
                               rtol=tol, atol=tol)


def test_dot():
    x, y = rand(1000), rand(1000, seed=1)
    close(lift.interpret(dot_program(), x, y), np.dot(x.astype(np.float64), y), 1e-4)


def test_dot_returns_a_scalar():
    r = lift.interpret(dot_program(), rand(4), rand(4))
    assert np.ndim(r) == 0 and r.dtype == np.float32


def test_gemv():
    a, v = rand(13, 7), rand(7)
    close(lift.interpret(gemv_program(), a, v), a @ v)


def test_matmul():
    a, b = rand(9, 5), rand(5, 6)
    close(lift.interpret(matmul_program(), a, np.ascontiguousarray(b.T)), a @ b)


def test_stencil2d_listing_2_2_with_zero_padding():
    w, img = rand(3, 3), rand(6, 9)
    out = lift.interpret(stencil2d_program(), w, img)
    assert out.shape == img.shape
    close(out, stencil2d_numpy(w, img))


@pytest.mark.parametrize("kh,kw,stride,padding", [(3, 3, 1, 1), (3, 3, 2, 0), (1, 1, 1, 0), (3, 2, 1, 1)])
def test_convolution_listing_4_1(kh, kw, stride, padding):
    inp, wts = rand(7, 6, 3), rand(4, kh, kw, 3, seed=2)
    out = lift.interpret(conv_program(kh, kw, stride, padding), inp, wts)
    close(out, conv_numpy(inp, wts, stride, padding), 1e-4)


# ------------------------------------------------------------ one per pattern

X8 = np.arange(8, dtype=np.float32)


def run(types, body, *args):
    return lift.interpret(fun(types, body), *args)


@pytest.mark.parametrize("m", [map, map_seq, map_glb, map_wrg, map_lcl])
def test_maps(m):
    close(run([Array(Float, N)], lambda x: m(lambda v: v * 3.0) << x, X8), X8 * 3)


@pytest.mark.parametrize("r", [reduce, reduce_seq])
def test_reductions(r):
    close(run([Array(Float, N)], lambda x: r(lift.max_, -1e30) << x, X8), 7.0)


def test_reduce_with_tuple_accumulating_lambda():
    got = run([Array(Float, N), Array(Float, N)],
              lambda x, y: reduce(lambda acc, p: acc + p[0] - p[1], 0.0) << zip(x, y), X8, X8 * 2)
    close(got, -X8.sum())


def test_zip_and_get():
    got = run([Array(Float, N), Array(Float, N)], lambda x, y: map(get(1)) << zip(x, y), X8, X8 + 1)
    close(got, X8 + 1)


def test_zip_of_three_returns_tuple_of_arrays():
    a, b, c = run([Array(Float, N)] * 3, lambda x, y, z: zip(x, y, z), X8, X8 + 1, X8 + 2)
    close(a, X8), close(b, X8 + 1), close(c, X8 + 2)


def test_tuple_valued_map():
    s, d = run([Array(Float, N), Array(Float, N)], lambda x, y: map(lambda p: (p[0] + p[1], p[0] - p[1]))
               << zip(x, y), X8, X8 * 2)
    close(s, X8 * 3), close(d, -X8)


def test_split_join():
    out = run([Array(Float, N)], lambda x: split(4) << x, X8)
    assert out.shape == (2, 4)
    close(run([Array(Float, N)], lambda x: join << split(2) << x, X8), X8)


def test_slide():
    out = run([Array(Float, N)], lambda x: slide(3, 2) << x, X8)
    close(out, [[0, 1, 2], [2, 3, 4], [4, 5, 6]])


def test_pad_and_negative_pad():
    close(run([Array(Float, N)], lambda x: pad(2, 1, 9.0) << x, X8[:3]), [9, 9, 0, 1, 2, 9])
    close(run([Array(Float, N)], lambda x: pad(-1, -2, 0.0) << x, X8), X8[1:6])


def test_transpose_and_transpose_w():
    a = rand(3, 5)
    close(run([Array(Array(Float, N), M)], lambda x: transpose << x, a), a.T)
    close(run([Array(Array(Float, N), M)], lambda x: transpose_w << map(map(lambda v: v)) << x, a), a.T)


def test_at_indexes_arrays_and_windows():
    close(run([Array(Float, N)], lambda x: map(lambda w: w[0] + w[2]) << slide(3, 1) << x, X8),
          X8[:-2] + X8[2:])
    close(run([Array(Float, N)], lambda x: x[3], X8), 3.0)


def test_let_evaluates_once_and_binds():
    out = run([Array(Float, N), Array(Float, M)],
              lambda x, y: map(lambda a: let(lambda s: map(lambda b: b * s) << y) << (a + 1.0)) << x,
              X8[:2], X8[:3])
    close(out, np.outer(X8[:2] + 1, X8[:3]))


def test_value_literal():
    close(run([Array(Float, N)], lambda x: map(lambda v: v + value(2, Float)) << x, X8), X8 + 2)


def test_iterate_halving():
    out = run([Array(Float, N)], lambda x: iterate(3, lambda a: map(lambda r: reduce(lift.add, 0.0) << r)
                                                   << split(2) << a) << x, np.arange(16, dtype=np.float32))
    close(out, [np.arange(8).sum(), np.arange(8, 16).sum()])


def test_address_space_wrappers_and_kernel():
    body = lambda x: ocl_kernel(to_global(map_glb(to_private(lambda v: v + 1.0)))) << x  # noqa: E731
    close(run([Array(Float, N)], body, X8), X8 + 1)
    close(run([Array(Float, N)], lambda x: to_local(map_lcl(lift.id)) << x, X8), X8)


def test_as_vector_as_scalar_vectorise():
    out = run([Array(Float, N)], lambda x: as_vector(4) << x, X8)
    assert out.shape == (2, 4)
    got = run([Array(Float, N), Array(Float, N)], lambda x, y: as_scalar << map(vectorise(lift.mult, 4))
              << zip(as_vector(4) << x, as_vector(4) << y), X8, X8)
    close(got, X8 * X8)


def test_nd_macros():
    a = rand(2, 3, 4)
    t3 = Array(Array(Array(Float, Size("C")), Size("B")), Size("A"))
    close(run([t3], lambda x: transpose_nd(2, 0, 1) << x, a), np.transpose(a, (2, 0, 1)))
    close(run([t3], lambda x: transpose_nd(1, 2, 0) << x, a), np.transpose(a, (1, 2, 0)))
    close(run([t3], lambda x: join_nd(3) << x, a), a.ravel())
    close(run([Array(Float, N)], lambda x: split_nd(2, 2) << x, X8), X8.reshape(2, 2, 2))
    b = rand(3, 4, seed=3)
    t2 = Array(Array(Float, N), M)
    close(run([t2, t2], lambda x, y: map_nd(2, lambda p: p[0] * p[1]) << zip_nd(2, x, y), b, b), b * b)
    close(run([t2], lambda x: pad_nd(2, 1, (0, 2), 5.0) << x, b), np.pad(b, ((1, 0), (1, 2)), constant_values=5))
    wins = run([t2], lambda x: slide_nd(2, (2, 3), 1) << x, b)
    assert wins.shape == (2, 2, 2, 3)
    close(wins[1, 1], b[1:3, 1:4])
    close(run([Array(Float, N)], lambda x: take(3) << x, X8), X8[:3])


def test_int_programs():
    x = np.arange(10, dtype=np.int32)
    assert run([Array(Int, N)], lambda v: reduce(lift.add, 0) << v, x) == 45


def test_tuple_parameters():
    pts = (X8, X8 * 2)
    out = run([Array(Tuple(Float, Float), N)], lambda ps: map(lambda p: p[0] * p[1]) << ps, pts)
    close(out, X8 * X8 * 2)


# ----------------------------------------------------------------- errors


def test_split_condition_checked_with_bound_sizes():
    prog = fun([Array(Float, N)], lambda x: split(4) << x)
    with pytest.raises(lift.LiftValueError, match=r"split\(4\) needs 4 to divide N.*N=6"):
        lift.interpret(prog, np.zeros(6, np.float32))


def test_wrong_dtype_is_reported():
    with pytest.raises(lift.LiftTypeError, match="argument 0 has dtype float64") as err:
        lift.interpret(dot_program(), np.zeros(3), np.zeros(3, np.float32))
    assert err.value.expected == np.float32


def test_inconsistent_sizes_are_reported():
    with pytest.raises(lift.LiftTypeError, match="argument 1 has length 4, the program expects N = 3"):
        lift.interpret(dot_program(), np.zeros(3, np.float32), np.zeros(4, np.float32))


def test_wrong_rank_is_reported():
    with pytest.raises(lift.LiftTypeError, match="2 dimension"):
        lift.interpret(dot_program(), np.zeros((3, 1), np.float32), np.zeros(3, np.float32))


def test_derived_size_is_solved():
    prog = fun([Array(Float, N * 2), Array(Float, N)], lambda x, y: map(lambda r: r[0]) << split(2) << x)
    close(lift.interpret(prog, X8, X8[:4]), X8[::2])


def test_precise_mode_carries_floats_in_float64():
    x = np.full(1 << 16, 0.1, dtype=np.float32)
    exact = float(x.astype(np.float64).sum())
    seq = run([Array(Float, N)], lambda v: reduce(lift.add, 0.0) << v, x)
    wide = lift.interpret(fun([Array(Float, N)], lambda v: reduce(lift.add, 0.0) << v), x, precise=True)
    assert seq.dtype == np.float32 and wide.dtype == np.float64
    assert abs(wide - exact) < 1e-9 * exact < abs(float(seq) - exact)
