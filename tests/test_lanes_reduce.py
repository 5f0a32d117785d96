"""Lanes over a reduction of an array the element does not index (rewrites/lanes.py, `_Lift.outside`):
`map(x => reduce(f, z) << map(s => g(x, s)) << samples) << xs` (MRI-Q: every voxel sums over all
samples) computed `w` elements at a time: the accumulator a vector (or a tuple of vectors), `f` and
`g` vectorised (user functions of tuples of scalars lane by lane), each sample read once and
broadcast; a tuple result written through `as_scalar` of tuples of vectors. Every width matches
the interpreter; the default compile vectorises."""

from __future__ import annotations

import builtins
import math

import numpy as np
import pytest

import lift
from lift import Array, Float, Tuple, fun, map, reduce, user_fun, zip
from lift.choices import Choices
from lift.compile import apply_points
from lift.interpret import interpret
from lift.rewrites import auto_points, auto_space


def _basis(x, c, w):
    return c * math.exp(-w * x * x)


def _rotate(x, y, a):
    # a point (x, y) turned by angle a: the pair of its coordinates
    return (x * math.cos(a) - y * math.sin(a), x * math.sin(a) + y * math.cos(a))


def _plus2(p, q):
    return (q[0] + p[0], q[1] + p[1])


basis = user_fun(_basis, [Float] * 3, Float, name="basis")
rotate = user_fun(_rotate, [Float] * 3, Tuple(Float, Float), name="turn_point")
plus2 = user_fun(_plus2, [Tuple(Float, Float)] * 2, Tuple(Float, Float), name="plus2")


def gaussians(n: int, k: int):
    """Each x: sum over (c, w) of c exp(-w x^2) (a scalar result, the built-in add)."""
    return fun([Array(Float, n), Array(Float, k), Array(Float, k)], lambda xs, cs, ws: map(
        lambda x: reduce(lift.add, 0.0) << map(lambda s: basis(x, s[0], s[1])) << zip(cs, ws)) << xs)


def turned(n: int, k: int):
    """Each point (x, y): the sum of its rotations by k angles (a tuple result, a tuple operator)."""
    return fun([Array(Float, n), Array(Float, n), Array(Float, k)], lambda xs, ys, angles: map(
        lambda p: reduce(plus2, (0.0, 0.0)) << map(lambda a: rotate(p[0], p[1], a)) << angles) << zip(xs, ys))


def _args(make, n: int, k: int):
    rng = np.random.default_rng(3)
    first = rng.random(n, dtype=np.float32) - 0.5
    if make is gaussians:
        return first, rng.random(k, dtype=np.float32), rng.random(k, dtype=np.float32) * 4
    return first, rng.random(n, dtype=np.float32) - 0.5, rng.random(k, dtype=np.float32) * 6


def _flat(v):
    return [np.asarray(c).reshape(-1) for c in (v if isinstance(v, tuple) else (v,))]


@pytest.mark.parametrize("make", [gaussians, turned])
@pytest.mark.parametrize("width", [4, 8, 16])
def test_every_width_means_the_program(make, width: int) -> None:
    n, k = 32, 5
    prog, args = make(n, k), _args(make, n, k)
    pointed = auto_points(prog, {}, min_length=1)
    (label,) = list(auto_space(pointed, {}))
    assert width in auto_space(pointed, {})[label]["width"]
    rewritten = apply_points(pointed, {label: {"skip": False, "width": width}}, warn=False)
    assert "vectorise(" in str(rewritten) and "bcast" in str(rewritten)  # lifted; the samples broadcast
    for got, want in builtins.zip(_flat(interpret(rewritten, *args)), _flat(interpret(prog, *args))):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_a_reduction_over_an_array_of_the_element_or_with_a_lambda_operator_is_refused() -> None:
    over_rows = fun([Array(Array(Float, 8), 64)], lambda rows: map(lambda r: reduce(lift.add, 0.0) << r) << rows)
    assert not any(k.startswith("auto_v") for k in auto_space(auto_points(over_rows, {}, min_length=1), {}))
    lam_op = fun([Array(Float, 64), Array(Float, 8)], lambda xs, cs: map(
        lambda x: reduce(lambda a, b: lift.add(a, lift.mult(b, x)), 0.0) << cs) << xs)
    assert not any(k.startswith("auto_v") for k in auto_space(auto_points(lam_op, {}, min_length=1), {}))


@pytest.mark.device
@pytest.mark.parametrize("make", [gaussians, turned])
def test_compiled_by_default_the_elements_are_vectors(make) -> None:
    n, k = 4096, 64
    prog, args = make(n, k), _args(make, n, k)
    compiled = lift.compile(prog)
    lab = next(x for x in compiled.choices.points if x.startswith("auto_v"))
    width = compiled.choices.points[lab]["width"]
    assert width >= 4 and f"float{width}" in compiled.source, compiled.choices
    for got, want in builtins.zip(_flat(compiled(*args)), _flat(interpret(prog, *args))):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert Choices.from_json(compiled.choices.to_json()) == compiled.choices
