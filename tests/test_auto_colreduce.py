"""The `col_reduce` point (rewrites/auto_colreduce.py, issue 27 item 4): a reduction of every
column of a row-major array reads vectors of contiguous columns down the rows, the rows split
across work-items when the column vectors are too few. Placed by default over constant sizes;
every choice preserves the interpreter's result."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lift
from lift import Array, Float, fun, map, reduce, transpose, user_fun
from lift import rewrites as rw
from lift.rewrites.auto import default_points
from lift.rewrites.auto_colreduce import FILL, ColReduce
from programs import apply_choice


@user_fun
def sq(x: Float) -> Float:
    return x * x


def cols(m: int, n: int, op: str = "add", g: bool = False):
    """x.sum(0) (or max over each column, or the sum of squares) of an [m][n] array."""
    f, z = (lift.add, 0.0) if op == "add" else (lift.max_, -np.inf)

    def col(xs):
        return reduce(f, z) << (map(sq) << xs if g else xs)
    return fun([Array(Array(Float, n), m)], lambda x: map(col) << transpose << x)


def _x(m: int, n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random((m, n), dtype=np.float32) - 0.5


def _point(prog) -> tuple[str, ColReduce]:
    found = [(lab, p) for lab, p in rw.points(prog).items() if isinstance(p, ColReduce)]
    assert len(found) == 1, rw.points(prog)
    return found[0]


def test_a_column_reduction_gets_the_point_and_the_space_follows_the_sizes() -> None:
    lab, _ = _point(default_points(cols(8192, 768)))
    space = rw.auto_space(default_points(cols(8192, 768)))[lab]
    assert space["width"][0] == 16 and space["vectors"][0] == 8  # 512 bytes of a row per work-item
    groups = 768 // (16 * 8)
    assert groups < FILL and space["parts"][0] == 64  # 6 work-items: the rows split too, as far as they go
    wide = rw.auto_space(default_points(cols(512, 16384)))
    parts = next(iter(wide.values()))["parts"][0]
    assert parts * 128 >= FILL > (parts // 2) * 128  # the fewest parts that make FILL work-items
    narrow = rw.auto_space(default_points(cols(512, 36, op="max")))
    assert next(iter(narrow.values()))["width"] == (1,)  # max: no lane-wise vector form here


def test_row_reductions_and_symbolic_sizes_get_no_col_reduce() -> None:
    rows = fun([Array(Array(Float, 768), 512)], lambda x: map(lambda r: reduce(lift.add, 0.0) << r) << x)
    assert not any(isinstance(p, ColReduce) for p in rw.points(default_points(rows)).values())
    sym = fun([Array(Array(Float, lift.Size("N")), lift.Size("M"))],
              lambda x: map(lambda c: reduce(lift.add, 0.0) << c) << transpose << x)
    assert not any(isinstance(p, ColReduce) for p in rw.points(default_points(sym)).values())


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_choice_preserves_the_interpreters_result(data) -> None:
    m = data.draw(st.sampled_from([8, 16, 24, 64]))
    n = data.draw(st.sampled_from([4, 8, 16, 48]))
    op, g = data.draw(st.sampled_from(["add", "max"])), data.draw(st.booleans())
    prog = cols(m, n, op, g)
    placed = rw.auto_points(prog, {}, min_length=1)
    lab, point = _point(placed)
    choice = {"width": data.draw(st.sampled_from([1, 4, 8, 16])), "parts": data.draw(st.sampled_from([1, 2, 4, 8])),
              "vectors": data.draw(st.sampled_from([1, 2, 4])), "combine": "kernel"}
    out, _ = apply_choice(placed, lab, choice, "does not divide", "needs the reduction to be add")
    x = _x(m, n, 1)
    want = lift.interpret(prog, x)
    np.testing.assert_allclose(lift.interpret(out, x), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(want, (x.astype(np.float64) ** (2 if g else 1)).sum(0) if op == "add"
                               else (x.astype(np.float64) ** (2 if g else 1)).max(0), rtol=1e-4, atol=1e-5)


def test_the_atomic_combine_is_not_offered_and_refused_with_its_reason() -> None:
    placed = default_points(cols(256, 32))
    lab, _ = _point(placed)
    assert rw.auto_space(placed)[lab]["combine"] == ("kernel",)
    with pytest.raises(lift.LiftError, match="reduce_atomic"):
        lift.compile(placed, choices=lift.Choices(points={lab: {"skip": False, "width": 8, "parts": 2,
                                                                "combine": "atomic"}}))


@pytest.mark.device
@pytest.mark.parametrize("m,n,parts,vectors", [(2048, 768, 64, 8), (512, 16384, 4, 8), (256, 36, 32, 1)])
def test_compiled_by_default_the_columns_are_read_as_vectors(m: int, n: int, parts: int, vectors: int) -> None:
    prog = cols(m, n)
    compiled = lift.compile(prog)
    lab = next(k for k in compiled.choices.points if k.startswith("auto_c"))
    chosen = compiled.choices.points[lab]
    assert chosen["parts"] == parts and chosen["width"] == (16 if n % 16 == 0 else 4), chosen
    assert chosen["vectors"] == vectors, chosen
    assert len(compiled.kernels) == (2 if parts > 1 else 1)  # the partials combined by a second kernel
    assert f"(global float{chosen['width']}*)" in compiled.source  # aligned vector loads along the rows
    x = _x(m, n, 3)
    np.testing.assert_allclose(compiled(x), lift.interpret(prog, x), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(compiled(x), x.astype(np.float64).sum(0), rtol=1e-4, atol=1e-3)


@user_fun
def add_mul(x: Float, a: Float, b: Float) -> Float:
    return (x + a) * b


def add_mul_sum0(b: int, h: int, w: int):
    """((X + A) * B).sum(0): columns of the [b][h*w] rows, with one operand per column from A and B."""
    def body(x, a, bb):
        cols_ = transpose << map(lift.join) << x
        return lift.split(w) << map(lambda t: reduce(lift.add, 0.0) << map(lambda xv: add_mul(xv, t[1], t[2]))
                                    << t[0]) << lift.zip(cols_, lift.join << a, lift.join << bb)
    return fun([Array(Array(Array(Float, w), h), b), Array(Array(Float, w), h), Array(Array(Float, w), h)], body)


def _amsum_inputs(b: int, h: int, w: int, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple(rng.random(s, dtype=np.float32) - 0.5 for s in ((b, h, w), (h, w), (h, w)))


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_columns_with_per_column_operands_preserve_the_interpreters_result(data) -> None:
    b, h, w = data.draw(st.sampled_from([4, 8, 16])), data.draw(st.sampled_from([1, 2, 3])), \
        data.draw(st.sampled_from([4, 8, 16]))
    prog = add_mul_sum0(b, h, w)
    placed = rw.auto_points(prog, {}, min_length=1)
    lab, _ = _point(placed)
    choice = {"width": data.draw(st.sampled_from([1, 4, 8, 16])), "parts": data.draw(st.sampled_from([1, 2, 4])),
              "vectors": data.draw(st.sampled_from([1, 2, 4])), "combine": "kernel"}
    out, _ = apply_choice(placed, lab, choice, "does not divide")
    args = _amsum_inputs(b, h, w, 2)
    want = lift.interpret(prog, *args)
    np.testing.assert_allclose(lift.interpret(out, *args), want, rtol=1e-5, atol=1e-5)
    x, a, bb = (v.astype(np.float64) for v in args)
    np.testing.assert_allclose(want, ((x + a) * bb).sum(0), rtol=1e-4, atol=1e-5)


@pytest.mark.device
def test_short_columns_of_a_broadcast_product_get_the_point_by_default() -> None:
    """add_mul_sum0's axis 0 (64 rows, short) over 8 x 512 columns: placed by its total size."""
    prog = add_mul_sum0(64, 8, 512)
    compiled = lift.compile(prog)
    assert any(k.startswith("auto_c") for k in compiled.choices.points), compiled.choices
    assert "(global float16*)" in compiled.source
    args = _amsum_inputs(64, 8, 512, 4)
    np.testing.assert_allclose(np.asarray(compiled(*args)).reshape(8, 512), lift.interpret(prog, *args),
                               rtol=1e-4, atol=1e-4)


@user_fun
def dev2(e: Float, r: Float) -> Float:
    return (e - r) * (e - r)


def row_weighted(m: int, n: int, form: str):
    """Every column reduced with one operand per row, the same for every column: `X^T y` (`form`
    "mult": `map(mult) << zip(col, y)`), or the squared deviations from each row's value, spelt
    with the operand first and the components swapped (`form` "dev": `map(p => dev2(p.1, p.0)) <<
    zip(y, col)`)."""
    def col(xs, y):
        if form == "mult":
            return reduce(lift.add, 0.0) << map(lift.mult) << lift.zip(xs, y)
        return reduce(lift.add, 0.0) << map(lambda p: dev2(p[1], p[0])) << lift.zip(y, xs)
    return fun([Array(Array(Float, n), m), Array(Float, m)], lambda x, y: map(lambda xs: col(xs, y)) << transpose << x)


def _row_want(form: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = x.astype(np.float64), y.astype(np.float64)
    return x.T @ y if form == "mult" else ((x - y[:, None]) ** 2).sum(0)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_columns_with_per_row_operands_preserve_the_interpreters_result(data) -> None:
    m, n = data.draw(st.sampled_from([8, 16, 64])), data.draw(st.sampled_from([4, 16, 48]))
    form = data.draw(st.sampled_from(["mult", "dev"]))
    prog = row_weighted(m, n, form)
    placed = rw.auto_points(prog, {}, min_length=1)
    lab, _ = _point(placed)
    choice = {"width": data.draw(st.sampled_from([1, 4, 8, 16])), "parts": data.draw(st.sampled_from([1, 2, 4, 8])),
              "vectors": data.draw(st.sampled_from([1, 2, 4])), "combine": "kernel"}
    out, _ = apply_choice(placed, lab, choice, "does not divide")
    x, y = _x(m, n, 5), np.random.default_rng(6).random(m, dtype=np.float32)
    want = lift.interpret(prog, x, y)
    np.testing.assert_allclose(lift.interpret(out, x, y), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(want, _row_want(form, x, y), rtol=1e-4, atol=1e-4)


def test_an_operand_that_depends_on_the_column_is_no_row_operand() -> None:
    prog = fun([Array(Array(Float, 64), 64)], lambda x: map(
        lambda xs: reduce(lift.add, 0.0) << map(lift.mult) << lift.zip(xs, map(sq) << xs)) << transpose << x)
    assert not any(isinstance(p, ColReduce) for p in rw.points(default_points(prog)).values())


@pytest.mark.device
@pytest.mark.parametrize("form,m,n", [("dev", 1024, 512), ("mult", 256, 4096)])
def test_compiled_by_default_per_row_operands_are_broadcast_into_the_column_vectors(form: str, m: int, n: int) -> None:
    prog = row_weighted(m, n, form)
    compiled = lift.compile(prog)
    assert any(k.startswith("auto_c") for k in compiled.choices.points), compiled.choices
    assert "(global float16*)" in compiled.source and "bcast16_float" in compiled.source
    x, y = _x(m, n, 7), np.random.default_rng(8).random(m, dtype=np.float32)
    np.testing.assert_allclose(compiled(x, y), lift.interpret(prog, x, y), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(compiled(x, y), _row_want(form, x, y), rtol=1e-3, atol=1e-3)
