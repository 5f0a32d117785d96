"""register_block (rewrites/blocking.py) compiled against numpy, and vector reads through pad /
slide / join views (lift.arith.lanes): aligned pointer-cast loads under one condition per vector."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lift
from lift import Array, Float, as_scalar, as_vector, fun, join, map, pad, reduce, slide, zip
from lift import rewrites as rw
from lift.arith import Cst, Var, evaluate
from lift.arith.lanes import lane_free
from lift.errors import RewritePointSkipped


@settings(max_examples=60, deadline=None)
@given(w=st.sampled_from([2, 4, 8]), k=st.integers(1, 4), d=st.integers(1, 4), c=st.integers(-9, 9),
       i=st.integers(0, 30), lane=st.integers(0, 7))
def test_lane_free_keeps_the_value(w: int, k: int, d: int, c: int, i: int, lane: int) -> None:
    """`(w*k*i + c*w + lane) // (d*w)` and `% (d*w)` equal their lane-free forms at every point."""
    lane %= w
    iv, lv = Var("i", Cst(0), Cst(30)), Var("_lane", Cst(0), Cst(w - 1))
    num = iv * (w * k) + c * w + lv
    env = {"i": i, "_lane": lane}
    for e in (num // (d * w), num % (d * w), (num // w) % 3 + num % (d * w)):
        free = lane_free(e, lv, w)
        assert evaluate(free, env) == evaluate(e, env)
    assert "_lane" not in str(lane_free(num // (d * w), lv, w))


def test_lane_free_leaves_what_it_cannot_prove() -> None:
    iv, lv = Var("i", Cst(0), Cst(30)), Var("_lane", Cst(0), Cst(7))
    e = (iv * 4 + lv) // 64  # 8 does not divide 4*i: lanes may cross a multiple of 64
    assert lane_free(e, lv, 8) == e


def _padded_rows(n: int):
    """Each padded row of 8 read as float8: as_vector(8) << join << map(pad(8, 8, 0)) << rows."""
    return fun([Array(Array(Float, 8), n)], lambda x: as_scalar << map(
        lambda v: lift.vectorise(lift.add, 8)(v, v)) << as_vector(8) << join << map(pad(8, 8, 0.0)) << x)


@pytest.mark.device
def test_a_padded_view_is_read_by_aligned_vector_loads() -> None:
    prog = _padded_rows(4)
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    p = lift.compile(prog)
    np.testing.assert_array_equal(np.asarray(p(x)), np.asarray(lift.interpret(prog, x)))
    assert re.search(r"\(\(global float8\*\)x\)\[", p.source), p.source
    assert "(float8)(x[" not in p.source  # no lane-by-lane gather


def _matmul(n: int, m: int, k: int, **kw):
    return fun([Array(Array(Float, k), n), Array(Array(Float, k), m)], lambda a, b: rw.register_block(
        map(lambda ra: map(lambda rb: reduce(lift.add, 0.0) << map(lift.mult) << zip(ra, rb)) << b), label="B", **kw)
        << a)


@pytest.mark.device
@pytest.mark.parametrize("choice", [{}, {"rows": 2, "cols": 8, "width": 4}, {"rows": 3, "cols": 1, "width": 1}])
def test_register_block_compiles_to_the_matrix_product(choice: dict) -> None:
    rng = np.random.default_rng(0)
    a, b = rng.random((12, 16), dtype=np.float32), rng.random((8, 16), dtype=np.float32)
    p = lift.compile(_matmul(12, 8, 16), choices={"B": choice})
    np.testing.assert_allclose(np.asarray(p(a, b)).reshape(12, 8), a @ b.T, rtol=1e-5, atol=1e-5)
    assert p.choices["B"]["skip"] is False


def test_register_block_bounds_fit_every_size() -> None:
    """The defaults are upper bounds: 4 x 4 blocks of float8 become what divides 6 x 5 x 27."""
    out: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", RewritePointSkipped)
        rw.apply_all(_matmul(6, 5, 27), {"B": {"rows": 4, "cols": 4, "width": 8}}, outcomes=out)
    assert [o.applied for o in out if o.label == "B"] == [True]
    assert rw.blocking.fitting(4, 6) == 3 and rw.blocking.fitting(4, 5) == 1


def test_register_block_refuses_bad_parameters() -> None:
    with pytest.warns(RewritePointSkipped, match="width=3"):
        rw.apply_all(_matmul(4, 4, 8), {"B": {"width": 3}})


@pytest.mark.device
def test_a_padded_window_of_a_stencil_compiles_exactly() -> None:
    """slide over a padded row, joined and read as float4: vector loads, the interpreter's values."""
    prog = fun([Array(Float, 8)], lambda x: as_scalar << map(lambda v: lift.vectorise(lift.add, 4)(v, v))
               << as_vector(4) << join << slide(4, 4) << pad(4, 4, 0.0) << x)
    x = np.arange(8, dtype=np.float32)
    want = np.concatenate([[0] * 4, 2 * x, [0] * 4])
    np.testing.assert_array_equal(np.asarray(lift.interpret(prog, x)), want)
    p = lift.compile(prog)
    np.testing.assert_array_equal(np.asarray(p(x)), want)
    assert "(global float4*)x" in p.source, p.source


@pytest.mark.device
def test_a_vector_copy_is_read_back_as_whole_vectors() -> None:
    """materialise(width=8) stores float8s; an as_vector(8) read of the copy loads each one whole."""
    prog = fun([Array(Float, 16)], lambda x: as_scalar << map(lambda v: lift.vectorise(lift.add, 8)(v, v))
               << as_vector(8) << rw.materialise(pad(8, 8, 0.0), label="M") << x)
    x = np.arange(16, dtype=np.float32)
    p = lift.compile(prog, choices={"M": {"mem": "global", "width": 8}})
    np.testing.assert_array_equal(np.asarray(p(x)), np.concatenate([[0] * 8, 2 * x, [0] * 8]))
    assert ".s0" not in p.source and "(global float8*)tmp)[" in p.source, p.source


def _column_sums(n: int, m: int, **kw):
    """reduce((acc, row) => map(+) << zip(acc, row), init) << x with an input `init` (not a constant)."""
    def body(init, x):
        op = lambda acc, row: map(lambda q: lift.add(q[0], q[1])) << zip(acc, row)  # noqa: E731
        return rw.interchange_reduce_nd(reduce(op, init), label="P", **kw) << x
    return fun([Array(Float, m), Array(Array(Float, m), n)], body)


@pytest.mark.parametrize("choice", [{"rank": 2}, {"rank": 3, "new_reduce_dim": 1, "factor": 3},
                                    {"rank": 3, "new_reduce_dim": 2, "factor": 2}])
def test_interchange_reduce_nd_with_an_input_accumulator(choice: dict) -> None:
    prog = _column_sums(5, 6)
    rng = np.random.default_rng(2)
    init, x = rng.random(6, dtype=np.float32), rng.random((5, 6), dtype=np.float32)
    out: list = []
    done = rw.apply_all(prog, {"P": choice}, outcomes=out)
    assert [o.applied for o in out if o.label == "P"] == [True]
    np.testing.assert_allclose(lift.interpret(done, init, x), init + x.sum(axis=0), rtol=1e-5)


@pytest.mark.device
def test_interchange_reduce_nd_rank_3_compiles() -> None:
    prog = _column_sums(5, 8)
    init, x = np.ones(8, dtype=np.float32), np.arange(40, dtype=np.float32).reshape(5, 8)
    p = lift.compile(prog, choices={"P": {"rank": 3, "new_reduce_dim": 1, "factor": 4}})
    np.testing.assert_allclose(np.asarray(p(init, x)), init + x.sum(axis=0), rtol=1e-6)


@pytest.mark.device
def test_pad_extra_nd_in_three_dimensions_compiles() -> None:
    prog = fun([Array(Array(Array(Float, 3), 4), 2)], lambda x: rw.pad_extra_nd(
        lambda v: lift.map_nd(3, lambda e: e * 2.0) << v, k=3, label="P") << x)
    x = np.arange(24, dtype=np.float32).reshape(2, 4, 3)
    p = lift.compile(prog, choices={"P": {"pad": (1, 2, 3)}})
    np.testing.assert_array_equal(np.asarray(p(x)).reshape(2, 4, 3), 2 * x)
    assert p.choices["P"]["skip"] is False


@pytest.mark.device
@pytest.mark.parametrize("order", [(2, 0, 1), (1, 2, 0), (0, 2, 1)])
def test_optimise_data_layout_with_two_factors_compiles(order: tuple) -> None:
    prog = fun([Array(Array(Float, 6), 4)], lambda x: rw.optimise_data_layout(
        lambda v: map(map(lambda e: e + 1.0)) << map(map(lambda e: e * 3.0)) << v, n=2, label="L") << x)
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    p = lift.compile(prog, choices={"L": {"order": order, "factor": (3, 2)}})
    np.testing.assert_allclose(np.asarray(p(x)).reshape(4, 6), x * 3 + 1)
    assert p.choices["L"]["skip"] is False


@pytest.mark.device
@pytest.mark.parametrize("prefetch", [("private", "none"), ("none", "local"), ("global", "private")])
def test_ab_tile_with_prefetched_tiles_compiles(prefetch: tuple) -> None:
    prog = fun([Array(Array(Float, 4), 6), Array(Array(Float, 4), 8)], lambda a, b: rw.ab_tile(
        map(lambda ra: map(lambda rb: reduce(lift.add, 0.0) << map(lift.mult) << zip(ra, rb)) << b), label="T")
        << a)
    rng = np.random.default_rng(3)
    a, b = rng.random((6, 4), dtype=np.float32), rng.random((8, 4), dtype=np.float32)
    ch = {"T": {"size_a": 3, "size_b": 4, "prefetch_a": prefetch[0], "prefetch_b": prefetch[1]}}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RewritePointSkipped)
        p = lift.compile(prog, choices=ch)
    np.testing.assert_allclose(np.asarray(p(a, b)).reshape(6, 8), a @ b.T, rtol=1e-5)


@pytest.mark.parametrize("width", [1, 4])
def test_register_block_keeps_the_argument_order_of_a_swapped_zip(width: int) -> None:
    """`zip(rb, ra)` with a non-commutative g: g still receives B's element first."""
    sub = lift.user_fun(lambda x, y: x - y * 2.0, name="sub2")
    prog = fun([Array(Array(Float, 8), 4), Array(Array(Float, 8), 6)], lambda a, b: rw.register_block(
        map(lambda ra: map(lambda rb: reduce(lift.add, 0.0) << map(sub) << zip(rb, ra)) << b), label="B") << a)
    rng = np.random.default_rng(4)
    a, b = rng.random((4, 8), dtype=np.float32), rng.random((6, 8), dtype=np.float32)
    out: list = []
    done = rw.apply_all(prog, {"B": {"rows": 2, "cols": 3, "width": width}}, outcomes=out)
    assert [o.applied for o in out if o.label == "B"] == [True]
    want = b.sum(axis=1)[None, :] - 2.0 * a.sum(axis=1)[:, None]
    np.testing.assert_allclose(np.asarray(lift.interpret(done, a, b)).reshape(4, 6), want, rtol=1e-5, atol=1e-5)
