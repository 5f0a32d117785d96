"""Uniqueness in the tuner's space (issue 42, thesis 7.2.1): tile sizes of all-sequential loops
fixed, thread dimensions 1 and 2 ordered (lift.constraints.unique), candidates that plan a
program already proposed not built again (lift.explore.unique)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import lift
from lift import Array, Float, fun, transpose
from lift.choices import Choices
from lift.constraints import joint_space
from lift.constraints.unique import SEQUENTIAL_TILE, SYMMETRIC_DIMENSION, sized_maps
from lift.explore.evaluate import Evaluator
from lift.explore.points import key as point_key
from lift.explore.unique import Unique, program_key, simplified
from lift.rules.normalise import normalise
from lift.spaces import points_applied
from tests.programs import matmul_program, rand
from tests.test_tune import tiled_dot, tiled_gemv

CPU = lift.devices.profile("pocl-cpu")
SIZES = {"N": 256, "M": 32}


def _gemv_space(unique: bool):
    applied = points_applied(tiled_gemv(), Choices(points={"R": {}}))
    return joint_space(applied, CPU, sizes=SIZES, unique=unique)


def _tiles(space, **codes: int) -> set[int]:
    """The values of T_R valid with the maps' codes fixed."""
    return {v for v in space.model.domains["T_R"] if space.is_valid({**codes, "T_R": v})}


def test_a_tuning_parameter_of_an_all_sequential_nest_is_fixed() -> None:
    free, unique = _gemv_space(False), _gemv_space(True)
    assert sized_maps(unique.context, "T_R") == ["m1"]  # T_R sizes the loop over the chunks only
    kinds = {c.kind for c in unique.constraints} - {c.kind for c in free.constraints}
    assert SEQUENTIAL_TILE in kinds
    # every map sequential: every tile size is one kernel; without the constraint all are candidates
    assert len(_tiles(free, m0=0, m1=0)) > 3
    assert _tiles(unique, m0=0, m1=0) == {256}  # the largest: one chunk, the loop as written
    assert _tiles(unique, m0=30, m1=0) == {256}  # the rows parallel, the chunk loop still sequential
    free_n, unique_n = free.count(limit=20_000), unique.count(limit=20_000)
    assert unique_n is not None
    assert free_n is None or free_n > 5 * unique_n  # None: more than the limit, larger still


def test_a_tuning_parameter_of_a_parallel_loop_stays_open() -> None:
    applied = points_applied(tiled_dot(), Choices(points={"R": {}}))
    free, unique = (joint_space(applied, CPU, sizes={"N": 1024}, unique=u) for u in (False, True))
    (chunks,) = sized_maps(unique.context, "T_R")
    # the chunk loop parallel: the tile size is the work per work-item, every value a kernel of its own
    assert _tiles(unique, **{chunks: 30}) == _tiles(free, **{chunks: 30}) and len(_tiles(free, **{chunks: 30})) > 3
    assert len(_tiles(unique, **{chunks: 0})) == 1 < len(_tiles(free, **{chunks: 0}))


def test_symmetric_thread_dimensions_are_ordered() -> None:
    prog = normalise(matmul_program())
    sizes = {"M": 16, "N": 16, "K": 16}
    free, unique = (joint_space(prog, CPU, sizes=sizes, unique=u) for u in (False, True))
    assert any(c.kind == SYMMETRIC_DIMENSION for c in unique.constraints)
    outer, inner = sorted(unique.context.maps, key=lambda m: unique.context.maps[m].path)
    for a, b in ((32, 31), (32, 30)):  # the first map on dimension 1 or 2 uses 2: a permutation of (31, ..)
        assert free.is_valid({outer: a, inner: b}) and not unique.is_valid({outer: a, inner: b})
    assert unique.is_valid({outer: 31, inner: 32}) and unique.is_valid({outer: 31, inner: 30})


def test_no_uniqueness_constraint_on_a_device_whose_dimensions_differ() -> None:
    prog = normalise(matmul_program())
    odd = replace(CPU, max_work_item_sizes=(1024, 1024, 64))  # dimension 2 smaller: not interchangeable
    space = joint_space(prog, odd, sizes={"M": 16, "N": 16, "K": 16}, unique=True)
    assert not any(c.kind == SYMMETRIC_DIMENSION for c in space.constraints)


def test_cancelling_rewrites_have_one_key() -> None:
    x = fun([Array(Array(Float, 8), 4)], lambda a: transpose << transpose << a)
    assert str(simplified(x)) != str(x) and "transpose" not in str(simplified(x))


class _Twice:
    """A strategy proposing each of `points` twice in a row."""

    def __init__(self, points):
        self.points = [p for p in points for _ in range(2)]

    def propose(self, history):
        return self.points.pop(0) if self.points else None


@pytest.mark.device
def test_a_candidate_planning_the_same_program_is_not_proposed_again() -> None:
    a, v = rand(32, 256), rand(256)
    pipe = Evaluator(tiled_gemv(), (a, v), None, SIZES)
    pipe.unique = True
    skipped = {"R": {"skip": True}}
    one = pipe.point(skipped, {"m0": 30})
    other = one.replace(points={"R": {"skip": True, "T": 64}})  # a skipped point's parameter: the same program
    assert point_key(one) != point_key(other) and program_key(pipe, one) == program_key(pipe, other)
    applied = pipe.point({"R": {"skip": False}}, {"m0": 30, "m1": 0, "T_R": 256})
    u = Unique(pipe, _Twice([one, other, applied]))
    got = []
    while (c := u.propose([])) is not None:
        got.append(c)
    assert [point_key(c) for c in got] == [point_key(one), point_key(applied)]
    assert u.redundant == 4  # one again, other (twice), applied again
    prog = pipe.build(applied)
    assert np.allclose(prog(a, v), a @ v, rtol=1e-3)


@pytest.mark.device
def test_a_tune_reports_redundant_proposals_and_searches_fewer_tile_sizes() -> None:
    a, v = rand(32, 256), rand(256)
    res = lift.tune(tiled_gemv(), a, v, budget=120, trials=8, db=False, progress=False)
    assert "redundant" in res.stats and res.stats["redundant"] >= 0
    for r in res.history:  # every tile size tried with the chunk loop sequential is the canonical one
        if r.candidate.mapping and r.candidate.mapping.get("m1") == 0 and "T_R" in r.candidate.tuning:
            assert r.candidate.tuning["T_R"] == 256
        assert (r.ok and r.checked) or not r.ok
    assert np.allclose(res.best(a, v), a @ v, rtol=1e-3)
