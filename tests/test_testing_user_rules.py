"""`lift.testing` on rules a user writes in a test file: a right one is proven, a wrong one refuted,
both with the default settings (no filtering of draws); symbolic sizes get drawn."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import lift
from lift import Array, Float, Size, fun, map, split
from lift.ir.nodes import Map, Reduce
from lift.rules import Rule
from lift.rules.match import call, expr
from lift.rules.match import fun as fun_var
from lift.testing import assert_preserves, inputs_for, programs_for, sizes_for

f, g, x, z = fun_var("f"), fun_var("g"), expr("x"), expr("z")

my_fusion = Rule("my_fusion", law="map(f) << map(g) << x -> map(f << g) << x",
                 lhs=call(Map(f), call(Map(g), x)),
                 rhs=lambda f, g, x: map(lambda e: f(g(e))) << x)

my_swap = Rule("my_swap", law="map(f) << map(g) << x -> map(g) << map(f) << x",  # wrong
               lhs=call(Map(f), call(Map(g), x)),
               rhs=lambda f, g, x: map(g) << map(f) << x)

my_split_join = Rule("my_split_join", law="map(f) << x -> join << map(map(f)) << split(2) << x",
                     lhs=call(Map(f), x),
                     rhs=lambda f, x: lift.join << map(map(f)) << split(2) << x)

# wrong unless f is associative and z its neutral element (the pools hold counterexamples)
my_reduce_split = Rule("my_reduce_split", law="reduce(f, z) << x -> reduce(f, z) << map(reduce(f, z)) << "
                       "split(2) << x", lhs=call(Reduce(f), z, x),
                       rhs=lambda f, z, x: lift.reduce(f, z) << map(lambda c: lift.reduce(f, z) << c)
                       << split(2) << x)


def test_a_right_user_rule_is_proven_with_default_settings() -> None:
    report = assert_preserves(my_fusion)
    assert report.examples >= 100 and report.matched == report.examples
    report = assert_preserves(my_split_join)
    assert report.matched == report.examples


def test_a_wrong_user_rule_is_refuted_with_default_settings() -> None:
    with pytest.raises(AssertionError, match="my_swap .* changed the value"):
        assert_preserves(my_swap)
    with pytest.raises(AssertionError, match="my_reduce_split .* changed the value"):
        assert_preserves(my_reduce_split)


def test_programs_for_a_user_rule_always_contain_its_left_hand_side() -> None:
    @settings(max_examples=30, database=None)
    @given(programs_for(my_fusion))
    def check(case) -> None:
        assert my_fusion.matches(case.program)

    check()


def test_symbolic_sizes_are_drawn_to_satisfy_size_conditions() -> None:
    n = Size("N")
    p = fun([Array(Float, n), Array(Float, n)], lambda a, b: map(lambda c: lift.reduce(lift.add, 0.0) << c)
            << split(4) << lift.join << split(2) << a)

    @settings(max_examples=20, database=None)
    @given(sizes_for(p), inputs_for(p))
    def check(sizes, args) -> None:
        assert sizes["N"] % 4 == 0
        assert args[0].shape == args[1].shape and args[0].shape[0] % 4 == 0
        np.testing.assert_allclose(lift.interpret(p, *args), args[0].reshape(-1, 4).sum(axis=1), rtol=1e-5)

    check()
