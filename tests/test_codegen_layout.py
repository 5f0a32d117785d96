"""Maps of layout patterns (`map(transpose)`, `map(join)`) are views: no loop, no buffer, no kernel."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from codegen_oracle import check, floats
from lift import (
    Array,
    Float,
    Size,
    fun,
    get,
    join,
    map,
    map_glb,
    map_lcl,
    map_seq,
    map_wrg,
    pad,
    split,
    to_local,
    transpose,
    zip,
)
from lift.ir import nodes as n
from lift.ir.paths import walk
from lift.layout import invertible, is_layout_fun, is_layout_map
from lift.lower import lower, verify_lowered

N = Size("N")
RNG = np.random.default_rng(3)
A = floats(RNG, 16, 4)


def test_layout_functions_are_recognised():
    f = fun([Array(Array(Float, 4), N)], lambda a: map(lambda r: join << transpose << split(2) << r) << a)
    m = f.body.f
    assert is_layout_map(m) and is_layout_fun(m) and invertible(m)
    assert invertible(n.Map(n.Transpose())) and invertible(n.MapSeq(n.Join()))
    assert not invertible(n.Map(n.Pad(1, 1, 0.0)))  # pad cannot be written through
    assert not is_layout_map(n.Map(lift.id))


def test_lowering_keeps_a_layout_map_a_map():
    p = fun([Array(Array(Float, 4), N)], lambda a: map(join) << map(split(2)) << map(map(lift.id)) << a)
    low = lower(p)
    verify_lowered(low, p)
    kinds = [type(x).__name__ for _, x in walk(low) if isinstance(x, n.AbstractMap | n.OclKernel)]
    assert kinds == ["Map", "Map", "MapGlb", "MapSeq"]


def test_verify_lowered_rejects_a_computing_map():
    p = fun([Array(Float, N)], lambda x: map(lift.id) << x)
    with pytest.raises(lift.LiftValueError, match="verify_lowered: map\\(id\\) .*is not mapped"):
        verify_lowered(p)


@pytest.mark.device
def test_top_level_layout_map_stays_in_the_kernel():
    p = fun([Array(Array(Float, 4), N)], lambda a: map(transpose) << map(split(2)) << map(map(lift.id)) << a)
    plan = check(p, A)
    assert plan.kernels == ("lift_kernel",) and [b.role for b in plan.buffers] == ["input", "output"]
    assert "out[4*gl + i / 2 + 2*(i % 2)]" in plan.source  # written through the transposed view


@pytest.mark.device
def test_layout_map_of_a_work_group_result_is_written_in_place():
    p = fun([Array(Array(Float, 4), N)],
            lambda a: map(join) << map_wrg(map_lcl(lambda v: map_seq(map_seq(lift.id)) << split(2) << v))
            << split(2) << a)
    plan = check(p, A, local_size=2)
    assert "tmp" not in plan.source and not plan.barriers


@pytest.mark.device
def test_layout_map_between_local_producer_and_consumer():
    p = fun([Array(Array(Float, 4), N)], lambda a: map_wrg(
        lambda g: map_lcl(map_seq(map_seq(lift.id))) << map(transpose)
        << to_local(map_lcl(map_seq(map_seq(lift.id)))) << map(split(2)) << g) << split(2) << a)
    plan = check(p, A, local_size=2)
    assert plan.source.count("local float") == 1  # only the to_local buffer


@pytest.mark.device
def test_unzipping_a_local_tile_with_maps_of_get():
    def group(g):
        tile = to_local(map_lcl(lambda q: (lift.id(q[0]), lift.id(q[1])))) << g
        return map_lcl(lambda q: q[0] * q[1]) << zip(map(get(0)) << tile, map(get(1)) << tile)

    p = fun([Array(Float, N), Array(Float, N)], lambda x, y: join << map_wrg(group) << split(8) << zip(x, y))
    x, y = floats(RNG, 32), floats(RNG, 32)
    check(p, x, y, local_size=8)


@pytest.mark.device
def test_a_map_of_pad_is_read_as_a_view():
    p = fun([Array(Array(Float, 4), N)], lambda a: map_glb(map_seq(lift.id)) << map(pad(1, 1, 0.0)) << a)
    plan = check(p, A)
    assert "? a[" in plan.source
