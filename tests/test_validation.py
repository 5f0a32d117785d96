"""Argument validation at the public entry points: a wrong Python type is a `LiftError` subclass.

Regression tests for issue 14, defect 7 (rule parameters of the wrong Python type, such as
`split_join.apply(p, n=2.5)` or `vectorise(n=None)`, raised raw TypeErrors).
"""

from __future__ import annotations

import numpy as np
import pytest

import lift
import lift.constraints
from lift import Array, Float, Size, Tuple, Vector, fun, map, map_nd, reduce, value, vectorise
from lift.errors import LiftError, LiftTypeError

N = Size("N")
PROG = fun([Array(Float, 64)], lambda x: map(lift.id) << x)
BAD = [2.5, None, "x", True, [1], np.float32(2.0)]


def _rule(name: str):
    return next(r for r in lift.rules.ALL if r.name == name)


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("rule, param", [("split_join", "n"), ("vectorise", "n"), ("partial_reduce", "n"),
                                         ("map_to_glb", "dim"), ("let_intro", "arg"),
                                         ("partial_reduce", "associative")])
def test_rule_parameters_of_the_wrong_type(rule: str, param: str, bad) -> None:
    if param == "arg" and bad == [1]:
        bad = [-1]  # a list of child indices is a path
    if param == "associative" and bad is True:
        bad = 1
    r = _rule(rule)
    prog = fun([Array(Float, 64)], lambda x: reduce(lift.add, 0.0) << x) if "reduce" in rule else PROG
    with pytest.raises(LiftTypeError, match=param):
        r.apply(prog, **{param: bad})
    with pytest.raises(LiftTypeError):
        r(**{param: bad})


@pytest.mark.parametrize("bad", [2.5, None, "x", True, -1, (0, "a")])
def test_rule_paths_and_programs_of_the_wrong_type(bad) -> None:
    with pytest.raises(LiftError):
        _rule("map_fusion").apply(PROG, at=bad)
    with pytest.raises(LiftTypeError):
        _rule("map_fusion").apply(bad)


def test_valid_parameters_still_work() -> None:
    at = _rule("split_join").matches(PROG, n=np.int64(8))[0]
    out = _rule("split_join").apply(PROG, at=at, n=8)
    x = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(lift.interpret(out, x), x)


@pytest.mark.parametrize("make", [
    lambda: Array(Float, 2.5), lambda: Array(None, 4), lambda: Tuple(3), lambda: Vector(Float, 5),
    lambda: value(None, Float), lambda: value("x", Float), lambda: map_nd(2**40, lift.id),
    lambda: vectorise(lift.id, None), lambda: fun(3, lambda x: x),
])
def test_constructors_validate(make) -> None:
    with pytest.raises(LiftError):
        make()


@pytest.mark.parametrize("kw", [{"choices": 2.5}, {"choices": [1]}, {"local_size": 0}, {"local_size": 2.5},
                                {"global_size": "x"}, {"local_size": (1, 2, 3, 4)}])
def test_compile_arguments(kw) -> None:
    with pytest.raises(LiftTypeError):
        lift.compile(PROG, **kw)
    with pytest.raises(LiftTypeError):
        lift.compile("not a program")


def test_space_and_program_arguments() -> None:
    space = lift.constraints.mapping_space(PROG, lift.devices.profile("pocl-cpu"))
    for bad in (None, "x", 2.5):
        with pytest.raises(LiftTypeError):
            space.sample(bad, 0)
        with pytest.raises(LiftTypeError):
            space.sample(2, bad)
        with pytest.raises(LiftTypeError):
            space.is_valid(bad)
        with pytest.raises(LiftTypeError):
            space.realise({"x": bad})
    k = lift.compile(PROG)
    with pytest.raises(LiftError):
        k.time(np.zeros(64, np.float32), repeat=2.5)
