"""User functions at their edges (issue 26 items 5, 7, 9): float `//` and `%` by zero and on
special values as numpy computes them, compiled and interpreted; type inference that cannot
settle, and recursion, as `UserFunError`s naming the line; globals frozen at translation, with a
warning when one has changed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import lift
from lift import Array, Float, Int, Size, fun, map, user_fun, zip
from lift.errors import UserFunError, UserFunGlobalChanged

N = Size("N")
SPECIAL = np.array([-7.0, 7.0, 0.0, -0.0, 2.5, -2.5, np.inf, -np.inf, np.nan, 1e-45, 3e38, 5.0, -1e-3],
                   np.float32)


@user_fun
def fdiv(a: Float, b: Float) -> Float:
    return a // b


@user_fun
def fmod_floor(a: Float, b: Float) -> Float:
    return a % b


@user_fun
def fdiv_by_two(a: Float) -> Float:
    return a // 2.0


@user_fun
def fmod_by_three(a: Float) -> Float:
    return a % 3.0


def _same_bits(got: np.ndarray, want: np.ndarray) -> None:
    """Equal values, NaN where NaN, and the sign of every zero and infinity."""
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan], want[~nan])
    assert np.array_equal(np.signbit(got[~nan]), np.signbit(want[~nan]))


@pytest.mark.parametrize("f, ref", [(fdiv, np.floor_divide), (fmod_floor, np.remainder)], ids=["floordiv", "mod"])
def test_float_floor_division_and_modulo_are_numpys(f, ref) -> None:
    a, b = (v.ravel() for v in np.meshgrid(SPECIAL, SPECIAL))
    prog = fun([Array(Float, N), Array(Float, N)], lambda x, y: map(f) << zip(x, y))
    with np.errstate(all="ignore"):
        want = ref(a, b)
    _same_bits(lift.interpret(prog, a, b), want)
    _same_bits(lift.compile(prog)(a, b), want)


def test_float_floor_division_by_zero_is_signed_infinity() -> None:
    prog = fun([Array(Float, N), Array(Float, N)], lambda x, y: map(fdiv) << zip(x, y))
    a, b = np.array([-7.0, 7.0, 0.0], np.float32), np.zeros(3, np.float32)
    _same_bits(lift.compile(prog)(a, b), np.array([-np.inf, np.inf, np.nan], np.float32))
    _same_bits(lift.interpret(prog, a, b), np.array([-np.inf, np.inf, np.nan], np.float32))


@pytest.mark.parametrize("f, ref", [(fdiv_by_two, lambda a: a // np.float32(2.0)),
                                    (fmod_by_three, lambda a: a % np.float32(3.0))], ids=["floordiv", "mod"])
def test_a_positive_constant_divisor_is_numpys_too(f, ref) -> None:
    prog = fun([Array(Float, N)], lambda x: map(f) << x)
    with np.errstate(all="ignore"):
        want = ref(SPECIAL)
    _same_bits(lift.interpret(prog, SPECIAL), want)
    _same_bits(lift.compile(prog)(SPECIAL), want)


def _loop_then_float(x: Float) -> Float:
    s = 0.0
    for i in range(3):  # noqa: B007 - the loop variable reused below is the point
        s += x
    i = 1.5
    return s + i


def _two_loops_then_float(x: Float) -> Float:
    s = 0.0
    for i in range(3):
        s += x * i
    for i in range(2):  # noqa: B007
        s += 1.0
    i = 0.5
    return s


@pytest.mark.parametrize("fn", [_loop_then_float, _two_loops_then_float])
def test_a_loop_variable_later_assigned_a_float_is_a_user_fun_error(fn) -> None:
    with pytest.raises(UserFunError, match="loop variable 'i'.*Float") as e:
        user_fun(fn)
    assert e.value.loc is not None and e.value.loc.file == __file__
    assert e.value.loc.line == fn.__code__.co_firstlineno + 2  # the for loop


def _is_even(x: Int) -> Int:
    return 1 if x == 0 else _is_odd(x - 1)


def _is_odd(x: Int) -> Int:
    return 0 if x == 0 else _is_even(x - 1)


def test_recursion_is_reported_as_recursion() -> None:
    with pytest.raises(UserFunError, match=r"calls itself \(_is_even -> _is_odd -> _is_even\); recursion"):
        user_fun(_is_even)
    with pytest.raises(UserFunError, match="'countdown' calls itself; recursion is not supported") as e:
        @user_fun
        def countdown(x: Int) -> Int:
            return 0 if x <= 0 else countdown(x - 1)
    assert e.value.loc.line == countdown_line() and e.value.loc.file == __file__


def countdown_line() -> int:
    import inspect

    src, first = inspect.getsourcelines(test_recursion_is_reported_as_recursion)
    return first + next(k for k, line in enumerate(src) if "else countdown(" in line)


SCALE = 2.0


def test_a_global_is_frozen_at_translation_and_a_change_warns() -> None:
    global SCALE
    SCALE = 2.0

    @user_fun
    def scaled(x: Float) -> Float:
        return x * SCALE

    prog = fun([Array(Float, N)], lambda x: map(scaled) << x)
    x = np.ones(4, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserFunGlobalChanged)
        assert lift.interpret(prog, x).tolist() == [2.0] * 4  # unchanged: no warning
    try:
        SCALE = 3.0
        with pytest.warns(UserFunGlobalChanged, match="scaled read SCALE = 2.0 .* now 3.0"):
            assert lift.interpret(prog, x).tolist() == [2.0] * 4  # frozen
        with pytest.warns(UserFunGlobalChanged, match="SCALE"):
            assert lift.compile(prog)(x).tolist() == [2.0] * 4
    finally:
        SCALE = 2.0


def test_a_closure_variable_is_frozen_too() -> None:
    k = 1.0

    def shift(x: Float) -> Float:
        return x + k

    uf = user_fun(shift)
    prog = fun([Array(Float, N)], lambda x: map(uf) << x)
    k = 5.0  # noqa: F841 - read through the closure
    with pytest.warns(UserFunGlobalChanged, match="shift read k = 1.0"):
        assert lift.interpret(prog, np.zeros(2, np.float32)).tolist() == [1.0, 1.0]


def test_a_traced_function_s_globals_are_frozen_too() -> None:
    namespace = {"K": 2.0}
    exec("def twice_k(x):\n    return x * K\n", namespace)  # noqa: S102 - no source: traced
    uf = user_fun(namespace["twice_k"], [Float], Float)
    prog = fun([Array(Float, N)], lambda x: map(uf) << x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserFunGlobalChanged)
        assert lift.interpret(prog, np.ones(2, np.float32)).tolist() == [2.0, 2.0]
    namespace["K"] = np.float32(4.0)
    with pytest.warns(UserFunGlobalChanged, match="twice_k read K = 2.0"):
        assert lift.interpret(prog, np.ones(2, np.float32)).tolist() == [2.0, 2.0]
