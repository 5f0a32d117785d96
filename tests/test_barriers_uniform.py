"""Loops made uniform for their barriers (issue 6, reachability): Listing 5.4 with rows that do
not divide among the work-items runs every work-item up to the rounded-up trip count, with
the body guarded on either side of the barrier; what cannot be split that way is rejected.

On PoCL the work-items of a group run one after another between barriers, so a missing
barrier (or one that some work-items skip) shows up as a wrong result; on a device where a
race may not show (a GPU: `races_show` is False), only the intact kernel's result is checked.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from test_barriers_mag import f, g, listing_5_4

import lift
from codegen_oracle import check, floats, run
from lift import Array, Float, Size, fun, join, map_lcl, map_seq, split, to_local, to_private, transpose, zip
from lift.arith import to_c
from lift.barriers import Synchronised, insert_barriers
from lift.codegen import build, generate
from lift.codegen.c_ast import Barrier, For
from lift.errors import NotSynchronisableError

N, M, K, J = Size("N"), Size("M"), Size("K"), Size("J")
RNG = np.random.default_rng(17)

# (input shape, local size): rows not a multiple of the work-items in dimension 1
DIVERGENT = [((7, 5, 6), (4, 2)), ((5, 3, 9), (4, 2)), ((10, 4, 8), (4, 3)), ((3, 4, 8), (4, 4)), ((9, 6, 5), (2, 4))]


def seq_inside_divergent():
    """Listing 5.3 per row of a map_lcl: the barriers sit inside map_seq[S], a loop in the body."""
    return fun([Array(Array(Array(Float, M), K), N)], lambda x: map_lcl(
        lambda rows: map_seq(lambda row: map_seq(g) << to_local(map_lcl(f, dim=0, label="F")) << row, label="S")
        << rows, dim=1, label="outer") << x)


def local_5_4():
    """Listing 5.4 with its intermediate in local memory (no question of other work-groups for z3)."""
    return fun([Array(Array(Array(Float, K), M), N)], lambda x: map_lcl(
        lambda rows: map_seq(map_lcl(g, dim=0)) << to_local(map_lcl(map_seq(f), dim=0)) << rows,
        dim=1, label="rows") << x)


def nested_divergent():
    """`local_5_4` inside another divergent map_lcl: making the inner loop uniform is not enough."""
    return fun([Array(Array(Array(Array(Float, K), M), J), N)], lambda x: map_lcl(map_lcl(
        lambda rows: map_seq(map_lcl(g, dim=0)) << to_local(map_lcl(map_seq(f), dim=0)) << rows,
        dim=1, label="inner"), dim=2, label="outer") << x)


def private_across_the_barrier():
    """A private row computed before the barrier and read after it (declared before the guarded parts)."""
    def perm(a):
        return join << transpose << split(2) << a

    return fun([Array(Array(Float, 8), N)], lambda x: map_lcl(
        lambda row: (lambda p: map_lcl(lambda q: q[0] + q[1], dim=0) << zip(p, perm(to_local(map_lcl(f, dim=0)) << p)))
        (to_private(map_seq(g)) << row), dim=1, label="rows") << x)


def uniform_records(program, **kw):
    out: list[Synchronised] = []

    def spy(root, alloc, probe):
        sync = insert_barriers(root, alloc, probe)
        out.append(sync)
        return sync

    build(program, barrier_pass=spy, **kw)
    return [u for s in out for u in s.uniform.values()]


def without_barriers(source: str) -> str:
    return re.sub(r"\n *barrier\([^)]*\);[^\n]*", "", source)


def needed(program, plan, x) -> bool:
    """Whether the plan without its barriers gives a wrong result for `x` (run before the intact
    plan, so that no right value is left over in local memory)."""
    broken = run(dataclasses.replace(plan, source=without_barriers(plan.source)), x)
    return not np.allclose(broken, lift.interpret(program, x))


# ----------------------------------------------------------------- the code


def test_the_rows_loop_is_rounded_up_and_the_body_guarded_around_the_barrier():
    (outer,) = [s for s in build(listing_5_4(), local_size=(4, 2)).unit.kernels[0].body.stmts if isinstance(s, For)]
    assert outer.kind == "lcl" and not outer.once and to_c(outer.bound) == "2*((N + 1) / 2)"
    first, barrier, second = outer.body.stmts
    assert isinstance(barrier, Barrier) and barrier.fence == "CLK_GLOBAL_MEM_FENCE"
    assert "made uniform" in barrier.comment
    for part in (first, second):
        assert isinstance(part, For) and part.once and part.guard and part.var.name == "l_rows"
        assert to_c(part.bound) == "N" and not any(isinstance(s, Barrier) for s in part.body.stmts)
    src = generate(listing_5_4(), local_size=(4, 2)).source
    assert "l_rows_u < 2*((N + 1) / 2); l_rows_u += get_local_size(1)" in src
    assert src.count("if (l_rows < N)") == 2


def test_the_uniform_loop_is_recorded():
    (u,) = uniform_records(listing_5_4(7, 4, 8), local_size=(4, 3))
    assert (u.kind, u.dim, str(u.count), str(u.bound), u.once) == ("lcl", 1, "7", "9", False)
    assert u.loop.startswith("map_lcl[rows]")
    (b,) = generate(listing_5_4(7, 4, 8), local_size=(4, 3)).barriers
    assert b.reason.endswith(u.note) and "(race: " in b.reason


def test_a_single_guarded_trip_keeps_its_single_trip_without_the_outer_guard():
    (u,) = uniform_records(listing_5_4(3, 4, 8), local_size=(4, 4))
    assert u.once and str(u.bound) == "3"
    (outer,) = [s for s in build(listing_5_4(3, 4, 8), local_size=(4, 4)).unit.kernels[0].body.stmts
                if isinstance(s, For)]
    assert outer.once and not outer.guard
    assert [type(s) for s in outer.body.stmts] == [For, Barrier, For]


def test_loops_that_are_uniform_already_are_left_alone():
    assert uniform_records(listing_5_4(6, 4, 8), local_size=(4, 3)) == []
    assert "_u" not in generate(listing_5_4(6, 4, 8), local_size=(4, 3)).source


def test_private_variables_are_declared_before_the_guarded_parts():
    (outer,) = [s for s in build(private_across_the_barrier(), local_size=(4, 2)).unit.kernels[0].body.stmts
                if isinstance(s, For)]
    kinds = [type(s).__name__ for s in outer.body.stmts]
    assert kinds[-3:] == ["For", "Barrier", "For"] and set(kinds[:-3]) == {"Decl"}


# ----------------------------------------------------------------- rejected


def test_a_barrier_inside_a_loop_of_the_body_is_rejected():
    with pytest.raises(NotSynchronisableError) as err:
        generate(seq_inside_divergent(), local_size=(4, 2))
    e = err.value
    assert e.label == "outer" and "map_lcl[outer]" in e.message and "of N iterations" in e.message
    assert "2 work-items in dimension 1" in e.message
    assert "cannot be made uniform" in e.message and "nested map_seq[S]" in e.message


def test_a_barrier_inside_nested_divergent_loops_is_rejected():
    with pytest.raises(NotSynchronisableError) as err:
        generate(nested_divergent(), local_size=(4, 2, 2))
    e = err.value
    assert e.label == "inner" and "of J iterations" in e.message and "2 work-items in dimension 1" in e.message
    assert "cannot be made uniform" in e.message and "map_lcl[outer]" in e.message and "diverges too" in e.message


def test_a_stride_that_is_not_a_constant_is_not_rounded():
    with pytest.raises(NotSynchronisableError) as err:
        generate(local_5_4())  # work-groups of min(N, 16) in a 2-D map_lcl nest: no constant to round N up to
    e = err.value
    assert e.label == "rows" and "map_lcl[rows]" in e.message
    assert "of N iterations" in e.message and "min(N, 16) work-items in dimension 1" in e.message
    assert "cannot be made uniform either: its stride (min(N, 16)) is not a constant" in e.message
    assert "multiple of get_local_size(1)" in e.hint and "constant local size" in e.hint
    (b,) = generate(local_5_4(), local_size=(4, 2)).barriers  # with a requested size it is made uniform
    assert b.fence == "CLK_LOCAL_MEM_FENCE" and "made uniform" in b.reason


# ----------------------------------------------------------------- on PoCL


@pytest.mark.device
@pytest.mark.parametrize("shape, local", DIVERGENT)
def test_listing_5_4_made_uniform_matches_the_interpreter(shape, local, races_show):
    x = floats(RNG, *shape)
    plan = build(listing_5_4(), local_size=local, verify=True).source
    assert "made uniform" in plan.barriers[0].reason
    assert not races_show or needed(listing_5_4(), plan, x)
    check(listing_5_4(), x, plan=plan)


@pytest.mark.device
@pytest.mark.parametrize("shape, local", DIVERGENT[:3])
def test_listing_5_4_in_local_memory_made_uniform_matches_the_interpreter(shape, local, races_show):
    x = floats(RNG, *shape)
    plan = build(local_5_4(), local_size=local, verify=True).source
    assert not races_show or needed(local_5_4(), plan, x)
    check(local_5_4(), x, plan=plan)


@pytest.mark.device
@pytest.mark.parametrize("n, m, k, local", [(3, 4, 8, (4, 4)), (6, 4, 8, (4, 4)), (7, 4, 8, (4, 3))])
def test_listing_5_4_with_constant_sizes_matches_the_interpreter(n, m, k, local):
    check(listing_5_4(n, m, k), floats(RNG, n, m, k), local_size=local)


@pytest.mark.device
@pytest.mark.parametrize("n", [3, 5])
def test_a_private_row_read_after_the_barrier(n, races_show):
    x = floats(RNG, n, 8)
    plan = build(private_across_the_barrier(), local_size=(4, 2), verify=True).source
    assert not races_show or needed(private_across_the_barrier(), plan, x)
    check(private_across_the_barrier(), x, plan=plan)
