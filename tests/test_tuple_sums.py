"""Sums of tuples (`facts.tuple_sums`, `rules.reduce.zero_tuple_sum`): a reduction adding tuples
component by component from a tuple of zeros is a monoid, so `reduce_chunks` splits it into
chunks, accumulates each component in a vector and sums the lanes component by component
(rewrites/chunks.py), inside a map (a row's sum and sum of squares) and as a whole program's
result (SRAD's image statistics). Every form compiles to the interpreter's values, and the default
compile vectorises it; without the monoid the reduction stays one sequential scalar loop."""

from __future__ import annotations

import builtins
import re

import numpy as np
import pytest

import lift
from lift import Array, Float, Tuple, fun, map, reduce, user_fun, zip
from lift.interpret import interpret
from lift.userfun.facts import tuple_sums


def _add2(a, b):
    return (a[0] + b[0], a[1] + b[1])


def _add2_swapped(a, b):
    return (b[0] + a[0], a[1] + b[1])


def _add3(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


def _crossed(a, b):
    return (a[0] + b[1], a[1] + b[0])


def _mult2(a, b):
    return (a[0] * b[0], a[1] * b[1])


def _moments(v):
    return (v, v * v)


def _scaled(v, s):
    return v * s


add2 = user_fun(_add2, [Tuple(Float, Float)] * 2, Tuple(Float, Float), name="add2")
add2_swapped = user_fun(_add2_swapped, [Tuple(Float, Float)] * 2, Tuple(Float, Float), name="add2s")
add3 = user_fun(_add3, [Tuple(Float, Float, Float)] * 2, Tuple(Float, Float, Float), name="add3t")
crossed = user_fun(_crossed, [Tuple(Float, Float)] * 2, Tuple(Float, Float), name="crossed")
mult2 = user_fun(_mult2, [Tuple(Float, Float)] * 2, Tuple(Float, Float), name="mult2")
moments = user_fun(_moments, [Float], Tuple(Float, Float), name="moments2")
scaled = user_fun(_scaled, [Float, Float], Float, name="scaled")

VECTOR_ACC = re.compile(r"Tuple_float(4|8|16)_float\1(_float\1)? acc")


def test_tuple_sums_recognises_componentwise_addition_only():
    assert tuple_sums(add2) == 2
    assert tuple_sums(add2_swapped) == 2  # b + a is a + b, bit for bit
    assert tuple_sums(add3) == 3
    assert tuple_sums(crossed) is None  # components mixed
    assert tuple_sums(mult2) is None
    assert tuple_sums(lift.add) is None  # a scalar operator


def _close(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in builtins.zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-4, atol=2e-3)


@pytest.mark.parametrize("add", [add2, add2_swapped], ids=["a+b", "b+a"])
def test_row_sums_and_squares_vectorised(add):
    # per row: (sum, sum of squares), a user function returning the pair
    p = fun([Array(Array(Float, 1024), 48)],
            lambda m: map(lambda r: reduce(add, (0.0, 0.0)) << map(moments) << r) << m)
    x = np.random.default_rng(1).random((48, 1024), dtype=np.float32) - 0.5
    prog = lift.compile(p)
    assert VECTOR_ACC.search(prog.source), prog.source
    _close(prog(x), interpret(p, x))


def test_inline_tuple_of_products_over_a_shared_vector():
    # per row of A and B: (A_r . x, B_r . x) in one pass, the element a lambda building the pair
    n = 512
    p = fun([Array(Array(Float, n), 32), Array(Array(Float, n), 32), Array(Float, n)],
            lambda a, b, x: map(lambda r: reduce(add2, (0.0, 0.0))
                                << map(lambda q: (lift.mult(q[0], q[2]), scaled(q[1], q[2])))
                                << zip(r[0], r[1], x)) << zip(a, b))
    rng = np.random.default_rng(2)
    args = (rng.random((32, n), dtype=np.float32) - 0.5, rng.random((32, n), dtype=np.float32) - 0.5,
            rng.random(n, dtype=np.float32) - 0.5)
    prog = lift.compile(p)
    assert VECTOR_ACC.search(prog.source), prog.source
    got = prog(*args)
    _close(got, interpret(p, *args))
    np.testing.assert_allclose(got[0], args[0] @ args[2], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(got[1], args[1] @ args[2], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("n", [4096, 1 << 16, 1000, 70001])
def test_whole_array_statistics(n):
    # a program's result: (sum, sum of squares) of a whole array, any length
    p = fun([Array(Float, n)], lambda v: reduce(add2, (0.0, 0.0)) << map(moments) << v)
    x = np.random.default_rng(n).random(n, dtype=np.float32)
    prog = lift.compile(p)
    _close(prog(x), interpret(p, x))


def test_three_sums_and_a_nonzero_start_stays_correct():
    # three components vectorise; a start other than zeros is no monoid: as written, still right
    n = 2048
    triple = user_fun(lambda v: (v, v * v, v * v * v), [Float], Tuple(Float, Float, Float), name="powers3")
    p3 = fun([Array(Array(Float, n), 16)],
             lambda m: map(lambda r: reduce(add3, (0.0, 0.0, 0.0)) << map(triple) << r) << m)
    x = np.random.default_rng(3).random((16, n), dtype=np.float32)
    prog3 = lift.compile(p3)
    assert VECTOR_ACC.search(prog3.source), prog3.source
    _close(prog3(x), interpret(p3, x))
    p1 = fun([Array(Array(Float, n), 16)], lambda m: map(lambda r: reduce(add2, (1.0, 0.0)) << map(moments) << r) << m)
    prog1 = lift.compile(p1)
    assert not VECTOR_ACC.search(prog1.source)
    _close(prog1(x), interpret(p1, x))


DECLARED = re.compile(r"^\s*(?:float|int|double|uint|long|Tuple_\w+|float\d+|int\d+)\s+(\w+)\s*(?:\[[^\]]*\])?\s*;",
                      re.MULTILINE)


def test_a_temporary_never_takes_a_tuple_arrays_component_name():
    # the partial sums of a tuple sum are an array of pairs kept as two arrays (`tmp_0`, `tmp_1`);
    # the vectorised products inside the chunk loop are temporaries of their own: they were named
    # `tmp_1` too, shadowing the array of second components in the inner block
    n = 512
    p = fun([Array(Array(Float, n), 8), Array(Array(Float, n), 8), Array(Float, n)],
            lambda a, b, x: map(lambda r: reduce(add2, (0.0, 0.0))
                                << map(lambda q: (lift.mult(q[0], q[2]), lift.mult(q[1], q[2])))
                                << zip(r[0], r[1], x)) << zip(a, b))
    source = lift.compile(p).source
    names = DECLARED.findall(source[source.index("kernel void"):])  # the kernel's, not the functions'
    assert "tmp_1" in names, source
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def _cond_pair(v):
    return (v, v if v > 0 else 0.0)


cond_pair = user_fun(_cond_pair, [Float], Tuple(Float, Float), name="cond_pair")


@pytest.mark.parametrize("rows", [False, True], ids=["whole", "rows"])
def test_a_tuple_function_with_a_condition_vectorises(rows):
    # its C is widened from the scalar source: the tuple struct widened too (Tuple_float8_float8)
    n = 1 << 14
    if rows:
        p = fun([Array(Array(Float, 2048), 8)],
                lambda m: map(lambda r: reduce(add2, (0.0, 0.0)) << map(cond_pair) << r) << m)
        x = np.random.default_rng(4).random((8, 2048), dtype=np.float32) - 0.5
    else:
        p = fun([Array(Float, n)], lambda v: reduce(add2, (0.0, 0.0)) << map(cond_pair) << v)
        x = np.random.default_rng(4).random(n, dtype=np.float32) - 0.5
    prog = lift.compile(p)
    assert VECTOR_ACC.search(prog.source), prog.source
    _close(prog(x), interpret(p, x))


@pytest.mark.parametrize("types", [(Float, Float), (lift.Int, Float)], ids=["float", "int-float"])
def test_a_whole_array_sum_of_an_inline_tuple_between_two_kernels(types):
    # the program's result: chunks in one kernel, their partials (an array of pairs kept as two
    # arrays, `tmp_0` and `tmp_1`) summed in order by a second; a vector temporary of the chunk loop
    # was named `tmp_1` too, and the kernel's parameter took its type (writes 8x past the buffer)
    n = 1 << 14
    t = Tuple(*types)
    add = user_fun(_add2, [t, t], t, name="add_mixed" if types[0] == lift.Int else "add_pair")
    first = (lambda q: lift.mult(q[0], q[0])) if types[0] == lift.Int else (lambda q: lift.mult(q[0], q[1]))
    p = fun([Array(types[0], n), Array(Float, n)],
            lambda a, b: reduce(add, (0, 0.0) if types[0] == lift.Int else (0.0, 0.0))
            << map(lambda q: (first(q), lift.mult(q[1], q[1]))) << zip(a, b))
    rng = np.random.default_rng(6)
    a = rng.integers(-20, 20, n).astype(np.int32) if types[0] == lift.Int else rng.random(n, dtype=np.float32) - 0.5
    b = rng.random(n, dtype=np.float32) - 0.5
    prog = lift.compile(p)
    _close(prog(a, b), interpret(p, a, b))
