"""The conservative barrier pass: placements, fences, and the errors for unreachable barriers."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

import lift
from codegen_oracle import check, floats, run
from lift import Array, Float, Size, fun, join, map_glb, map_lcl, map_seq, map_wrg, split, to_local, transpose
from lift.codegen import generate
from lift.errors import NotSynchronisableError

N, M = Size("N"), Size("M")
RNG = np.random.default_rng(3)


def tiled_transpose():
    """Each work-group copies a 4x4 tile to local memory, then reads it transposed."""
    return fun([Array(Float, N)], lambda x: join << map_wrg(
        lambda t: map_lcl(lift.id, label="B") << join << transpose << split(4)
        << to_local(map_lcl(lift.id, label="A")) << t) << split(16) << x)


def test_barrier_after_map_lcl_read_by_other_work_items():
    plan = generate(tiled_transpose())
    (first,) = plan.barriers  # by default every group runs one tile: nothing is overwritten
    assert first.fence == "CLK_LOCAL_MEM_FENCE" and "map_lcl[A]" in first.after and first.buffers == ("tmp",)
    assert "read by other work-items" in first.reason
    assert plan.source.count("barrier(CLK_LOCAL_MEM_FENCE)") == 1


def test_barrier_before_the_next_tile_overwrites_local_memory():
    plan = generate(tiled_transpose(), global_size=32, local_size=16)  # two groups, several tiles each
    first, second = plan.barriers
    assert "map_lcl[A]" in first.after and "read-after-write" in first.reason
    assert "overwritten" in second.reason and "map_lcl[B]" in second.reason and second.buffers == ("tmp",)
    assert plan.source.count("barrier(CLK_LOCAL_MEM_FENCE)") == 2


@pytest.mark.device
@pytest.mark.races_visible
def test_removing_the_barrier_gives_wrong_results_on_pocl():
    prog = tiled_transpose()
    x = floats(RNG, 256)
    plan = check(prog, x)  # with barriers: right
    stripped = re.sub(r"\n *barrier\([^)]*\);[^\n]*", "", plan.source)
    assert "barrier" not in stripped
    broken = run(dataclasses.replace(plan, source=stripped), x)
    assert not np.allclose(broken, lift.interpret(prog, x))


@pytest.mark.device
def test_global_fence_for_global_intermediate():
    prog = fun([Array(Array(Float, M), N)], lambda a: map_wrg(
        lambda r: map_lcl(lift.id) << lift.pad(1, 0, 0.0) << lift.to_global(map_lcl(lambda v: v * 2.0)) << r) << a)
    plan = check(prog, floats(RNG, 4, 8))
    assert plan.barriers and {b.fence for b in plan.barriers} == {"CLK_GLOBAL_MEM_FENCE"}


def test_elementwise_chain_needs_no_barrier():
    prog = fun([Array(Float, N)], lambda x: map_glb(lift.id) << map_glb(lambda v: v * 2.0) << x)
    assert generate(prog).barriers == ()


def test_barrier_inside_a_divergent_loop_is_rejected():
    prog = fun([Array(Array(Array(Float, 8), M), N)], lambda a: map_wrg(map_lcl(
        lambda row: map_lcl(lift.id, dim=0) << join << transpose << split(2) << to_local(map_lcl(lift.id, dim=0))
        << row, dim=1)) << a)
    with pytest.raises(NotSynchronisableError, match="map_lcl|lcl loop") as err:
        generate(prog)
    assert err.value.node is not None


def test_work_groups_cannot_synchronise():
    prog = fun([Array(Array(Float, M), N)],
               lambda a: map_glb(map_seq(lift.id)) << transpose << map_glb(map_seq(lift.id)) << a)
    with pytest.raises(NotSynchronisableError, match="work-groups") as err:
        generate(prog)
    assert "ocl_kernel" in err.value.hint
