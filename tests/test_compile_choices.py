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
    # the solver's mapping: the outer map stays parallel (map_glb on a CPU; a GPU's may be map_wrg),
    # the inner one sequential
    assert k.choices.mapping["m1"] == 0 and k.choices.mapping["m0"] >= 10, k.choices.mapping
    if k.device.kind == "cpu":
        assert k.choices.mapping == {"m0": 30, "m1": 0}
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


@pytest.mark.requires_cpu_device  # the launch given fits the mapping the solver picks for a CPU
def test_launch_choices_size_the_deepest_ocl_kernel_of_several():
    """In a program of several kernels (block_nest's packing kernels, then its blocks), the launch
    variables size the kernel whose maps nest deepest, by name; the others keep their default."""
    from lift.compile import apply_points
    from lift.constraints import joint_space
    from lift.rewrites.auto import default_points

    m = lift.Size("M")
    sizes = {"M": 256, "N": 256, "K": 256}  # the default points block nests of this size, not of 64
    mm = fun([Array(Array(Float, lift.Size("K")), m), Array(Array(Float, N), lift.Size("K"))],
             lambda a, b: map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c))
                              << (lift.transpose << b)) << a)
    points = {"auto_b0": {"pack": "ab", "rows": 4, "cols": 2, "width": 8, "layout": "copy", "along": "output"}}
    placed = default_points(lift.constraints.substitute_sizes(mm, sizes))
    space = joint_space(apply_points(placed, points), sizes=sizes)
    assert space.launch_kernel and "local_size_0" in space.variables
    # 16 column blocks (dimension 0) x 64 row blocks (dimension 1): groups of 1 x 8 blocks
    launch = {"local_size_0": 1, "groups_0": 16, "local_size_1": 8, "groups_1": 8, "local_size_2": 1, "groups_2": 1}
    prog = lift.compile(mm, choices=lift.Choices(points=points, launch=launch, sizes=sizes))
    sized = {r.kernel: r.local_size for r in prog.ndrange}
    assert sized[space.launch_kernel] == (1, 8) and sum(v is not None for v in sized.values()) == 1
    a, b = rand(256, 256), rand(256, 256, seed=1)
    np.testing.assert_allclose(prog(a, b), a.astype(np.float64) @ b, rtol=1e-4)
    again = lift.compile(mm, choices=prog.choices)
    assert {r.kernel: r.local_size for r in again.ndrange} == sized


def test_launch_choices_for_a_staged_kernel_of_several_are_a_clear_error():
    """The deepest kernel is a staged top-level call, not an ocl_kernel that launch sizes can name."""
    two = fun([Array(Float, N)], lambda x: map(map(lift.id)) << lift.split(4) << lift.ocl_kernel(map(lift.id)) << x)
    with pytest.raises(lift.LiftValueError, match="none is an ocl_kernel"):
        lift.compile(two, choices=lift.Choices(launch={"local_size_0": 4, "groups_0": 2}, sizes={"N": 16}))


def test_sampled_launches_of_a_packed_matmul_compute_the_product():
    """Launch choices drawn from the joint space of a program of several kernels (with the
    mapping drawn with them) compile, size the named kernel as drawn, and compute A B."""
    from lift.compile import apply_points
    from lift.constraints import joint_space
    from lift.rewrites.auto import default_points

    sizes = {"M": 256, "N": 256, "K": 256}
    mm = fun([Array(Array(Float, lift.Size("K")), lift.Size("M")), Array(Array(Float, N), lift.Size("K"))],
             lambda a, b: map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c))
                              << (lift.transpose << b)) << a)
    points = {"auto_b0": {"pack": "b", "rows": 4, "cols": 2, "width": 8, "layout": "copy", "along": "output"}}
    space = joint_space(apply_points(default_points(lift.constraints.substitute_sizes(mm, sizes)), points),
                        sizes=sizes)
    a, b = rand(256, 256), rand(256, 256, seed=1)
    want = a.astype(np.float64) @ b
    drawn = space.sample(4, seed=3)
    assert len(drawn) == 4
    for choice in drawn:
        maps = set(space.context.maps)
        launch = {k: v for k, v in choice.items() if k.startswith(("local_size_", "groups_"))}
        rest = {k: v for k, v in choice.items() if k not in maps and k not in launch}
        prog = lift.compile(mm, choices=lift.Choices(points=points, sizes=sizes, launch=launch, tuning=rest,
                                                     mapping={k: v for k, v in choice.items() if k in maps}))
        sized = {r.kernel: (r.global_size, r.local_size) for r in prog.ndrange}
        assert sized[space.launch_kernel] == space.ndrange(choice)  # the others: their own launch
        np.testing.assert_allclose(prog(a, b), want, rtol=1e-4)
