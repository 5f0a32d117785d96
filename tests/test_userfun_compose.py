"""`lift.userfun.compose.fused`: one user function for f(.., g(..), ..) where both bodies are one C
expression (so the OpenCL compiler may contract a multiply-add); its twins are the composition."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift.ir.build import elaborate
from lift.types import Float, Int
from lift.userfun import user_fun
from lift.userfun.compose import expression, fused

ADD, MULT, MAX = (elaborate(f, [Float, Float]) for f in (lift.add, lift.mult, lift.max_))


def test_add_of_mult_is_one_expression_with_the_composed_meaning() -> None:
    u = fused(ADD, MULT, 1)
    assert u is not None and u.params == ("x", "mult_x", "mult_y") and u.in_types == (Float,) * 3
    assert expression(u) == "x + (mult_x * mult_y)"
    assert u.py_fn(np.float32(1), np.float32(2), np.float32(3)) == 7.0
    xs = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(u.np_fn(xs, xs + 1, xs - 2), xs + (xs + 1) * (xs - 2))
    assert fused(ADD, MULT, 1) is u  # one function per pair (one C definition in a kernel)


def test_the_argument_position_and_repeated_parameters() -> None:
    first = fused(MULT, ADD, 0)  # mult(add(a, b), y)
    assert expression(first) == "(add_x + add_y) * y" and first.params == ("add_x", "add_y", "y")
    assert first.py_fn(1.0, 2.0, 4.0) == 12.0
    twice = fused(MAX, MULT, 1)  # the parameter appears twice in max's body: both replaced
    assert expression(twice) == "(x > (mult_x * mult_y) || x != x) ? x : (mult_x * mult_y)"
    assert twice.py_fn(1.0, 2.0, -3.0) == 1.0 and twice.py_fn(1.0, 2.0, 3.0) == 6.0


def test_bodies_that_are_not_one_scalar_expression_are_refused() -> None:
    loop = user_fun.c("twice", ["a"], "float t = 0.0f;\n  for (int i = 0; i < 2; i++) t += a;\n  return t;",
                      [Float], Float, py=lambda a: 2 * a)
    assert expression(loop) is None and fused(ADD, loop, 1) is None
    local = user_fun.c("twice2", ["a"], "float t = a;\n  return t + t;", [Float], Float, py=lambda a: 2 * a)
    assert expression(local) == "(a) + (a)"  # straight-line locals are inlined (as traced functions write)
    to_int = user_fun.c("trunc_i", ["a"], "return (int)a;", [Float], Int, py=int)
    assert fused(ADD, to_int, 1) is None  # g's result is not f's argument type


@pytest.mark.device
def test_a_vectorised_fused_function_compiles_to_the_same_values() -> None:
    """The fused function vectorised (its C types widened) in a compiled kernel: x + y * z lane by lane."""
    from lift import Array, fun, map, zip

    u = fused(ADD, MULT, 1)
    prog = fun([Array(Float, 64), Array(Float, 64), Array(Float, 64)], lambda x, y, z: lift.as_scalar << map(
        lambda t: lift.vectorise(u, 8)(lift.get(0) << t, lift.get(1) << t, lift.get(2) << t))
        << zip(lift.as_vector(8) << x, lift.as_vector(8) << y, lift.as_vector(8) << z))
    rng = np.random.default_rng(0)
    x, y, z = (rng.random(64, dtype=np.float32) for _ in range(3))
    compiled = lift.compile(prog)
    assert "add_mult_v8" in compiled.source
    np.testing.assert_allclose(compiled(x, y, z), x + y * z, rtol=1e-6)
    np.testing.assert_allclose(lift.interpret(prog, x, y, z), x + y * z, rtol=1e-6)
