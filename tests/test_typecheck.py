"""Type rules (thesis Fig. 2.8, 2.9, 2.12) and type errors that name node, types and line."""

from __future__ import annotations

import inspect

import pytest

import lift
from lift import (
    Array,
    Float,
    Int,
    Size,
    Tuple,
    Vector,
    as_scalar,
    as_vector,
    fun,
    join,
    map,
    pad,
    reduce,
    slide,
    split,
    transpose,
    user_fun,
    zip,
)
from lift.arith import Cst, exact_div
from lift.types import ArrayType, FunType, TupleType, types_equal
from programs import conv_program, dot_program, matmul_program, stencil2d_program

N, M = Size("N"), Size("M")


def line_of(marker: str) -> int:
    """The line number in this file of the first line containing `marker`."""
    src, start = inspect.getsourcelines(inspect.getmodule(line_of))
    for i, text in enumerate(src):
        if marker in text and "line_of(" not in text:
            return start + i if start else i + 1
    raise AssertionError(marker)


def test_program_types():
    assert str(lift.typecheck(dot_program())) == "([Float]N, [Float]N) => Float"
    assert str(lift.typecheck(matmul_program())) == "([[Float]K]M, [[Float]K]N) => [[Float]N]M"
    assert lift.typecheck(stencil2d_program()).out == Array(Array(Float, Size("W")), Size("H"))
    t = lift.typecheck(conv_program(3, 3, 2, 0))
    assert isinstance(t, FunType)
    H, W = Size("H"), Size("W")
    assert types_equal(t.out, Array(Array(Array(Float, M), (W - 1) // 2), (H - 1) // 2))


def test_layout_type_rules():
    x = lift.Param(Array(Float, N), "x")
    assert (split(4) << x).type == Array(Array(Float, 4), exact_div(N, 4))
    assert (join << split(4) << x).type == x.type  # exact division: 4 * (N / 4) == N
    assert (slide(3, 1) << x).type == Array(Array(Float, 3), N - 2)
    assert (pad(1, 2, 0.0) << x).type == Array(Float, N + 3)
    y = lift.Param(Array(Array(Float, N), M), "y")
    assert (transpose << y).type == Array(Array(Float, M), N)
    assert (as_vector(4) << x).type == Array(Vector(Float, 4), exact_div(N, 4))
    assert (as_scalar << as_vector(4) << x).type.elem == Float
    z = zip(x, x)
    assert z.type == Array(Tuple(Float, Float), N)
    assert isinstance(z.type.elem, TupleType)


def test_size_conditions_recorded_not_guessed():
    prog = fun([Array(Float, N)], lambda x: split(4) << x)
    conds = lift.size_conditions(prog)
    assert [(c.kind, c.a, c.b) for c in conds] == [("divides", Cst(4), N)]
    assert "split(4)" in str(conds[0].node)


def test_constant_conditions_are_checked_at_once():
    with pytest.raises(lift.LiftTypeError, match=r"split\(4\) needs 4 to divide 10") as err:
        fun([Array(Float, 10)], lambda x: split(4) << x)  # SPLIT10
    assert err.value.loc.line == line_of("# SPLIT10")


def test_zip_of_unequal_lengths():
    with pytest.raises(lift.LiftTypeError) as err:
        fun([Array(Float, N), Array(Float, M)], lambda x, y: map(lift.mult) << zip(x, y, label="Z"))  # ZIPNM
    e = err.value
    assert "zip expects arrays of equal length, got [Float]N and [Float]M" in str(e)
    assert e.label == "Z" and e.loc.line == line_of("# ZIPNM")
    assert str(e.expected) == "[Float]N" and str(e.got) == "[Float]M"
    assert "zip(x, y)" in str(e)


def test_mismatched_user_function_arguments():
    mult2 = user_fun(lambda a, b: a * b, [Float, Float], Float, name="mult2")
    with pytest.raises(lift.LiftTypeError) as err:
        fun([Array(Int, N)], lambda x: map(lambda v: mult2(v, v)) << x)  # UFARGS
    e = err.value
    assert "user function mult2 expects Float for argument 0, got Int" in str(e)
    assert e.expected == Float and e.got == Int and e.loc.line == line_of("# UFARGS")


def test_lambda_applied_to_the_wrong_type():
    row_sum = fun([Array(Float, 4)], lambda r: reduce(lift.add, 0.0) << r)
    with pytest.raises(lift.LiftTypeError) as err:
        fun([Array(Float, N)], lambda x: map(row_sum) << x)  # WRONGTYPE
    e = err.value
    assert "expects [Float]4, got Float" in str(e)
    assert e.expected == Array(Float, 4) and e.got == Float
    assert e.loc.line == line_of("# WRONGTYPE")


def test_lambda_arity_mismatch():
    with pytest.raises(lift.LiftTypeError, match=r"lambda takes 2 parameter\(s\) \(a, b\) but is applied to 1"):
        fun([Array(Float, N)], lambda x: map(lambda a, b: a) << x)


def test_reduce_operator_must_return_accumulator_type():
    with pytest.raises(lift.LiftTypeError, match="reduce function must return the accumulator type"):
        fun([Array(Array(Float, 4), N)], lambda x: reduce(lambda acc, r: r, 0.0) << x)


def test_non_array_arguments():
    with pytest.raises(lift.LiftTypeError, match="join .*expects an array, got Float"):
        fun([Array(Float, N)], lambda x: join << x)


def test_unapplied_function_is_not_a_program():
    with pytest.raises(lift.LiftTypeError, match="without argument types") as err:
        lift.typecheck(map(lambda v: v))
    assert "lift.fun" in err.value.hint


def test_transpose_needs_two_dimensions():
    with pytest.raises(lift.LiftTypeError, match="transpose"):
        fun([Array(Float, N)], lambda x: transpose << x)


def test_array_type_equality_is_up_to_arithmetic():
    assert types_equal(Array(Float, N + N), Array(Float, 2 * N))
    assert not types_equal(Array(Float, N), Array(Float, M))
    assert isinstance(Array(Float, 3), ArrayType)


def test_typed_is_the_stage_record_types_by_path_and_size_conditions():
    import sys

    from lift.ir.paths import at
    from lift.typecheck import size_conditions, type_of, typed

    n = Size("N")
    p = fun([Array(Float, n)], lambda x: join << map(map(lift.id)) << split(4) << x)
    record = typed(p)
    assert record.program is p and record.type == lift.typecheck(p)
    for path, t in record.types.items():
        assert t == at(p, path).type
    assert record.types[(0,)] == Array(Float, n)  # the body
    assert [c.kind for c in record.conditions] == ["divides"] and record.conditions == tuple(size_conditions(p))
    assert not hasattr(sys.modules["lift.typecheck"], "_TYPES")  # no global table: memoised on the call
    assert type_of(p.body) is type_of(p.body)
