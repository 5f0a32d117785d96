"""The interpreter checks its arguments exactly as a compiled program does (one shared check,
`lift.interpret.values.arguments`), and both refuse empty arrays plainly (issue 26 items 3 and 9)."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, Vector, fun, map, reduce, zip

N = Size("N")
M = Size("M")
f32 = np.float32


def _axpy():
    return fun([Float, Array(Float, N), Array(Float, N)],
               lambda a, x, y: map(lambda p: lift.add(lift.mult(a, p[0]), p[1])) << zip(x, y))


def _outcome(run, *args):
    try:
        return ("ok", np.asarray(run(*args)).tolist())
    except lift.LiftError as e:
        return (type(e).__name__, str(e).splitlines()[0], e.expected, e.got)


AXPY_ARGS = {
    "scalar": (f32(2.0), np.ones(4, f32), np.ones(4, f32)),
    "python float": (2.0, np.ones(4, f32), np.ones(4, f32)),
    "array (1,) for a scalar": (np.array([2.0], f32), np.ones(4, f32), np.ones(4, f32)),
    "array (1, 1) for a scalar": (np.array([[2.0]], f32), np.ones(4, f32), np.ones(4, f32)),
    "array (2,) for a scalar": (np.array([2.0, 3.0], f32), np.ones(4, f32), np.ones(4, f32)),
    "float64 scalar array": (np.array(2.0), np.ones(4, f32), np.ones(4, f32)),
    "too few": (np.ones(4, f32), np.ones(4, f32)),
}


@pytest.mark.parametrize("case", list(AXPY_ARGS))
def test_interpret_and_compiled_agree_on_every_argument(case: str) -> None:
    prog, args = _axpy(), AXPY_ARGS[case]
    want = _outcome(lift.compile(prog), *args)
    got = _outcome(lambda *a: lift.interpret(prog, *a), *args)
    assert got == want
    if "for a scalar" in case:
        assert got[0] == "LiftTypeError" and "argument 0 has shape" in got[1]


def test_a_vector_parameter_needs_its_lanes() -> None:
    prog = fun([Array(Vector(Float, 4), N)], lambda v: map(lambda e: e) << v)
    for bad in (np.ones((3, 2), f32), np.ones((3, 4, 1), f32)):
        want = _outcome(lift.compile(prog), bad)
        assert want[0] == "LiftTypeError"
        assert _outcome(lambda a: lift.interpret(prog, a), bad) == want


EMPTY = {
    "sum": (fun([Array(Float, N)], lambda x: reduce(lift.add, 0.0) << x), (np.zeros(0, f32),)),
    "map": (fun([Array(Float, N)], lambda x: map(lift.id) << x), (np.zeros(0, f32),)),
    "dot": (fun([Array(Float, N), Array(Float, N)],
                lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y)),
            (np.zeros(0, f32), np.zeros(0, f32))),
    "rows": (fun([Array(Array(Float, M), N)], lambda a: map(lambda r: reduce(lift.add, 0.0) << r) << a),
             (np.zeros((3, 0), f32),)),
}


@pytest.mark.parametrize("case", list(EMPTY))
def test_empty_arrays_are_refused_plainly_and_alike(case: str) -> None:
    prog, args = EMPTY[case]
    with pytest.raises(lift.LiftValueError, match="empty arrays are not supported") as e:
        lift.interpret(prog, *args)
    assert e.value.got == args[0].shape and e.value.hint
    with pytest.raises(lift.LiftValueError, match="empty arrays are not supported"):
        lift.compile(prog)(*args)
