"""The `col_fold` point (rewrites/auto_colfold.py, issue 41): a column reduction weighted by a row
function of the same array (ATAX's `A^T (A x)`) is folded in one pass over the array, each
work-item accumulating whole rows. Placed by default over known sizes (on a CPU it applies);
every choice preserves the interpreter's result, and so does skipping it."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lift
from lift import Array, Float, fun, let, map, reduce, transpose, user_fun, zip
from lift import rewrites as rw
from lift.arith import Cst
from lift.ir.nodes import FunCall, Split, Transpose
from lift.ir.paths import walk
from lift.rewrites.auto import default_points
from lift.rewrites.auto_colfold import FOLD_PARTS, ColFold
from lift.rewrites.auto_colreduce import ColReduce
from lift.rewrites.chunks import ReduceChunks
from lift.typecheck import type_of


@user_fun
def sq(x: Float) -> Float:
    return x * x


@user_fun
def scaled(e: Float, t: Float) -> Float:
    return e * t * 0.5


def _dot(a, b):
    return reduce(lift.add, 0.0) << map(lift.mult) << zip(a, b)


def atax(m: int, n: int, spelling: str = "let"):
    """`A^T (A x)` of an [m][n] matrix, written three ways: the value bound by `let` (LIFT's
    ATAX), written inside the columns' function, and with the product zipped the other way."""
    t = [Array(Array(Float, n), m), Array(Float, n)]
    if spelling == "let":
        return fun(t, lambda a, x: let(lambda tmp: map(lambda col: _dot(tmp, col)) << transpose << a)
                   << (map(lambda r: _dot(r, x)) << a))
    if spelling == "inline":
        return fun(t, lambda a, x: map(lambda col: _dot(col, map(lambda r: _dot(r, x)) << a)) << transpose << a)
    return fun(t, lambda a, x: let(lambda tmp: map(lambda col: _dot(col, tmp)) << transpose << a)
               << (map(lambda r: _dot(x, r)) << a))


@user_fun
def minus(a: Float, b: Float) -> Float:
    return a - b


def lsq(m: int, n: int):
    """The least-squares gradient `A^T (A x - b)`: the row function reads a per-row operand, b."""
    def residuals(a, x, b):
        return map(lambda e: minus(_dot(e[0], x), e[1])) << zip(a, b)
    return fun([Array(Array(Float, n), m), Array(Float, n), Array(Float, m)], lambda a, x, b: let(
        lambda r: map(lambda col: _dot(col, r)) << transpose << a) << residuals(a, x, b))


def weighted(m: int, n: int, op: str):
    """Column reductions (`op`: "add" or "max") of `scaled(e, t_row)`, `t_row` the sum of squares
    (a user function) or the maximum of the row: another `f`, `g` and `h` than ATAX's."""
    f, z = (lift.add, 0.0) if op == "add" else (lift.max_, -np.inf)

    def row(r):
        return reduce(lift.add, 0.0) << map(sq) << r if op == "add" else reduce(lift.max_, -np.inf) << r
    return fun([Array(Array(Float, n), m)], lambda a: let(
        lambda t: map(lambda col: reduce(f, z) << map(lambda p: scaled(p[0], p[1])) << zip(col, t)) << transpose << a)
        << (map(row) << a))


def _inputs(m: int, n: int, seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return rng.random((m, n), dtype=np.float32) - 0.5, rng.random(n, dtype=np.float32) - 0.5


def _folds(prog) -> dict[str, ColFold]:
    return {lab: p for lab, p in rw.points(prog).items() if isinstance(p, ColFold)}


@pytest.mark.parametrize("spelling", ["let", "inline", "swapped"])
def test_every_spelling_of_atax_gets_the_point_with_its_fallback_points_inside(spelling: str) -> None:
    placed = default_points(atax(512, 256, spelling))
    folds = _folds(placed)
    assert len(folds) == 1, rw.points(placed)
    kinds = {type(p) for p in rw.points(placed).values()}
    assert {ColReduce, ReduceChunks} <= kinds  # the two passes' points, for when the fold is skipped
    lab = next(iter(folds))
    space = rw.auto_space(placed)[lab]
    assert space["width"][0] == 16 and space["parts"][0] == FOLD_PARTS[0]


def test_other_column_reductions_get_no_col_fold() -> None:
    m, n = 512, 256
    given_vector = fun([Array(Array(Float, n), m), Array(Float, m)],
                       lambda a, y: map(lambda col: _dot(col, y)) << transpose << a)  # X^T y: y is an input
    other_rows = fun([Array(Array(Float, n), m), Array(Array(Float, n), m), Array(Float, n)],
                     lambda a, b, x: map(lambda col: _dot(col, map(lambda r: _dot(r, x)) << b)) << transpose << a)
    sym = fun([Array(Array(Float, lift.Size("N")), lift.Size("M")), Array(Float, lift.Size("N"))],
              lambda a, x: map(lambda col: _dot(col, map(lambda r: _dot(r, x)) << a)) << transpose << a)
    for prog in (given_vector, other_rows, sym):
        assert not _folds(default_points(prog)), prog


def _choose(placed, fold: str, choice: dict) -> tuple:
    """`placed` with `choice` at the fold and the nested points skipped (their tuning values open)."""
    others = {lab: {"skip": True} for lab in rw.points(placed) if lab != fold}
    outcomes: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = rw.apply_all(placed, {fold: choice, **others}, outcomes=outcomes)
    return out, next(o for o in outcomes if o.label == fold)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_choice_preserves_the_interpreters_result(data) -> None:
    m = data.draw(st.sampled_from([4, 8, 12, 32]))
    n = data.draw(st.sampled_from([4, 8, 16, 48]))
    which = data.draw(st.sampled_from(["let", "inline", "swapped", "add", "max", "lsq"]))
    prog = atax(m, n, which) if which in ("let", "inline", "swapped") else lsq(m, n) if which == "lsq" \
        else weighted(m, n, which)
    placed = rw.auto_points(prog, {}, min_length=1)
    folds = _folds(placed)
    assert len(folds) == 1
    lab = next(iter(folds))
    choice = {"width": data.draw(st.sampled_from([1, 4, 8, 16])), "parts": data.draw(st.sampled_from([1, 2, 4, 8]))}
    out, outcome = _choose(placed, lab, choice)
    assert outcome.applied or "does not divide" in outcome.reason or "needs the reduction to be add" in outcome.reason
    a, x = _inputs(m, n, 1)
    args = (a, x) if which in ("let", "inline", "swapped") else (a, x, _inputs(n, m, 2)[1]) if which == "lsq" else (a,)
    want = lift.interpret(prog, *args)
    np.testing.assert_allclose(lift.interpret(out, *args), want, rtol=1e-4, atol=1e-4)


def test_the_fold_reads_the_array_once_and_matches_the_interpreter() -> None:
    placed = rw.auto_points(atax(16, 32), {}, min_length=1)
    lab = next(iter(_folds(placed)))
    out, outcome = _choose(placed, lab, {"width": 16, "parts": 4})
    assert outcome.applied
    assert not any(isinstance(n, Transpose) for _, n in walk(out))  # nothing is read by columns
    parts = [n for _, n in walk(out) if isinstance(n, FunCall) and isinstance(n.f, Split)]
    assert [type_of(n).size for n in parts] == [Cst(4)]  # the 16 rows in 4 parts
    a, x = _inputs(16, 32)
    np.testing.assert_allclose(lift.interpret(out, a, x), a.T @ (a @ x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("spelling", ["let", "inline", "swapped"])
def test_compile_folds_atax_on_a_cpu_and_matches_numpy(spelling: str) -> None:
    m, n = 256, 128
    prog = lift.compile(atax(m, n, spelling))
    fold = prog.choices.points["auto_f0"]
    assert not fold["skip"] and fold["parts"] == 8, prog.choices  # 4 work-items per compute unit of 2
    assert len(prog.kernels) == 1  # the combine of the 8 partial rows runs at the end of the fold's kernel
    a, x = _inputs(m, n)
    np.testing.assert_allclose(prog(a, x), a.T @ (a @ x), rtol=1e-4, atol=1e-3)


def test_least_squares_gradient_compiles_folded_and_matches_numpy() -> None:
    m, n = 512, 256
    prog = lift.compile(lsq(m, n))
    assert not prog.choices.points["auto_f0"]["skip"], prog.choices
    a, x = _inputs(m, n)
    b = _inputs(n, m, 5)[1]
    np.testing.assert_allclose(prog(a, x, b), a.T @ (a @ x - b), rtol=1e-4, atol=1e-3)


def test_other_operators_compile_folded_and_match_the_interpreter() -> None:
    for op in ("add", "max"):
        prog = weighted(64, 32, op)
        compiled = lift.compile(prog)
        assert not compiled.choices.points["auto_f0"]["skip"], compiled.choices
        a, _ = _inputs(64, 32, 3)
        np.testing.assert_allclose(compiled(a), lift.interpret(prog, a), rtol=1e-4, atol=1e-4)


def test_a_gpu_keeps_the_two_passes() -> None:
    from lift.decide import default_blocks
    gpu = lift.devices.profile("nvidia")
    cpu = lift.devices.profile("pocl-cpu")
    prog = lift.rules.normalise.normalise(atax(512, 256))
    on_gpu = [d.choices.points for d in default_blocks(prog, gpu)]
    on_cpu = [d.choices.points for d in default_blocks(prog, cpu)]
    fold = next(iter(_folds(default_points(prog))))
    assert on_gpu and all(c[fold].get("skip") for c in on_gpu)
    assert on_cpu and not any(c[fold].get("skip") for c in on_cpu)


def test_a_row_wider_than_the_private_limit_accumulates_in_global_memory() -> None:
    from lift.allocation import PRIVATE_ACC_SCALARS
    m, n = 16, 2 * PRIVATE_ACC_SCALARS  # each work-item's accumulator: its own slice of a global buffer
    prog = lift.compile(atax(m, n))
    assert not prog.choices.points["auto_f0"]["skip"], prog.choices
    private = re.findall(r"^\s*(?:float|int)(\d*) \w+\[(\d+)\];", prog.source, re.M)  # private arrays
    assert private and max(int(lanes or 1) * int(count) for lanes, count in private) <= PRIVATE_ACC_SCALARS
    a, x = _inputs(m, n)
    np.testing.assert_allclose(prog(a, x), a.T @ (a @ x), rtol=1e-4, atol=1e-3)


def test_a_fold_inside_a_map_over_a_batch_compiles_and_matches_numpy() -> None:
    b, m, n = 4, 64, 128
    prog = fun([Array(Array(Array(Float, n), m), b), Array(Array(Float, n), b)], lambda mats, xs: map(
        lambda p: let(lambda t: map(lambda col: _dot(t, col)) << transpose << p[0]) << (map(lambda r: _dot(r, p[1]))
                                                                                       << p[0])) << zip(mats, xs))
    compiled = lift.compile(prog)
    assert not compiled.choices.points["auto_f0"]["skip"], compiled.choices
    rng = np.random.default_rng(4)
    mats, xs = rng.random((b, m, n), dtype=np.float32) - 0.5, rng.random((b, n), dtype=np.float32) - 0.5
    want = np.stack([mats[i].T @ (mats[i] @ xs[i]) for i in range(b)])
    np.testing.assert_allclose(compiled(mats, xs), want, rtol=1e-4, atol=1e-3)


def test_odd_rows_and_a_start_that_is_not_a_constant_are_not_folded() -> None:
    m, n = 63, 64  # 63 rows split in no part count but 1: one work-item would fold them all
    odd = lift.compile(atax(m, n))
    assert odd.choices.points["auto_f0"]["skip"], odd.choices
    a, x = _inputs(m, n)
    np.testing.assert_allclose(odd(a, x), a.T @ (a @ x), rtol=1e-4, atol=1e-3)
    started = fun([Array(Array(Float, 32), 64), Array(Float, 32), Array(Float, 1)], lambda a, x, s: let(
        lambda t: map(lambda col: reduce(lift.max_, s[0]) << map(lift.mult) << zip(col, t)) << transpose << a)
        << (map(lambda r: _dot(r, x)) << a))  # max from a start the caller gives
    assert not _folds(default_points(started))


def test_a_row_function_of_the_array_zipped_with_itself_folds() -> None:
    m, n = 64, 64  # weights |row|^2, the row read through both copies of the zip
    twice = fun([Array(Array(Float, n), m), Array(Float, n)], lambda a, x: let(
        lambda t: map(lambda col: _dot(col, t)) << transpose << a) << (map(lambda e: _dot(e[0], e[1])) << zip(a, a)))
    compiled = lift.compile(twice)
    assert not compiled.choices.points["auto_f0"]["skip"], compiled.choices
    a, x = _inputs(m, n)
    np.testing.assert_allclose(compiled(a, x), a.T @ (a * a).sum(1), rtol=1e-4, atol=1e-3)
