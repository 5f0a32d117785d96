"""The packing kernels of block_nest's output form (rewrites/packing.py): same values as the
panels' view, and pack_b copies in X's own order (sequential reads)."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, fun
from lift.arith import evaluate
from lift.constraints.context import analyse
from lift.rewrites.packing import pack_a, pack_b


@pytest.mark.parametrize("rows,cols,panel", [(8, 64, 16), (5, 32, 8), (3, 24, 24)])
def test_pack_b_is_the_panels_view_of_x(rows: int, cols: int, panel: int) -> None:
    prog = fun([Array(Array(Float, cols), rows)], lambda q: pack_b(q, panel))
    x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    want = x.reshape(rows, cols // panel, panel).transpose(1, 0, 2)
    assert np.array_equal(np.asarray(lift.interpret(prog, x)), want)
    assert np.array_equal(np.asarray(lift.compile(prog)(x)), want)


def test_pack_b_reads_x_row_after_row() -> None:
    """Every map of the copy reads X at a known stride, the innermost one at stride 1 (the next
    vector of the same row): run in the panels' order, the copy read X through a transposed
    view (no affine stride) and each step of k jumped a row of X."""
    prog = fun([Array(Array(Float, 64), 8)], lambda q: pack_b(q, 16))
    maps = analyse(prog).maps.values()
    inner = [m for m in maps if not any(m.label in o.outer for o in maps)]
    assert inner and all(m.stride is not None for m in maps)
    assert all(m.stride == 1 for m in inner)


def test_pack_a_is_the_transposed_row_blocks_of_a() -> None:
    prog = fun([Array(Array(Float, 16), 8)], lambda q: pack_a(q, 4))
    a = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    want = a.reshape(2, 4, 16).transpose(0, 2, 1)
    assert np.array_equal(np.asarray(lift.compile(prog)(a)), want)


@pytest.mark.parametrize("rows,cols,panel", [(64, 16, 16), (32, 8, 8), (24, 12, 24), (12, 16, 4)])
def test_pack_b_of_a_transposed_operand_is_the_panels_view(rows: int, cols: int, panel: int) -> None:
    """X = `transpose << Y` (A B^T: Y's rows are X's columns): the same panels as the view."""
    prog = fun([Array(Array(Float, cols), rows)], lambda y: pack_b(lift.transpose << y, panel))
    y = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    want = y.T.reshape(cols, rows // panel, panel).transpose(1, 0, 2)
    assert np.array_equal(np.asarray(lift.interpret(prog, y)), want)
    assert np.array_equal(np.asarray(lift.compile(prog)(y)).reshape(want.shape), want)


def test_pack_b_of_a_transposed_operand_reads_its_rows_in_order() -> None:
    """The copy of `transpose << Y` walks Y's rows: its innermost map runs along a row of Y (64
    steps of k, each a vector of 8 rows' next scalars), its outer ones over groups of rows; the
    old copy in X's order ran its innermost map down Y's columns (32 rows apart)."""
    prog = fun([Array(Array(Float, 64), 32)], lambda y: pack_b(lift.transpose << y, 16))
    maps = analyse(prog).maps.values()
    inner = [m for m in maps if not any(m.label in o.outer for o in maps)]
    assert [int(evaluate(m.in_type.size, {})) for m in inner] == [64]
    assert sorted(int(evaluate(m.in_type.size, {})) for m in maps if m not in inner) == [2, 2]


@pytest.mark.parametrize("steps,rows,bm", [(16, 8, 4), (8, 24, 8), (12, 12, 4), (6, 16, 2)])
def test_pack_a_of_a_transposed_operand_is_the_panels_view(steps: int, rows: int, bm: int) -> None:
    """A = `transpose << Y` (A^T B: Y's rows are A's columns) with K a multiple of BM: the same
    panels as the general copy, copied a BM x BM tile at a time."""
    prog = fun([Array(Array(Float, rows), steps)], lambda y: pack_a(lift.transpose << y, bm))
    y = np.arange(steps * rows, dtype=np.float32).reshape(steps, rows)
    want = y.T.reshape(rows // bm, bm, steps).transpose(0, 2, 1)
    assert np.array_equal(np.asarray(lift.interpret(prog, y)), want)
    assert np.array_equal(np.asarray(lift.compile(prog)(y)).reshape(want.shape), want)


def test_pack_a_of_a_transposed_operand_reads_along_its_rows() -> None:
    """The tiled copy of `transpose << Y` reads each row of Y in runs of BM scalars, neighbouring
    work-items the next run of the same rows (its one parallel map runs over tiles, Y's row
    direction fastest); the general copy read BM scalars of a row, then BM of the next row (a
    stride of a row of Y per step, 1.0 ms against 0.35 ms at 1024^2 on PoCL/AVX-512). A K that
    BM does not divide keeps the general copy."""
    tiled = fun([Array(Array(Float, 64), 32)], lambda y: pack_a(lift.transpose << y, 4))
    maps = analyse(tiled).maps.values()
    outer = [m for m in maps if not m.outer]
    assert [int(evaluate(m.in_type.size, {})) for m in outer] == [8 * 16]  # (32 / 4) x (64 / 4) tiles
    src = lift.compile(tiled).source
    assert "float4" in src  # a tile's rows move as vectors of BM scalars
    odd = fun([Array(Array(Float, 64), 30)], lambda y: pack_a(lift.transpose << y, 4))
    y = np.arange(30 * 64, dtype=np.float32).reshape(30, 64)
    want = y.T.reshape(16, 4, 30).transpose(0, 2, 1)
    assert np.array_equal(np.asarray(lift.compile(odd)(y)).reshape(want.shape), want)
