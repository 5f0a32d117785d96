"""The `vectorise` point's lane-wise lifting (rewrites/lanes.py): maps whose element function is
a lambda of user functions (reading scalars from outside) and stencils over `slide(n, 1)`
windows, placed automatically and compiled; every width matches the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, pad, reduce, slide, user_fun, zip
from lift.choices import Choices
from lift.compile import apply_points
from lift.interpret import interpret
from lift.rewrites import auto_points, auto_space
from lift.rewrites.vectorise import VectorisePoint
from lift.typecheck import typecheck
from tests.programs import mult, rand

N = Size("N")


@user_fun
def axpy(a: Float, x: Float, y: Float) -> Float:
    return a * x + y


@user_fun
def square(a: Float) -> Float:
    return a * a


def stencil3():
    return fun([Array(Float, N)], lambda x: map(lambda w: reduce(lift.add, 0.0) << w)
               << slide(3, 1) << pad(1, 1, 0.0) << x)


def weighted5():
    """A 5-point window: w[0]*w[4] + w[2], zero outside."""
    return fun([Array(Float, N)], lambda x: map(lambda w: lift.add(mult(w[0], w[4]), w[2]))
               << slide(5, 1) << pad(2, 2, 0.0) << x)


def energy3():
    """Sum of squares over a window of 3, clamped edges (pad by 0 on the left only)."""
    return fun([Array(Float, N)], lambda x: map(lambda w: reduce(lift.add, 0.0) << map(square) << w)
               << slide(3, 1) << pad(2, 0, 0.0) << x)


def scaled_sum():
    return fun([Float, Array(Float, N), Array(Float, N)],
               lambda a, x, y: map(lambda p: axpy(a, p[0], p[1])) << zip(x, y))


def _label(expr) -> str:
    labels = list(auto_space(expr, {}))
    assert len(labels) == 1, labels
    return labels[0]


@pytest.mark.device
@pytest.mark.parametrize("make", [stencil3, weighted5, energy3, scaled_sum])
@pytest.mark.parametrize("width", [4, 8, 16])
def test_every_width_matches_the_interpreter(make, width: int) -> None:
    n = 1024
    prog = make()
    args = (np.float32(1.5), rand(n), rand(n, seed=1)) if make is scaled_sum else (rand(n),)
    pointed = auto_points(prog, {"N": n})
    label = _label(pointed)
    assert width in auto_space(pointed, {"N": n})[label]["width"]
    chosen = {label: {"skip": False, "width": width}}
    want = np.asarray(interpret(prog, *args)).reshape(-1)
    rewritten = apply_points(pointed, chosen, warn=False)  # the rewrite means the program (interpreter)
    assert "vectorise(" in str(rewritten) and "as_scalar" in str(rewritten)  # lifted to vectors
    np.testing.assert_allclose(np.asarray(interpret(rewritten, *args)).reshape(-1), want, rtol=1e-6)
    compiled = lift.compile(pointed, choices=Choices(points=chosen))
    assert f"float{width}" in compiled.source  # the point applied, not skipped
    np.testing.assert_allclose(np.asarray(compiled(*args)).reshape(-1), want, rtol=1e-5, atol=1e-6)


@pytest.mark.device
def test_the_stencil_reads_its_middle_window_as_one_aligned_vector() -> None:
    """The shape of the hand-written float8 stencil: the centre of the window is an aligned
    vector load; only the shifted windows' edge lanes are guarded."""
    pointed = auto_points(stencil3(), {"N": 4096})
    prog = lift.compile(pointed, choices=Choices(points={_label(pointed): {"skip": False, "width": 8}}))
    assert "((global float8*)x)[gl]" in prog.source.replace("const ", "")
    assert "for (" not in prog.source  # the window reduction is unrolled
    x = rand(4096)
    xp = np.pad(x.astype(np.float64), 1)
    np.testing.assert_allclose(prog(x), xp[:-2] + xp[1:-1] + xp[2:], rtol=1e-5)


@pytest.mark.device
def test_shifted_windows_take_their_lanes_from_the_aligned_vectors() -> None:
    """The windows one to the left and right are gathered (one lane is under the pad's
    condition), but their other lanes come from the aligned centre vector
    (codegen/access.py `_gathered`), never from a scalar load each."""
    pointed = auto_points(stencil3(), {"N": 4096})
    prog = lift.compile(pointed, choices=Choices(points={_label(pointed): {"skip": False, "width": 8}}))
    src = prog.source.replace("const ", "")
    assert "((global float8*)x)[gl].s0" in src and "((global float8*)x)[gl].s7" in src
    assert "x[8*gl + 1]" not in src and "x[8*gl - 1]" in src  # only the guarded edge lanes are scalars
    x = rand(4096)
    xp = np.pad(x.astype(np.float64), 1)
    np.testing.assert_allclose(prog(x), xp[:-2] + xp[1:-1] + xp[2:], rtol=1e-5)


def test_a_gather_past_a_whole_vector_keeps_its_scalar_lanes() -> None:
    """An array whose length is no multiple of the width: an aligned vector holding an element
    read could reach past its end, so the lanes stay scalar loads."""
    from lift.arith import Cst, Var
    from lift.codegen.access import _gathered
    from lift.codegen.c_ast import CLane, CRaw
    from lift.types import ArrayType
    from lift.views import Load, Mem

    gl = Var("gl", Cst(0), None)
    for n, lanes_ok in ((4096, True), (4100, False)):
        m = Mem("x", ArrayType(Float, Cst(n)), "global")
        parts = tuple(Load(m, (8 * gl + 1 + k,)) for k in range(8))
        out = _gathered(parts, [CRaw(f"l{k}") for k in range(8)], {})
        assert all(isinstance(e, CLane) for e in out) is lanes_ok, n


def _rewrite(prog, width: int = 8):
    typecheck(prog)
    return VectorisePoint(prog.body).rewrite(prog.body, {"width": width}, lambda f: f)


def test_windows_it_cannot_lift_are_refused_with_the_reason() -> None:
    stride2 = fun([Array(Float, N)], lambda x: map(lambda w: reduce(lift.add, 0.0) << w)
                  << slide(3, 2) << pad(1, 2, 0.0) << x)
    assert "step 1" in _rewrite(stride2)
    wide = fun([Array(Float, N)], lambda x: map(lambda w: reduce(lift.add, 0.0) << w)
               << slide(17, 1) << pad(8, 8, 0.0) << x)
    assert "not unrolled" in _rewrite(wide)
    whole = fun([Array(Float, N)], lambda x: map(lambda w: reduce(lift.add, 0.0) << map(square) << w)
                << map(lambda w: w) << slide(3, 1) << x)  # the windows are not the map's input
    assert isinstance(_rewrite(whole), str)


def test_auto_points_do_not_place_a_point_on_a_stencil_they_cannot_lift() -> None:
    stride2 = fun([Array(Float, N)], lambda x: map(lambda w: reduce(lift.add, 0.0) << w)
                  << slide(3, 2) << pad(1, 2, 0.0) << x)
    assert auto_points(stride2, {"N": 1024}) is stride2
