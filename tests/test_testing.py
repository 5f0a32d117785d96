"""`lift.testing`: the public strategies generate well-typed programs with matching inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import lift
import lift.rules as R  # noqa: N812 - the rule catalogue
from lift import Array, Float, fun, map
from lift.testing import Case, assert_preserves, assert_same, inputs_for, programs, programs_for


@settings(max_examples=60)
@given(programs())
def test_programs_are_well_typed_and_run(case: Case) -> None:
    lift.typecheck(case.program)
    assert len(case.inputs) == len(case.program.params)
    lift.interpret(case.program, *case.inputs)


@settings(max_examples=30)
@given(programs_for(R.partial_reduce))
def test_programs_for_a_rule_contain_a_match(case: Case) -> None:
    assert R.partial_reduce.matches(case.program)


def test_assert_preserves_takes_programs_and_inputs() -> None:
    prog = fun([Array(Float, 8)], lambda x: map(lambda a: a * 2.0) << map(lambda a: a + 1.0) << x)
    report = assert_preserves(R.map_fusion, programs=[prog], max_examples=5)
    assert report.matched == report.examples >= 1
    xs = (np.arange(8, dtype=np.float32),)
    report = assert_preserves(R.split_join, programs=prog, inputs=xs, params={"n": 4}, max_examples=3)
    assert report.matched >= 1


def test_assert_same_tolerates_reassociation_only() -> None:
    assert_same(np.float32(1.0), np.float32(1.0 + 1e-6))
    assert_same((np.ones(3), np.zeros(2)), (np.ones(3), np.zeros(2)))
    with pytest.raises(AssertionError):
        assert_same(np.ones(3), np.ones(3) * 1.01)
    with pytest.raises(AssertionError):
        assert_same(np.ones(3), np.ones(4))


def test_assert_same_checks_the_finite_elements_beside_an_infinity() -> None:
    """An infinity in the expected values made the tolerance infinite (every other element passed)."""
    expected = np.array([np.inf, 1.0, 2.0], dtype=np.float32)
    assert_same(expected, expected.copy())
    with pytest.raises(AssertionError):
        assert_same(expected, np.array([np.inf, 1.0, 7.0], dtype=np.float32))
    with pytest.raises(AssertionError):
        assert_same(expected, np.array([5.0, 1.0, 2.0], dtype=np.float32))


@settings(max_examples=10)
@given(inputs_for(fun([Array(Array(Float, 3), 2)], lambda x: x)))
def test_inputs_have_the_parameter_shapes(args: tuple) -> None:
    (a,) = args
    assert a.shape == (2, 3) and a.dtype == np.float32
