"""The launch sizes of the tuner's seed candidates (lift.constraints.prefer.complete): one work-item
per iteration, and column-block groups for a 2-D grid of register blocks."""

from __future__ import annotations

import lift
from lift import Array, Float, Size, fun, map, reduce, zip
from lift.compile import apply_points
from lift.constraints import joint_space, substitute_sizes
from lift.constraints.prefer import complete
from lift.rewrites.auto import default_points


def test_a_seed_launches_one_work_item_per_iteration() -> None:
    """The preference for many groups alone took the most the launch constraints allow (up to
    twice the iterations, the rest idle behind the bounds check)."""
    n = Size("N")
    space = joint_space(fun([Array(Float, n)], lambda x: map(lift.id) << x), sizes={"N": 1000})
    joint = complete(space, {})
    assert joint is not None
    glb = [lab for lab in space.context.maps if joint[lab] == 30]
    assert glb, joint
    work = joint["local_size_0"] * joint["groups_0"]
    assert 1000 <= work < 1000 + joint["local_size_0"]


def test_grid_seeds_of_a_packed_matmul_group_row_blocks_of_one_column_block() -> None:
    sizes = {"M": 256, "N": 256, "K": 256}
    m, nn, k = Size("M"), Size("N"), Size("K")
    mm = fun([Array(Array(Float, k), m), Array(Array(Float, nn), k)],
             lambda a, b: map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c))
                              << (lift.transpose << b)) << a)
    points = {"auto_b0": {"pack": "ab", "rows": 4, "cols": 2, "width": 8, "layout": "copy", "along": "output"}}
    space = joint_space(apply_points(default_points(substitute_sizes(mm, sizes)), points), sizes=sizes)
    joint = complete(space, {}, grid=True)
    assert joint is not None
    # 16 column blocks of 2 float8 in dimension 0, 64 row blocks of 4 rows in dimension 1
    assert (joint["local_size_0"], joint["groups_0"]) == (1, 16)
    assert (joint["local_size_1"], joint["groups_1"]) == (64, 1)
    assert space.ndrange(joint) == ((16, 64), (1, 64))


def test_a_program_of_constant_sizes_has_launch_variables_when_its_sizes_are_known() -> None:
    """`sizes={}` (every size a constant, as `lift.tune` binds them) is known sizes: the thread
    configuration is a choice, as for a program with symbolic sizes; without `sizes` it is not."""
    prog = fun([Array(Float, 1000)], lambda x: map(lift.id) << x)
    assert "local_size_0" in joint_space(prog, sizes={}).variables
    assert not any(v.startswith("local_size_") for v in joint_space(prog).variables)
    joint = complete(joint_space(prog, sizes={}), {})
    assert joint is not None and 1000 <= joint["local_size_0"] * joint["groups_0"] < 1000 + joint["local_size_0"]
