"""Code generation for `iterate` (ping-pong buffers within a work-item, or one kernel launch per
iteration at the top level) and for `vectorise` of a lambda."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from codegen_oracle import check, floats
from lift import (
    Array,
    Float,
    Size,
    add,
    as_scalar,
    as_vector,
    fun,
    iterate,
    let,
    map_glb,
    map_lcl,
    map_seq,
    map_wrg,
    reduce_seq,
    split,
    to_global,
    to_local,
    vectorise,
    zip,
)
from lift.codegen import build

N, M = Size("N"), Size("M")
RNG = np.random.default_rng(5)
ROWS = floats(RNG, 8, 32)


def halve(a):
    """Sum neighbouring pairs: the array's length halves (its result is private memory)."""
    return map_seq(lambda r: reduce_seq(add, 0.0) << r) << split(2) << a


def halve_global(a):
    return to_global(map_seq(lambda r: reduce_seq(add, 0.0) << r)) << split(2) << a


def per_row(k, f, m=32):
    return fun([Array(Array(Float, m), N)], lambda x: map_glb(lambda row: iterate(k, f) << row) << x)


# -------------------------------------------------------------- iterate, per work-item


@pytest.mark.device
@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, 5])
def test_iterate_per_work_item_with_private_ping_pong_buffers(k):
    plan = check(per_row(k, halve), ROWS)
    assert plan.memory_bytes.get("global", 0) != 0
    src = plan.source
    if k >= 4:
        assert "two per trip" in src  # the middle iterations are a loop, not unrolled
    if k >= 3:
        assert "len_a" in src  # the length inside the loop is a C variable


@pytest.mark.device
@pytest.mark.parametrize("k", [3, 4, 5])
def test_iterate_per_work_item_with_global_ping_pong_buffers(k):
    plan = check(per_row(k, halve_global), ROWS)
    temps = [b for b in plan.buffers if b.role == "temp"]
    assert temps and all(b.space == "global" for b in temps)


@pytest.mark.device
def test_iterate_with_a_symbolic_row_length():
    p = fun([Array(Array(Float, M), N)], lambda x: map_glb(lambda row: iterate(3, halve_global) << row) << x)
    check(p, floats(RNG, 4, 64))
    check(p, floats(RNG, 3, 16))


@pytest.mark.device
def test_iterate_of_a_length_preserving_function():
    twice = lift.user_fun(lambda v: v * 2.0, [Float], Float, name="twice")
    p = fun([Array(Array(Float, 8), N)], lambda x: map_glb(lambda row: iterate(4, map_seq(twice)) << row) << x)
    check(p, floats(RNG, 5, 8))


@pytest.mark.device
def test_iterate_of_a_scalar_function():
    p = fun([Array(Float, N)], lambda x: map_glb(lambda v: iterate(5, lambda s: s * 2.0 + 1.0) << v) << x)
    check(p, floats(RNG, 64))


@pytest.mark.device
def test_iterate_inside_a_sequential_map():
    p = fun([Array(Array(Array(Float, 16), 3), N)],
            lambda x: map_glb(map_seq(lambda row: iterate(2, halve) << row)) << x)
    check(p, floats(RNG, 4, 3, 16))


def test_iterate_of_map_lcl_inside_a_work_group_is_refused_with_the_reason():
    tree = lambda a: to_local(map_lcl(lambda r: reduce_seq(add, 0.0) << r)) << split(2) << a  # noqa: E731
    p = fun([Array(Array(Float, 32), N)], lambda x: map_wrg(lambda grp: iterate(3, tree) << grp) << x)
    with pytest.raises(lift.LiftError, match="barrier across work-items between iterations") as err:
        build(p)
    assert "test_codegen_iterate.py" in str(err.value)  # the user's line
    assert "MapLcl" in str(err.value)


# ------------------------------------------------ iterate at the top level: a launch per iteration


def pairwise_sums(k):
    return lambda x: iterate(k, lambda a: lift.map(lambda r: lift.reduce(add, 0.0) << r) << split(2) << a) << x


@pytest.mark.device
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_top_level_iterate_with_a_global_map_launches_one_kernel_per_iteration(k):
    plan = check(fun([Array(Float, N)], pairwise_sums(k)), floats(RNG, 128))
    assert len(plan.launches) == k
    assert len([b for b in plan.buffers if b.role == "temp"]) == min(k - 1, 2)  # ping-pong


@pytest.mark.device
def test_top_level_iterate_between_other_stages():
    p = fun([Array(Float, N)], lambda x: lift.map(lambda v: v * 2.0) << pairwise_sums(4)(x))
    plan = check(p, floats(RNG, 256))
    assert len(plan.launches) == 5


@pytest.mark.device
def test_top_level_iterate_of_a_low_level_program():
    step = lambda a: map_glb(lambda r: reduce_seq(add, 0.0) << r) << split(4) << a  # noqa: E731
    p = fun([Array(Float, N)], lambda x: iterate(2, step, label="quarter") << x)
    plan = check(p, floats(RNG, 64))
    assert plan.kernels == ("quarter_0", "quarter_1")


# ------------------------------------------------------------ vectorise of a lambda


@pytest.mark.device
def test_vectorise_of_a_lambda_is_a_vector_function():
    p = fun([Array(Float, N), Array(Float, N)],
            lambda x, y: as_scalar << map_glb(vectorise(lambda a, b: a * b + 1.0, 4))
            << zip(as_vector(4) << x, as_vector(4) << y))
    plan = check(p, floats(RNG, 64), floats(RNG, 64))
    assert "float4 lambda_v4(float4 a, float4 b)" in plan.source
    assert "(float4)(1.0f)" in plan.source


@pytest.mark.device
def test_vectorise_of_a_lambda_with_builtins_and_a_nested_lambda():
    f = vectorise(lambda a: lift.max_(a * a, 0.5) - a, 8, label="sq")
    p = fun([Array(Float, N)], lambda x: as_scalar << map_glb(f) << as_vector(8) << x)
    plan = check(p, floats(RNG, 128))
    assert "float8 sq_v8(float8 a)" in plan.source


@pytest.mark.device
def test_vectorise_of_a_lambda_with_a_let_binds_a_vector_variable():
    f = vectorise(lambda a: let(lambda t: t * t + t) << (a + 1.0), 4)
    plan = check(fun([Array(Float, N)], lambda x: as_scalar << map_glb(f) << as_vector(4) << x), floats(RNG, 32))
    assert "float4 t = add_v4(a, ((float4)(1.0f)));" in plan.source


def test_vectorise_of_a_lambda_reading_a_tuple_is_refused():
    p = fun([Array(Float, N), Array(Float, N)],
            lambda x, y: map_glb(vectorise(lambda a, b: add(lift.get(0) << (a, b), b), 4))
            << zip(as_vector(4) << x, as_vector(4) << y))
    with pytest.raises(lift.UnsupportedError, match="vectorise of a lambda supports") as err:
        build(p)
    assert "test_codegen_iterate.py" in str(err.value)
