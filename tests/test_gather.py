"""`gather(table, idx)` (lift/gather.py): typing, both interpreters with their range checks, and
compiled programs equal to the interpreter (views carrying a runtime index, vectors, padding,
nested gathers, computed indices, local memory under the barrier pass); an index input out of
range is refused on the host, a computed one is clamped into the table."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import (
    Array,
    Float,
    Int,
    Size,
    as_scalar,
    as_vector,
    fun,
    gather,
    join,
    map,
    map_glb,
    map_lcl,
    map_seq,
    map_wrg,
    mult,
    pad,
    reduce,
    split,
    to_local,
    transpose,
    user_fun,
    vectorise,
)
from lift.interpret import Stats
from lift.testing import assert_same

N, M, D, B = Size("N"), Size("M"), Size("D"), Size("B")
RNG = np.random.default_rng(3)
inc = user_fun(lambda a: a + 1, [Int], Int, name="inc")


def table(*shape: int) -> np.ndarray:
    return RNG.random(shape, dtype=np.float32)


def ids(n: int, *shape: int) -> np.ndarray:
    return RNG.integers(0, n, shape).astype(np.int32)


def both(p: lift.Lambda, *args: np.ndarray) -> np.ndarray:
    """The interpreter's value, batched and element-wise equal, batched without a fallback."""
    stats = Stats()
    got = lift.interpret(p, *args, stats=stats)
    assert_same(lift.interpret(p, *args, batched=False), got)
    assert not stats.fallbacks
    return got


def test_gather_types_and_prints() -> None:
    p = fun([Array(Array(Float, D), N), Array(Int, M)], lambda t, i: gather(t, i))
    assert str(p.body.type) == str(Array(Array(Float, D), M))
    assert "gather(t, i)" in str(p)
    with pytest.raises(lift.LiftTypeError, match="Int indices"):
        fun([Array(Float, N), Array(Float, M)], lambda t, i: gather(t, i))
    with pytest.raises(lift.LiftTypeError, match="array to read from"):
        fun([Float, Array(Int, M)], lambda t, i: gather(t, i))


def test_interpreters_gather_rows_and_check_ranges() -> None:
    p = fun([Array(Array(Float, D), N), Array(Array(Int, M), B)], lambda t, i: map(gather(t)) << i)
    t, i = table(7, 3), ids(7, 4, 5)
    np.testing.assert_array_equal(both(p, t, i), t[i])
    for bad in (-1, 7):
        j = i.copy()
        j[3, 2] = bad
        for batched in (True, False):
            with pytest.raises(lift.LiftValueError, match=f"index {bad} out of range"):
                lift.interpret(p, t, j, batched=batched)


def test_batched_gather_inside_maps_broadcasts_the_table() -> None:
    p = fun([Array(Float, N), Array(Array(Int, M), B)],
            lambda t, i: map(lambda r: reduce(lift.add, 0.0) << map(lambda x: mult(x, x)) << gather(t, r)) << i)
    t, i = table(9), ids(9, 6, 4)
    np.testing.assert_allclose(both(p, t, i), (t[i] ** 2).sum(axis=1), rtol=1e-6)


def _compiled(p: lift.Lambda, *args: np.ndarray, **kw) -> lift.Program:
    prog = lift.compile(p, **kw)
    assert_same(lift.interpret(p, *args), prog(*args))
    return prog


@pytest.mark.device
def test_compiled_gathers_equal_the_interpreter() -> None:
    t, t2, i = table(8, 5), table(8), ids(8, 6, 4)
    programs = [
        (fun([Array(Array(Float, D), N), Array(Array(Int, M), B)],  # 2LUT's row sums
             lambda t, i: map(lambda r: map(reduce(lift.add, 0.0)) << transpose << gather(t, r)) << i), (t, i)),
        (fun([Array(Float, N), Array(Array(Int, M), B)], lambda t, i: map(gather(t)) << i), (t2, i)),
        (fun([Array(Float, N), Array(Int, M)],  # a padded gather: the outside is never read
             lambda t, i: map(lambda x: mult(x, x)) << pad(2, 3, 0.0) << gather(t, i)), (t2, i[0])),
        (fun([Array(Float, N), Array(Int, M), Array(Int, B)],  # a gather of gathered indices
             lambda t, i, j: gather(t, gather(i, j))), (t2, ids(8, 9), ids(9, 5))),
        (fun([Array(Array(Float, D), N), Array(Int, M)],  # a transposed gather of rows
             lambda t, i: map(map(lambda x: mult(x, x))) << transpose << gather(t, i)), (t, i[0])),
    ]
    for p, args in programs:
        src = _compiled(p, *args).source
        assert "clamp(" in src


@pytest.mark.device
def test_a_vectorised_read_of_a_gather_reads_its_lanes_one_by_one() -> None:
    p = fun([Array(Float, 16), Array(Int, 8)],
            lambda t, i: as_scalar << map_glb(lambda v: vectorise(mult, 4)(v, v)) << as_vector(4) << gather(t, i))
    t, i = table(16), np.array([3, 4, 5, 6, 0, 15, 1, 1], np.int32)
    src = _compiled(p, t, i).source
    assert src.count("clamp(") >= 4  # one runtime index per lane, never a vector load at one index


@pytest.mark.device
def test_a_gather_from_local_memory_is_synchronised() -> None:
    """The table is computed into local memory by the group's work-items and gathered by others:
    the barrier pass must see the gathered reads (through the runtime index, of any element)."""
    p = fun([Array(Array(Float, 8), B), Array(Array(Int, 8), B)], lambda xs, i: map_wrg(
        lambda pair: map_lcl(lift.id) << gather(to_local(map_lcl(lambda x: mult(x, x))) << pair[0], pair[1]))
        << lift.zip(xs, i))
    xs, i = table(3, 8), ids(8, 3, 8)
    prog = _compiled(p, xs, i)
    assert prog.barriers, prog.source


@pytest.mark.device
def test_an_index_input_is_checked_on_the_host_a_computed_index_is_clamped() -> None:
    p = fun([Array(Float, N), Array(Array(Int, M), B)], lambda t, i: map(gather(t)) << map(map(inc)) << i)
    q = fun([Array(Float, N), Array(Array(Int, M), B)], lambda t, i: join << map(gather(t)) << i)
    t, i = table(9), ids(8, 3, 4)
    prog = _compiled(q, t, i)
    bad = i.copy()
    bad[1, 1] = 9
    with pytest.raises(lift.LiftValueError, match="gather index 9, out of range"):
        prog(t, bad)
    computed = _compiled(p, t, i)  # indices i + 1 <= 8: in range
    i[0, 0] = 8  # i + 1 = 9: the interpreter raises, the kernel reads the clamped (last) element
    with pytest.raises(lift.LiftValueError):
        lift.interpret(p, t, i)
    assert computed(t, i)[0, 0] == t[8]


def test_index_inputs_are_found_through_layouts_and_maps() -> None:
    from lift.gather import index_inputs

    p = fun([Array(Float, N), Array(Array(Int, M), B), Array(Int, M)],
            lambda t, i, j: lift.zip(map(gather(t)) << i, map(lambda r: gather(t, j)) << i))
    assert [k for k, _ in index_inputs(p)] == [1, 2]
    q = fun([Array(Float, N), Array(Int, M)], lambda t, i: gather(t, map_seq(inc) << i))
    assert index_inputs(q) == ()


@pytest.mark.device
def test_a_split_gather_in_a_lowered_program() -> None:
    p = fun([Array(Float, N), Array(Int, 12)],
            lambda t, i: join << map_glb(map_seq(lambda x: mult(x, x))) << split(4) << gather(t, i))
    _compiled(p, table(10), ids(10, 12))
