"""Layout "pad" of the automatic `block_nest` point (rewrites/auto_conv.py): the windows' padded
input copied once (float8), the blocks reading their windows directly from the copy. Every choice
preserves the interpreter's result; compiled, the conv has no im2col buffer and no pad condition
in its blocks; the tuner's seeds try it first."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lift
from lift import Array, Float, Size, fun, join_nd, map, map_nd, pad, pad_nd, reduce, slide, slide_nd, transpose, zip
from lift import rewrites as rw
from lift.arith import evaluate
from lift.explore.evaluate import Evaluator
from lift.explore.points import joint
from lift.explore.seeds import Seeded
from lift.ir.nodes import OclKernel, Pad, Slide
from lift.ir.paths import walk
from lift.rewrites.auto_conv import PAD_SEEDS, window_source
from lift.rewrites.nest import nest_parts
from programs import apply_choice

H, W, C, M, N, K = Size("H"), Size("W"), Size("C"), Size("M"), Size("N"), Size("K")


def conv2d():
    """Thesis Listing 4.1 written plainly: 3x3 windows of the zero-padded [H][W][C] input against
    M filters [3][3][C]."""
    def body(inp, wts):
        windows = map_nd(2, join_nd(3)) << slide_nd(2, (3, 3), 1) << pad_nd(2, 1, 1, 0.0) << inp
        return map_nd(2, lambda win: map(lambda k: reduce(lift.add, 0.0) << map(lift.mult) << zip(win, k))
                      << (map(join_nd(3)) << wts)) << windows
    return fun([Array(Array(Array(Float, C), W), H), Array(Array(Array(Array(Float, C), 3), 3), M)], body)


def conv1d_valid():
    """Windows of x itself (no pad): nothing for layout "pad" to copy."""
    return fun([Array(Float, M), Array(Array(Float, 3), N)], lambda x, w: map(
        lambda win: map(lambda k: reduce(lift.add, 0.0) << map(lift.mult) << zip(win, k)) << w) << slide(3, 1) << x)


def matmul():
    return fun([Array(Array(Float, K), M), Array(Array(Float, N), K)], lambda a, b: map(
        lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << (transpose << b)) << a)


def _inputs(h: int, c: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.random((h, h, c), dtype=np.float32) - 0.5, rng.random((m, 3, 3, c), dtype=np.float32) - 0.5)


def _numpy_conv(inp: np.ndarray, wts: np.ndarray) -> np.ndarray:
    h, w, c = inp.shape
    xp = np.pad(inp.astype(np.float64), ((1, 1), (1, 1), (0, 0)))
    cols = np.stack([xp[i:i + h, j:j + w, :] for i in range(3) for j in range(3)], axis=2).reshape(h * w, 9 * c)
    return (cols @ wts.astype(np.float64).reshape(wts.shape[0], 9 * c).T).reshape(h, w, -1)


def _sizes(h: int, c: int, m: int) -> dict[str, int]:
    return {"H": h, "W": h, "C": c, "M": m}


def test_the_windows_of_a_padded_input_are_offered_the_pad_layout_first() -> None:
    sizes = _sizes(8, 8, 16)
    prog = rw.auto_points(conv2d(), sizes, min_length=1)
    point = next(p for p in rw.points(prog).values() if p.kind == "block_nest")
    a = nest_parts(point.f.body)[1]
    calls, y, x = window_source(a)
    assert any(isinstance(m, Pad) for _, m in walk(y)) and not any(isinstance(m, Slide) for _, m in walk(y))
    assert x is point.f.params[0] and any(isinstance(m, Slide) for _, m in walk(calls[-1].f))
    space = rw.auto_space(prog, sizes)["auto_b0"]
    assert space["layout"][0] == "pad" and set(space["layout"]) == {"pad", "copy", "keep", "gather"}
    # the reduction (9C = 72) split into whole rows of the padded input (C = 8): 3C first, C, then one loop
    assert space["chunk"] == (24, 8, 72)
    mm = {"M": 64, "N": 64, "K": 512}
    assert "pad" not in rw.auto_space(rw.auto_points(matmul(), mm), mm)["auto_b0"]["layout"]  # no windows
    valid = {"M": 64, "N": 8}  # windows of x itself: offered too, read in place (tests/test_auto_conv_valid.py)
    assert rw.auto_space(rw.auto_points(conv1d_valid(), valid, min_length=1), valid)["auto_b0"]["layout"][0] == "pad"


@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_every_pad_choice_preserves_the_interpreters_result(data) -> None:
    h, c, m = data.draw(st.sampled_from([2, 3, 4])), data.draw(st.sampled_from([1, 4, 8])), \
        data.draw(st.sampled_from([2, 4, 8]))
    sizes = _sizes(h, c, m)
    prog = rw.auto_points(conv2d(), sizes, min_length=1)
    space = rw.auto_space(prog, sizes)["auto_b0"]
    choice = {k: data.draw(st.sampled_from(v)) for k, v in space.items() if k not in ("skip", "layout")}
    choice["layout"] = "pad"
    args = _inputs(h, c, m, 1)
    out, outcome = apply_choice(prog, "auto_b0", choice, "does not divide", "lane sums")
    if outcome.applied:  # the padded input is copied in a kernel of its own, the windows stay views
        assert sum(isinstance(n, OclKernel) for _, n in walk(out)) >= 2
    np.testing.assert_allclose(lift.interpret(out, *args), lift.interpret(conv2d(), *args), rtol=1e-5, atol=1e-5)


def test_a_conv1d_over_a_padded_input_takes_the_pad_layout_along_both_dimensions() -> None:
    prog = fun([Array(Float, M), Array(Array(Float, 3), N)], lambda x, w: map(
        lambda win: map(lambda k: reduce(lift.add, 0.0) << map(lift.mult) << zip(win, k)) << w)
        << slide(3, 1) << pad(1, 1, 0.0) << x)
    sizes = {"M": 16, "N": 8}
    placed = rw.auto_points(prog, sizes, min_length=1)
    rng = np.random.default_rng(2)
    args = (rng.random(16, dtype=np.float32), rng.random((8, 3), dtype=np.float32))
    for along, width in (("output", 8), ("reduced", 1)):
        out = rw.apply_all(placed, {"auto_b0": {"rows": 4, "cols": 1, "width": width, "layout": "pad",
                                                "along": along}})
        assert any(isinstance(n, OclKernel) for _, n in walk(out))
        np.testing.assert_allclose(lift.interpret(out, *args), lift.interpret(prog, *args), rtol=1e-5)


def _kernel_sources(source: str) -> list[str]:
    return ["kernel void" + s for s in re.split(r"\bkernel void", source)[1:]]


@pytest.mark.device
@pytest.mark.parametrize("along,rows,cols,chunk", [("output", 2, 2, 24), ("reduced", 2, 4, 24), ("output", 1, 2, 72)])
def test_the_compiled_conv_reads_its_windows_from_one_padded_copy(along: str, rows: int, cols: int,
                                                                   chunk: int) -> None:
    h, c, m = 8, 8, 16
    sizes = _sizes(h, c, m)
    prog = rw.auto_points(conv2d(), sizes, min_length=1)
    inp, wts = _inputs(h, c, m, 3)
    point = {"rows": rows, "cols": cols, "width": 8, "layout": "pad", "along": along, "chunk": chunk}
    compiled = lift.compile(prog, choices=lift.Choices(points={"auto_b0": point}, sizes=sizes))  # as the tuner does
    assert compiled.choices.points["auto_b0"]["layout"] == "pad"
    want = lift.interpret(conv2d(), inp, wts)
    np.testing.assert_allclose(np.asarray(compiled(inp, wts)).reshape(np.shape(want)), want, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(want, _numpy_conv(inp, wts), rtol=1e-4, atol=1e-4)  # the interpreter is conv
    temps = sorted(int(evaluate(b.count, sizes)) for b in compiled.plan.buffers if b.role == "temp")
    padded = (h + 2) * (h + 2) * c
    # no im2col buffer (h*h*9c): the padded input once, and for vectors along the output the filters transposed
    assert temps == (sorted([padded, 9 * c * m]) if along == "output" else [padded]), temps
    kernels = _kernel_sources(compiled.source)
    assert "float8" in kernels[0] and "?" in kernels[0]  # the copy pads, moving float8 vectors
    assert "?" not in kernels[-1]  # the blocks read the windows with no pad condition
    if along == "reduced":
        assert "(global float8*)" in kernels[-1]  # aligned vector loads of the windows along the channels
    loops = re.findall(r"for \(int \w+ = 0; \w+ < (\d+);", kernels[-1])
    steps = 9 * c // (8 if along == "reduced" else 1)  # the reduction's steps: scalars, or float8 vectors
    if chunk < 9 * c:  # nested loops over whole rows of the padded input
        assert str(9 * c // chunk) in loops and str(steps * chunk // (9 * c)) in loops, loops
    else:
        assert str(steps) in loops, loops


def test_the_tuners_seeds_try_the_pad_layout_first() -> None:
    sizes = _sizes(8, 8, 16)
    prog = rw.auto_points(conv2d(), sizes, min_length=1)
    structural = rw.auto_space(prog, sizes)
    args = _inputs(8, 8, 16, 4)
    seeded = Seeded(Evaluator(prog, args, None, sizes), structural, ["auto_b0"], inner=None)
    first = next(seeded.seeds())
    assert first.points["auto_b0"] == {"skip": False, **PAD_SEEDS[0], "chunk": structural["auto_b0"]["chunk"][0],
                                           "pack": "none"}  # block_nest's pack does not apply to the padded copy
    assert joint(first)  # a valid mapping of the blocks, completed by the solver
