"""User functions as a user writes them: for loops, array (window) parameters, calls to other user
functions and to plain helpers; integer division by zero; all checked against Python and PoCL."""

from __future__ import annotations

import builtins

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import lift
from lift import Array, Float, Int, Size, fun, map, user_fun, zip
from lift.errors import UserFunError
from lift.ir.patterns import map_nd, pad_nd, slide_nd

N, M = Size("N"), Size("M")


def _sq(x):
    return x * x


@user_fun
def box3(w: Array(Array(Float, 3), 3)) -> Float:
    s = 0.0
    for i in range(len(w)):
        for j in range(3):
            s += w[i][j]
    return s


@user_fun
def weighted(w: Array(Array(Float, 3), 3)) -> Float:
    s = 0.0
    for k in range(8, -1, -2):  # every other element, backwards: the index is computed
        s = s * 0.5 + w[k // 3][k % 3] * (k + 1)
    return s


@user_fun
def collatz(a: Int) -> Int:
    x = a
    steps = 0
    for _ in range(20):
        if x > 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            steps += 1
    return steps


@user_fun
def norm2(a: Float, b: Float) -> Float:
    return _sq(a) + _sq(b) + lift.mult(a, b) * 0.0


@user_fun
def twice_norm(a: Float, b: Float) -> Float:
    return norm2(a, b) + norm2(b, a)


def test_window_sum_with_a_loop_compiles_and_matches_numpy() -> None:
    img = np.random.default_rng(0).random((7, 9)).astype(np.float32)
    p = fun([Array(Array(Float, M), N)],
            lambda x: map_nd(2, box3) << slide_nd(2, 3, 1) << pad_nd(2, 1, 1, 0.0) << x)
    expected = sliding_window_view(np.pad(img, 1), (3, 3)).sum(axis=(-1, -2))
    np.testing.assert_allclose(lift.interpret(p, img), expected, rtol=1e-5)
    np.testing.assert_allclose(lift.compile(p)(img), expected, rtol=1e-5)
    assert "for (" in box3.body.f.c_source and "float w[3][3] = {{" in box3.body.f.c_source


def test_computed_indices_and_backward_ranges() -> None:
    img = np.random.default_rng(1).random((5, 6)).astype(np.float32)
    p = fun([Array(Array(Float, M), N)], lambda x: map_nd(2, weighted) << slide_nd(2, 3, 1) << x)
    wins = sliding_window_view(img, (3, 3)).reshape(3, 4, 9)
    expected = np.zeros((3, 4), np.float32)
    for k in range(8, -1, -2):
        expected = expected * 0.5 + wins[..., k] * (k + 1)
    np.testing.assert_allclose(lift.interpret(p, img), expected, rtol=1e-5)
    np.testing.assert_allclose(lift.compile(p)(img), expected, rtol=1e-5)


def test_loop_with_branches_matches_python_in_interpreter_and_kernel() -> None:
    xs = np.arange(1, 40, dtype=np.int32)
    expected = np.array([collatz.py_fn(int(a)) for a in xs], np.int32)
    p = fun([Array(Int, N)], lambda x: map(collatz) << x)
    np.testing.assert_array_equal(collatz.np_fn(xs), expected)
    np.testing.assert_array_equal(lift.interpret(p, xs), expected)
    np.testing.assert_array_equal(lift.compile(p)(xs), expected)


def test_calls_to_user_functions_and_helpers_are_c_functions_defined_once() -> None:
    a, b = (np.random.default_rng(2).random(32).astype(np.float32) for _ in range(2))
    p = fun([Array(Float, N), Array(Float, N)],
            lambda x, y: map(lambda t: twice_norm(t[0], t[1]) + norm2(t[0], t[1])) << zip(x, y))
    expected = 3 * (a * a + b * b)
    np.testing.assert_allclose(lift.interpret(p, a, b), expected, rtol=1e-5)
    k = lift.compile(p)
    np.testing.assert_allclose(k(a, b), expected, rtol=1e-5)
    for name in ("_sq", "mult", "norm2", "twice_norm"):
        assert k.source.count(f"float {name}(") == 1, name
    q = fun([Array(Float, N)], lambda x: lift.reduce(lambda acc, v: twice_norm(acc, v) * 0.25, 0.0) << x)
    np.testing.assert_allclose(lift.interpret(q, a[:4]), lift.compile(q)(a[:4]), rtol=1e-5)


def test_loop_errors_name_the_users_line() -> None:
    def oob(w):
        s = 0.0
        for i in range(4):
            s += w[i]  # out of range for a window of 3
        return s

    def data_bound(a):
        s = 0
        for i in range(a):
            s += i
        return s

    def early(w):
        for i in range(3):
            return w[i]
        return 0.0

    def recursive(a):
        return recursive(a - 1.0)

    cases = [(oob, [Array(Float, 3)], "ranges over 0..3"), (data_bound, [Int], "range bounds"),
             (early, [Array(Float, 3)], "return inside a for loop"), (recursive, [Float], "recursion")]
    for fn, types, words in cases:
        with pytest.raises(UserFunError, match=words) as info:
            user_fun(fn, types, Float if fn is not data_bound else Int)
        assert info.value.loc is not None and info.value.loc.file == __file__


def test_integer_division_by_zero_is_zero_in_interpreter_and_kernel() -> None:
    @user_fun
    def divmod_(a: Int, b: Int) -> Int:
        return a // b * 100 + a % b

    x = np.array([7, -7, 0, 9, 5, -5], np.int32)
    y = np.array([0, 0, 0, 2, -3, 3], np.int32)
    p = fun([Array(Int, N), Array(Int, N)], lambda a, b: map(divmod_) << zip(a, b))
    expected = np.array([a // b * 100 + a % b if b else 0 for a, b in builtins.zip(x.tolist(), y.tolist())], np.int32)
    np.testing.assert_array_equal(lift.interpret(p, x, y), expected)
    np.testing.assert_array_equal(lift.compile(p)(x, y), expected)



@user_fun
def sq_plus(a: Float) -> Float:
    return _sq(a) + lift.mult(a, 2.0)


def test_vectorised_user_function_with_calls_defines_its_callees_at_vector_types() -> None:
    p = fun([Array(Float, N)],
            lambda x: lift.as_scalar << map(lift.vectorise(sq_plus, 4)) << lift.as_vector(4) << x)
    x = np.arange(8, dtype=np.float32)
    k = lift.compile(p)
    assert "float4 _sq(float4 x)" in k.source
    np.testing.assert_allclose(k(x), x * x + 2 * x)
    np.testing.assert_allclose(lift.interpret(p, x), x * x + 2 * x)


def _pair(a):
    return (a, a * 2.0)


@user_fun
def pair_sum(a: Float) -> Float:
    p = _pair(a)
    return p[0] + p[1]


def test_a_helper_returning_a_tuple_gets_its_struct_in_the_kernel() -> None:
    p = fun([Array(Float, N)], lambda x: map(pair_sum) << x)
    x = np.arange(6, dtype=np.float32)
    np.testing.assert_allclose(lift.interpret(p, x), 3 * x)
    np.testing.assert_allclose(lift.compile(p)(x), 3 * x)
