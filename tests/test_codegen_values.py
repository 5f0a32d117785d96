"""Tuples holding arrays and accumulators that are tuples, vectors or private arrays."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from codegen_oracle import check, floats
from lift import (
    Array,
    Float,
    Size,
    Tuple,
    Vector,
    as_vector,
    fun,
    map_glb,
    map_seq,
    reduce,
    reduce_seq,
    split,
    to_global,
    to_private,
    transpose,
    value,
    vectorise,
    zip,
)
from lift.ir import nodes as n

N, M, K = Size("N"), Size("M"), Size("K")
RNG = np.random.default_rng(11)
X, Y = floats(RNG, 64), floats(RNG, 64)


# ------------------------------------------------------------ the front end


def test_value_of_an_array_or_vector_type_is_a_constant():
    v = value(0.5, Array(Float, 4))
    assert isinstance(v, n.Literal) and v.type == Array(Float, 4)
    assert str(v) == "value(0.5, [Float]4)"
    np.testing.assert_array_equal(lift.interpret(fun([Array(Float, N)], lambda x: value(2.0, Array(Float, 3))), X),
                                  np.full(3, 2.0, np.float32))
    assert value(1.0, Vector(Float, 8)).type == Vector(Float, 8)


def test_value_rejects_a_tuple_type():
    with pytest.raises(lift.LiftTypeError, match="value needs a scalar, vector or array"):
        value(0.0, Tuple(Float, Float))


def test_a_tuple_init_is_a_tuple_literal():
    f = fun([Array(Float, N)], lambda x: reduce(lambda acc, v: (acc[0] + v, lift.max_(acc[1], v)), (0.0, -5.0)) << x)
    init = f.body.args[0]
    assert isinstance(init.f, n.MakeTuple) and init.type == Tuple(Float, Float)
    s, m = lift.interpret(f, X)
    assert np.isclose(s, X.sum(), atol=1e-4) and m == X.max()


def test_a_number_init_over_vectors_is_a_vector_literal():
    f = fun([Array(Float, N)], lambda x: reduce_seq(vectorise(lift.add, 8), 0.0) << as_vector(8) << x)
    init = f.body.args[0]
    assert isinstance(init, n.Literal) and init.type == Vector(Float, 8)
    np.testing.assert_allclose(lift.interpret(f, X), X.reshape(-1, 8).sum(axis=0), rtol=1e-5)


# ------------------------------------------------------- code and results


@pytest.mark.device
def test_zip_of_split_arrays_needs_no_struct_of_arrays():
    f = fun([Array(Float, N), Array(Float, N)],
            lambda x, y: map_glb(lambda p: reduce_seq(lambda acc, q: acc + q[0] * q[1], 0.0) << zip(p[0], p[1]))
            << zip(split(4) << x, split(4) << y))
    plan = check(f, X, Y)
    assert "[Float]" not in plan.source and "Tuple_float_float;" in plan.source


@pytest.mark.device
def test_tuple_accumulator_is_a_private_struct():
    f = fun([Array(Float, N)], lambda x: map_glb(
        lambda r: reduce_seq(lambda acc, v: (acc[0] + v, acc[1] + v * v), (0.0, 0.0)) << r) << split(8) << x)
    plan = check(f, X)
    assert "Tuple_float_float acc;" in plan.source


@pytest.mark.device
def test_vector_accumulator_is_a_private_vector():
    f = fun([Array(Float, N), Array(Float, N)], lambda x, y: map_glb(
        lambda c: reduce_seq(lambda acc, p: acc + p[0] * p[1], 0.0) << c)
        << split(2) << zip(as_vector(8) << x, as_vector(8) << y))
    plan = check(f, X, Y)
    assert "float8 acc;" in plan.source and "acc = (float8)(0.0f);" in plan.source


@pytest.mark.device
@pytest.mark.parametrize("wrapped", [False, True], ids=["value", "to_private-copy"])
def test_array_accumulator_lives_in_private_memory(wrapped: bool):
    init = value(0.0, Array(Float, 4))
    if wrapped:  # LIFT's form: to_private(map_seq(id)) << value(0, [Float]4)
        init = to_private(map_seq(lift.id)) << init
    f = fun([Array(Float, N)], lambda x: map_glb(
        lambda r: reduce_seq(lambda acc, v: map_seq(lift.add) << zip(acc, v), init) << r) << split(4) << split(4) << x)
    plan = check(f, X)
    assert ("float tmp[4];" if wrapped else "float acc[4];") in plan.source
    assert all(b.space == "global" and b.role != "temp" for b in plan.buffers)


@pytest.mark.device
def test_tuple_of_arrays_accumulator_is_one_private_array_per_component():
    f = fun([Array(Float, N)], lambda x: map_glb(lambda r: reduce_seq(
        lambda acc, v: (map_seq(lift.add) << zip(acc[0], v), map_seq(lift.max_) << zip(acc[1], v)),
        (value(0.0, Array(Float, 4)), value(-10.0, Array(Float, 4)))) << r) << split(4) << split(4) << x)
    plan = check(f, X)
    assert "float acc_0[4];" in plan.source and "float acc_1[4];" in plan.source


def register_block(a_rows, b_rows, bm: int, bn: int):
    """C block [[Float]bn]bm += a[i][k] * b[j][k], accumulated in a private 2-D array."""
    def step(acc, ab):
        return map_seq(lambda ra: map_seq(lambda cb: cb[0] + ra[1] * cb[1]) << zip(ra[0], ab[1])) << zip(acc, ab[0])

    return reduce_seq(step, value(0.0, Array(Array(Float, bn), bm))) << zip(transpose << a_rows, transpose << b_rows)


@pytest.mark.device
def test_register_blocked_matmul_accumulates_a_private_block():
    f = fun([Array(Array(Float, K), M), Array(Array(Float, K), N)],
            lambda a, bt: map_glb(lambda ab: map_glb(
                lambda bb: to_global(map_seq(map_seq(lift.id))) << register_block(ab, bb, 2, 4), dim=0)
                << split(4) << bt, dim=1) << split(2) << a)
    plan = check(f, floats(RNG, 8, 5), floats(RNG, 12, 5))
    assert "float acc[8];" in plan.source
    assert [b.role for b in plan.buffers] == ["input", "input", "output"]


def test_alignment_uses_the_size_conditions():
    from lift.arith import Cst, Var
    from lift.codegen.access import aligned, divisibility
    from lift.typecheck import size_conditions

    gl, i = Var("gl", Cst(0), M - 1), Var("i", Cst(0), N // 8 - 1)
    flat = N * gl + 8 * i
    assert not aligned(8, flat) and aligned(8, flat, {"N": 8}) and not aligned(8, flat, {"N": 4})
    f = fun([Array(Array(Float, N), M)], lambda a: map_glb(lambda r: reduce_seq(vectorise(lift.add, 8), 0.0)
                                                           << as_vector(8) << r) << a)
    assert divisibility(size_conditions(f)) == {"N": 8}


def test_short_constant_loops_are_unrolled():
    from lift.codegen import generate

    f = fun([Array(Float, N)], lambda x: map_glb(
        lambda r: reduce_seq(lambda acc, v: map_seq(lift.add) << zip(acc, v), value(0.0, Array(Float, 4))) << r)
        << split(32) << split(4) << x)
    lines = generate(f).source.splitlines()
    loops = [k for k, line in enumerate(lines) if line.strip().startswith("for (")]
    unrolled = [k for k in loops if lines[k - 1].strip() == "#pragma unroll"]
    assert len(loops) == 4 and len(unrolled) == 3  # all but the 32-trip reduction: it stays a loop
