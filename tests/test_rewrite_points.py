"""Rewrite points as IR nodes (thesis 6.2.1-6.2.3): identity meaning, typing, printing,
labels, nesting and the top-down application of Algorithm 4."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, reduce, zip
from lift import rewrites as rw
from lift.errors import RewritePointSkipped
from lift.ir.paths import children, walk
from tests.programs import mult, rand

N, M = Size("N"), Size("M")


def tiled_map():
    return fun([Array(Float, N)], lambda x: rw.split_join(rw.split_join(map(lift.id), label="A"), label="B") << x)


def dot_with_point(label: str = "R"):
    return fun([Array(Float, N), Array(Float, N)],
               lambda x, y: rw.split_reduce(lambda p: reduce(lift.add, 0.0) << map(mult) << p, label=label)
               << zip(x, y))


def test_a_point_means_its_body_for_the_type_checker_and_the_interpreter() -> None:
    prog = dot_with_point()
    plain = fun([Array(Float, N), Array(Float, N)], lambda x, y: reduce(lift.add, 0.0) << map(mult) << zip(x, y))
    assert str(lift.typecheck(prog)) == str(lift.typecheck(plain))
    x, y = rand(64), rand(64, seed=1)
    assert np.allclose(lift.interpret(prog, x, y), np.dot(x, y), rtol=1e-5)


def test_a_point_is_a_node_with_one_child_and_prints_with_its_label() -> None:
    prog = tiled_map()
    pts = [n for _, n in walk(prog) if rw.is_point(n)]
    assert [p.label for p in pts] == ["B", "A"]
    assert children(pts[0]) == (pts[1],)
    assert "split_join[B](split_join[A](map(id)))" in str(prog)


def test_unlabelled_points_get_kind_and_index_labels() -> None:
    prog = fun([Array(Float, N)], lambda x: rw.split_join(map(lift.id)) << x)
    assert list(rw.points(prog)) == ["split_join0"]
    assert rw.structural_space(prog) == {"split_join0": {"skip": (False, True)}}


def test_nested_points_apply_top_down_into_a_double_tiling() -> None:
    """Thesis Fig. 6.2 (b): the outer point places the inner one around the new map nest."""
    out = rw.apply_all(tiled_map(), {"A": {"size": 4}, "B": {"size": 2}})
    assert str(out) == "(x) => join << join << map(map(map(id))) << split(4) << split(2) << x"
    x = rand(32)
    assert np.array_equal(lift.interpret(out, x), x)


def test_skip_eliminates_a_point_and_keeps_the_nested_ones() -> None:
    out = rw.apply_all(tiled_map(), {"A": {"size": 4}, "B": {"skip": True}})
    assert str(out) == "(x) => join << map(map(id)) << split(4) << x"
    assert not any(rw.is_point(n) for _, n in walk(out))


def test_a_tile_size_not_chosen_is_a_tuning_variable() -> None:
    out = rw.apply_all(dot_with_point())
    assert "split(T_R)" in str(out)
    from lift.constraints import tuning_space

    assert "T_R" in tuning_space(out, "pocl-cpu", sizes={"N": 240}).variables


def test_a_point_that_does_not_match_is_skipped_with_a_warning_naming_label_and_line() -> None:
    prog = fun([Array(Float, N)], lambda x: rw.flatten(map(lift.id), label="F") << x)
    outcomes: list = []
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = rw.apply_all(prog, outcomes=outcomes)
    w = [g.message for g in got if isinstance(g.message, RewritePointSkipped)]
    assert len(w) == 1 and w[0].label == "F" and w[0].line == prog.body.f.loc.line
    assert "map(map(f))" in w[0].reason
    assert str(out) == "(x) => map(id) << x"
    assert outcomes[0].applied is False and outcomes[0].label == "F"


def test_warnings_can_be_silenced_per_call() -> None:
    prog = fun([Array(Float, N)], lambda x: rw.flatten(map(lift.id), label="F") << x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rw.apply_all(prog, warn=False)


def test_an_ill_typed_choice_is_skipped_not_raised() -> None:
    prog = fun([Array(Float, 12)], lambda x: rw.split_join(map(lift.id), label="A") << x)
    with pytest.warns(RewritePointSkipped, match="A"):
        out = rw.apply_all(prog, {"A": {"size": 5}})  # 5 does not divide 12
    assert str(out) == "(x) => map(id) << x"


def test_a_point_in_function_position_is_applied_with_its_argument_types() -> None:
    prog = fun([Array(Array(Float, N), M)], lambda a: map(rw.split_join(map(lift.id), label="S")) << a)
    out = rw.apply_all(prog, {"S": {"size": 2}})
    assert "split(2)" in str(out) and not any(rw.is_point(n) for _, n in walk(out))
    a = rand(3, 8)
    assert np.array_equal(lift.interpret(out, a), a)


def test_apply_all_of_a_program_without_points_is_the_identity() -> None:
    prog = fun([Array(Float, N)], lambda x: map(lift.id) << x)
    assert rw.apply_all(prog, {}) is prog
