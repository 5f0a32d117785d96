"""`user_fun.c(..., py=twin)` is interpreted; errors name the user's line, not liftcl's."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, user_fun, vectorise, zip
from lift.errors import LiftError

N = Size("N")


def test_raw_c_user_function_with_a_python_twin_is_interpreted_and_compiled() -> None:
    fma = user_fun.c("fma3", ["a", "b", "c"], "return a * b + c;", [Float] * 3, Float,
                     py=lambda a, b, c: a * b + c)
    p = fun([Array(Float, N)] * 3, lambda x, y, w: map(lambda t: fma(t[0], t[1], t[2])) << zip(x, y, w))
    x, y, w = (np.random.default_rng(k).random(16).astype(np.float32) for k in range(3))
    np.testing.assert_allclose(lift.interpret(p, x, y, w), x * y + w, rtol=1e-6)
    np.testing.assert_allclose(lift.compile(p)(x, y, w), x * y + w, rtol=1e-6)
    assert fma(2.0, 3.0, 1.0) == 7.0  # on numbers: the twin


def test_vectorised_raw_c_keeps_its_c_body_not_the_twin() -> None:
    # the twin differs from the C body on purpose: the kernel must run the C body
    twice = user_fun.c("twice", ["a"], "return a + a;", [Float], Float, py=lambda a: a * 3.0)
    p = fun([Array(Float, N)], lambda x: lift.as_scalar << map(vectorise(twice, 4)) << lift.as_vector(4) << x)
    x = np.arange(8, dtype=np.float32)
    np.testing.assert_allclose(lift.compile(p)(x), 2 * x)


def test_raw_c_without_a_twin_says_how_to_interpret_it() -> None:
    raw = user_fun.c("raw1", ["a"], "return a;", [Float], Float)
    p = fun([Array(Float, N)], lambda x: map(raw) << x)
    with pytest.raises(LiftError, match="py"):
        lift.interpret(p, np.zeros(4, np.float32))


def test_a_builtin_user_function_misapplied_is_reported_at_the_users_line() -> None:
    with pytest.raises(LiftError) as info:
        fun([Array(Float, N)], lambda x: map(lift.mult) << x)  # mult takes two arguments
    assert info.value.loc is not None and info.value.loc.file == __file__
    assert "map(lift.mult)" in str(info.value)


def test_type_errors_found_when_checking_name_the_users_line() -> None:
    m = Size("M")
    with pytest.raises(LiftError) as info:
        fun([Array(Float, N), Array(Float, m)], lambda a, b: map(lift.add) << zip(a, b))
    assert info.value.loc is not None and info.value.loc.file == __file__
