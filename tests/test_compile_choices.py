"""`lift.compile` of high-level programs: the solver's mapping, explicit choices, rewrite points."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import lift
from lift import Array, Float, fun, map, reduce, zip
from programs import N, dot_program, gemv_program, rand, stencil2d_program

pytestmark = pytest.mark.device


def test_high_level_program_gets_the_solvers_mapping():
    a, v = rand(33, 17), rand(17)
    with warnings.catch_warnings():
        warnings.simplefilter("error", lift.LiftWarning)  # no fallback to the default lowering
        prog = lift.compile(gemv_program())
    assert prog.choices and all(isinstance(c, int) for c in prog.choices.values())
    assert any(c >= 10 for c in prog.choices.values()), "some map must be parallel"
    np.testing.assert_allclose(prog(a, v), lift.interpret(gemv_program(), a, v), rtol=1e-5)


def test_explicit_mapping_choices_are_applied():
    prog = fun([Array(Array(Float, N), lift.Size("M"))],
               lambda a: map(lambda row: reduce(lift.add, 0.0) << row, label="rows") << a)
    x = rand(8, 5)
    seq = lift.compile(prog, choices={"rows": 0})
    glb = lift.compile(prog, choices={"rows": 30})
    assert seq.choices == {"rows": 0} and "get_global_id" not in seq.source
    assert "get_global_id(0)" in glb.source
    for p in (seq, glb):
        np.testing.assert_allclose(p(x), x.sum(axis=1), rtol=1e-5)


def test_invalid_explicit_mapping_is_rejected_with_the_unsat_core():
    prog = fun([Array(Array(Float, N), lift.Size("M"))],
               lambda a: map(lambda row: map(lambda v: v * 2.0, label="inner") << row, label="outer") << a)
    with pytest.raises(lift.UnsatisfiableError) as err:
        lift.compile(prog, choices={"outer": 10, "inner": 10})  # map_lcl inside map_lcl, same dim
    assert err.value.core


@pytest.mark.parametrize("make,args", [
    (dot_program, lambda: (rand(1000), rand(1000, seed=1))),
    (stencil2d_program, lambda: (rand(3, 3), rand(9, 7))),
])
def test_solver_mapped_programs_match_the_interpreter(make, args):
    xs = args()
    got = lift.compile(make())(*xs)
    np.testing.assert_allclose(got, lift.interpret(make(), *xs), rtol=1e-4, atol=1e-4)


def test_rewrite_point_choices_reach_apply_all():
    from lift import rewrites as rw

    prog = fun([Array(Float, N), Array(Float, N)],
               lambda x, y: rw.split_reduce(lambda a, b: reduce(lift.add, 0.0) << map(lift.mult) << zip(a, b),
                                            label="T")(x, y))
    x, y = rand(64), rand(64, seed=3)
    tiled = lift.compile(prog, choices={"T": {"size": 16}})
    np.testing.assert_allclose(tiled(x, y), np.dot(x, y), rtol=1e-4)


def test_a_map_inside_a_nested_iterate_is_sequential_by_a_named_constraint_not_a_fallback():
    # the solver once mapped the map inside `iterate` to map_glb, which a work-item's iterate cannot
    # hold, and compile fell back to the default lowering; the model now states it
    prog = fun([Array(Array(Float, 8), N)],
               lambda a: map(lambda row: lift.iterate(2, lambda r: map(lambda v: v * 2.0) << r) << row) << a)
    x = rand(5, 8)
    space = lift.constraints.mapping_space(prog)
    assert any(c.kind == "sequential stage in a nested iterate" and c.labels == ("m1",) for c in space.constraints)
    assert not space.is_valid({"m1": 30})
    with warnings.catch_warnings():
        warnings.simplefilter("error", lift.MappingFallback)
        k = lift.compile(prog)
    assert k.choices.mapping == {"m0": 30, "m1": 0}  # the solver's mapping: the outer map stays parallel
    assert lift.compile(prog, choices=k.choices).source == k.source
    np.testing.assert_allclose(k(x), x * 4, rtol=1e-6)


def _rows_sum():
    return fun([Array(Array(Float, N), lift.Size("M"))],
               lambda a: map(lambda row: reduce(lift.add, 0.0) << row, label="rows") << a)


def test_launch_choices_without_sizes_are_a_clear_error():
    with pytest.raises(lift.LiftValueError, match="no sizes"):
        lift.compile(_rows_sum(), choices=lift.Choices(mapping={"rows": 30}, launch={"local_size_0": 4}))


def test_partial_launch_choices_name_what_is_missing():
    sizes = {"M": 8, "N": 5}
    with pytest.raises(lift.LiftValueError, match="no value for .*groups_0"):
        lift.compile(_rows_sum(), choices=lift.Choices(mapping={"rows": 30}, launch={"local_size_0": 4}, sizes=sizes))
    launch = {"local_size_0": 4, "groups_0": 2, "local_size_1": 1, "groups_1": 1, "local_size_2": 1, "groups_2": 1}
    prog = lift.compile(_rows_sum(), choices=lift.Choices(mapping={"rows": 30}, launch=launch, sizes=sizes))
    x = rand(8, 5)
    np.testing.assert_allclose(prog(x), x.sum(axis=1), rtol=1e-5)
    assert [r.local_size for r in prog.ndrange] == [(4,)]


def test_launch_choices_for_a_program_of_several_kernels_are_a_clear_error():
    """One thread configuration cannot fit kernels of different shapes: the error says to give
    local sizes per kernel instead."""
    two = fun([Array(Float, N)], lambda x: map(lift.id) << lift.ocl_kernel(map(lift.id)) << x)
    with pytest.raises(lift.LiftValueError, match="several kernels"):
        lift.compile(two, choices=lift.Choices(launch={"local_size_0": 4, "groups_0": 2}, sizes={"N": 8}))
