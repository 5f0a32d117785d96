"""The sine and cosine of one variable in a user function become one `sincos` call
(lift/userfun/calls.py `_sincos`): in straight-line code at the function's top level, until the
variable is assigned again; the numpy twin and the compiled program keep their meaning."""

from __future__ import annotations

import builtins
import math
from math import cos, sin

import numpy as np
import pytest

import lift
from lift import Array, Float, Tuple, fun, map, user_fun, zip


def _polar(r, t):
    return (r * cos(t), r * sin(t))


def _reassigned(t):
    c = math.cos(t)
    t = t * 2.0
    return c + math.sin(t)  # sin of the new t: not the sincos of the old one


def _branchy(t, k):
    if k > 0.5:
        return math.sin(t) * math.cos(t)
    return math.cos(t)


polar = user_fun(_polar, [Float, Float], Tuple(Float, Float), name="polar")
reassigned = user_fun(_reassigned, [Float], Float, name="reassigned")
branchy = user_fun(_branchy, [Float, Float], Float, name="branchy")


def test_one_sincos_call_for_the_pair() -> None:
    assert polar.c_source.count("sincos(") == 1 and "sin(t)" not in polar.c_source and "cos(t)" not in polar.c_source
    r, t = np.float32([1.5, 2.0]), np.float32([0.3, -2.0])
    got = polar.np_fn(r, t)
    np.testing.assert_allclose(got[0], r * np.cos(t), rtol=1e-6)
    np.testing.assert_allclose(got[1], r * np.sin(t), rtol=1e-6)


def test_a_reassigned_variable_takes_a_new_call_and_a_branch_none() -> None:
    src = reassigned.c_source
    assert src.index("t = t * 2.0f") < src.rindex("sincos(t")  # the sine of the new t, computed after it
    t = np.float32([0.25, 1.0])
    np.testing.assert_allclose(reassigned.np_fn(t), np.cos(t) + np.sin(2 * t), rtol=1e-6)
    assert "sincos(" not in branchy.c_source


@pytest.mark.device
def test_compiled_equals_the_interpreter() -> None:
    n = 4096
    prog = fun([Array(Float, n), Array(Float, n)], lambda r, t: map(lambda q: polar(q[0], q[1])) << zip(r, t))
    rng = np.random.default_rng(0)
    args = (rng.random(n, dtype=np.float32), (rng.random(n, dtype=np.float32) - 0.5) * 20)
    compiled = lift.compile(prog)
    assert "sincos(" in compiled.source
    for got, want in builtins.zip(compiled(*args), lift.interpret(prog, *args)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
