"""Memory allocation: address spaces, buffer sizes and the multiplier rules of thesis 4.4.2."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map_glb, map_lcl, map_seq, map_wrg, reduce_seq, to_global, to_local
from lift.allocation import Loop, allocate, multiplied
from lift.arith import Cst
from lift.errors import UnsupportedError

N, M, K = Size("N"), Size("M"), Size("K")
X3 = Array(Array(Array(Float, K), M), N)


def f_():
    return lift.user_fun(lambda v: v + 1.0, [Float], Float, name="f")


def g_():
    return lift.user_fun(lambda v: v * 2.0, [Float], Float, name="g")


def _alloc(program):
    return allocate(program.body, (0,))


def test_listing_4_4_local_buffer_is_shared_by_the_work_group():
    f, g = f_(), g_()
    prog = fun([X3], lambda x: map_wrg(map_lcl(lambda v: map_seq(to_global(f)) << map_seq(to_local(g)) << v))
               << x)
    (buf,) = _alloc(prog).buffers.values()
    assert buf.space == "local" and buf.count == M * K  # not N*M*K: one work-group's share


def test_listing_4_5_local_buffer_is_reused_by_sequential_iterations():
    f, g = f_(), g_()
    prog = fun([X3], lambda x: map_wrg(map_seq(lambda v: map_lcl(to_global(f)) << map_lcl(to_local(g)) << v))
               << x)
    (buf,) = _alloc(prog).buffers.values()
    assert buf.space == "local" and buf.count == K


def test_global_intermediates_are_multiplied_by_every_enclosing_loop():
    f, g = f_(), g_()
    prog = fun([X3], lambda x: map_glb(map_seq(lambda v: map_seq(f) << map_seq(g) << v)) << x)
    (buf,) = _alloc(prog).buffers.values()
    assert buf.space == "global" and buf.count == N * M * K


def test_private_intermediates_are_not_multiplied():
    f, g = f_(), g_()
    prog = fun([Array(Array(Float, 4), N)],
               lambda x: map_glb(lambda v: map_seq(f) << lift.to_private(map_seq(g)) << v) << x)
    (buf,) = _alloc(prog).buffers.values()
    assert buf.space == "private" and buf.count == Cst(4)


def test_scalars_default_to_private_and_user_function_arguments_are_inlined():
    f, g = f_(), g_()
    prog = fun([Array(Float, N)], lambda x: map_glb(lambda v: f(g(v))) << x)
    alloc = _alloc(prog)
    assert not alloc.buffers and len(alloc.inline) == 1


def test_reduce_accumulator_is_private():
    prog = fun([Array(Float, N)], lambda x: reduce_seq(lift.add, 0.0) << x)
    (acc,) = _alloc(prog).accs.values()
    assert acc.space == "private" and acc.role == "acc"


def test_multiplier_rules():
    loops = (Loop((0,), "wrg", 0, N), Loop((1,), "seq", 0, M), Loop((2,), "lcl", 0, K))
    assert multiplied(loops, "global") == loops
    assert multiplied(loops, "local") == loops[1:]
    assert multiplied(loops, "private") == ()
    assert multiplied(loops[:2], "local") == ()


def test_private_array_of_symbolic_size_is_rejected():
    prog = fun([Array(Array(Float, M), N)],
               lambda a: map_glb(lambda r: map_seq(lift.id) << lift.to_private(map_seq(lift.id)) << r) << a)
    with pytest.raises(UnsupportedError, match="constant size"):
        _alloc(prog)


def test_parallel_map_cannot_write_private_memory():
    prog = fun([Array(Array(Float, 4), N)],
               lambda a: map_wrg(lambda r: map_lcl(lift.id) << lift.to_private(map_lcl(lift.id)) << r) << a)
    with pytest.raises(UnsupportedError, match="cannot write private"):
        _alloc(prog)


def _chunked_row_sums(width: int, chunk: int):
    """Each row summed in chunks of `chunk` by a sequential map, then the chunk sums: the map's
    result has `width // chunk` values and no address-space wrapper (a user function of each
    chunk's sum, as `lane_sum` of a vectorised chunk: a map of bare reductions is private already,
    its reductions' accumulators name the space)."""
    f = f_()
    return fun([Array(Array(Float, width), N)], lambda a: map_glb(
        lambda r: reduce_seq(lift.add, 0.0) << map_seq(lambda c: f(reduce_seq(lift.add, 0.0) << c))
        << lift.split(chunk) << r) << a)


def test_a_small_sequential_intermediate_defaults_to_private():
    (buf,) = _alloc(_chunked_row_sums(32, 4)).buffers.values()
    assert buf.space == "private" and buf.count == Cst(8) and buf.loops == ()


def test_a_sequential_intermediate_stays_global_when_large_named_or_written_in_parallel():
    from lift.allocation import PRIVATE_SCALARS
    width = 4 * (PRIVATE_SCALARS + 1)
    (buf,) = _alloc(_chunked_row_sums(width, 4)).buffers.values()
    assert buf.space == "global" and buf.count == N * (PRIVATE_SCALARS + 1)
    f = f_()
    named = fun([Array(Array(Float, 32), N)], lambda a: map_glb(
        lambda r: reduce_seq(lift.add, 0.0) << to_global(map_seq(lambda c: f(reduce_seq(lift.add, 0.0) << c)))
        << lift.split(4) << r) << a)
    (buf,) = _alloc(named).buffers.values()
    assert buf.space == "global"
    parallel = fun([Array(Array(Array(Float, 4), 4), N)], lambda a: map_wrg(
        lambda m: map_lcl(lambda r: reduce_seq(lift.add, 0.0) << r) << map_seq(map_lcl(f_())) << m) << a)
    spaces = {b.space for b in _alloc(parallel).buffers.values()}
    assert "private" not in spaces


@pytest.mark.parametrize("spelling", ["dot", "squares"])
def test_chunk_partials_of_a_row_reduction_compile_to_private_memory(spelling):
    n = 256
    mat = Array(Array(Float, n), 64)
    if spelling == "dot":
        prog = fun([mat, Array(Float, n)], lambda a, x: lift.map(
            lambda r: lift.reduce(lift.add, 0.0) << lift.map(lift.mult) << lift.zip(r, x)) << a)
    else:
        square = lift.user_fun(lambda v: v * v, [Float], Float, name="square")
        prog = fun([mat, Array(Float, n)], lambda a, x: lift.map(
            lambda r: lift.reduce(lift.add, 0.0) << lift.map(square) << r) << a)
    rng = np.random.default_rng(3)
    args = (rng.random((64, n), dtype=np.float32) - 0.5, rng.random(n, dtype=np.float32) - 0.5)
    k = lift.compile(prog)
    np.testing.assert_allclose(k(*args), lift.interpret(prog, *args), rtol=1e-4, atol=1e-4)
    assert "global float* restrict tmp" not in k.source  # the partials live in the work-item


def _row_folds(width: int):
    """Column sums as a fold of the rows into an accumulator of `width` scalars, per part of 4 rows."""
    add = lift.user_fun(lambda a, b: a + b, [Float, Float], Float, name="plus")
    return fun([Array(Array(Float, width), 8)], lambda x: map_glb(
        lambda part: to_global(map_seq(lambda v: v)) << reduce_seq(
            lambda acc, row: map_seq(lambda p: add(p[0], p[1])) << lift.zip(acc, row),
            lift.value(0.0, Array(Float, width))) << part) << lift.split(4) << x)


def test_an_accumulator_larger_than_the_private_limit_goes_to_global_memory():
    from lift.allocation import PRIVATE_ACC_SCALARS
    (small,) = _alloc(_row_folds(PRIVATE_ACC_SCALARS)).accs.values()
    assert small.space == "private"
    (large,) = _alloc(_row_folds(2 * PRIVATE_ACC_SCALARS)).accs.values()
    assert large.space == "global"  # one slice per work-item (PoCL ran out of stack at 1 MiB private)
    prog = _row_folds(2 * PRIVATE_ACC_SCALARS)
    x = np.random.default_rng(5).random((8, 2 * PRIVATE_ACC_SCALARS), dtype=np.float32)
    got = lift.compile(prog)(x)
    np.testing.assert_allclose(got, np.stack([x[:4].sum(0), x[4:].sum(0)]), rtol=1e-5, atol=1e-5)
