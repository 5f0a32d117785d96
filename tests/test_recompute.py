"""Fused recomputation (rules/recompute.py): a slide of a computed array at the result compiles.

Regression tests for issue 14, defects 2 and 3: `slide(2, 1) << map(f) << x` raised
NotSynchronisableError ("from different work-groups") even for non-overlapping windows, and a
slide of a map of reductions over windows asked for private memory of symbolic size.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, let, map, reduce, slide, user_fun
from lift.errors import MappingFallback
from lift.rules.recompute import recompute_layouts
from lift.testing import assert_same

N = Size("N")
inc = user_fun(lambda a: a + 1.0, [Float], Float, name="inc")


def _run(prog, x):
    with warnings.catch_warnings():
        warnings.simplefilter("error", MappingFallback)
        got = lift.compile(prog)(x)
    assert_same(lift.interpret(prog, x), got)


@pytest.mark.parametrize("size, step", [(2, 1), (2, 2), (3, 2)])
def test_slide_of_a_map_at_the_result(size: int, step: int) -> None:
    prog = fun([Array(Float, N)], lambda x: slide(size, step) << map(inc) << x)
    _run(prog, np.arange(64, dtype=np.float32))


def test_slide_of_reductions_over_windows() -> None:
    prog = fun([Array(Float, 64)], lambda x: slide(2, 1) << map(reduce(lift.add, 0.0)) << slide(3, 1) << x)
    _run(prog, np.arange(64, dtype=np.float32))


def test_map_of_slides_of_a_2d_map() -> None:
    prog = fun([Array(Array(Float, 8), 64)], lambda x: map(slide(2, 1)) << map(map(inc)) << x)
    _run(prog, np.arange(512, dtype=np.float32).reshape(64, 8))


def test_the_rewrite_keeps_the_maps_label_and_leaves_other_programs_alone() -> None:
    prog = fun([Array(Float, N)], lambda x: slide(2, 1) << map(inc, label="A") << x)
    out = recompute_layouts(prog)
    assert "map(map(inc)) << slide(2, 1)" in str(out).replace("[A]", "") and "A" in str(out)
    plain = fun([Array(Float, N)], lambda x: map(reduce(lift.add, 0.0)) << slide(2, 1) << map(inc) << x)
    assert recompute_layouts(plain) is plain


def test_slides_under_other_layouts_found_by_the_fuzzer() -> None:
    from lift import split, transpose, zip

    half = user_fun(lambda a: a * 0.5, [Float], Float, name="halve")
    x = np.arange(512, dtype=np.float32)
    prog = fun([Array(Float, 512), Array(Float, 512)],
               lambda x, y: slide(3, 1) << transpose << split(256) << map(lift.add) << zip(x, y))
    with warnings.catch_warnings():
        warnings.simplefilter("error", MappingFallback)
        got = lift.compile(prog)(x, x)
    assert_same(lift.interpret(prog, x, x), got)
    _run(fun([Array(Float, 64)], lambda x: transpose << transpose << slide(2, 1) << map(half) << x), x[:64])


def test_a_let_bound_map_of_a_parameter_under_a_slide() -> None:
    from lift import Int, join

    inc_i = user_fun(lambda a: a + 1, [Int], Int, name="inc_i")
    prog = fun([Array(Int, 3)], lambda x: join << slide(3, 2) << let(map(inc_i)) << x)
    _run(prog, np.arange(3, dtype=np.int32))


def test_a_let_lambda_of_a_map_under_a_slide() -> None:
    halve = user_fun(lambda a: a * 0.5, [Float], Float, name="halve")
    prog = fun([Array(Float, 255)], lambda x: slide(3, 3) << slide(3, 2) << let(lambda v: map(halve) << v) << x)
    _run(prog, np.arange(255, dtype=np.float32))
