"""Layout "pad" of the automatic `block_nest` point over windows of an input as it lies in memory
(rewrites/auto_conv.py, issue 27 item 3): a valid convolution (`slide_nd(2, 3, s) << X`, no pad),
of any stride and window size, gets the register blocks of the padded one, reading its windows in
place (no copy of the input, no im2col), its reduction split into whole window rows (`chunk`).
Every choice preserves the interpreter's result; compiled by default, the blocks fire."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lift
from lift import Array, Float, Size, fun, join_nd, map, map_nd, pad_nd, reduce, slide, slide_nd, split, zip
from lift import rewrites as rw
from lift.arith import evaluate
from lift.ir.nodes import OclKernel
from lift.ir.paths import walk
from lift.rewrites.auto_conv import window_source
from lift.rewrites.block_space import Registers
from lift.rewrites.nest import nest_parts
from lift.spaces import profile_of
from programs import apply_choice

H, W, C, M = Size("H"), Size("W"), Size("C"), Size("M")


def conv2d(k: int = 3, stride: int = 1, padding: int = 0):
    """k x k windows (stride `stride`) of the [H][W][C] input, zero-padded by `padding` (0: valid),
    against M filters [k][k][C]."""
    def body(inp, wts):
        src = pad_nd(2, padding, padding, 0.0) << inp if padding else inp
        windows = map_nd(2, join_nd(3)) << slide_nd(2, (k, k), stride) << src
        return map_nd(2, lambda win: map(lambda f: reduce(lift.add, 0.0) << map(lift.mult) << zip(win, f))
                      << (map(join_nd(3)) << wts)) << windows
    return fun([Array(Array(Array(Float, C), W), H), Array(Array(Array(Array(Float, C), k), k), M)], body)


def _inputs(h: int, c: int, m: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.random((h, h, c), dtype=np.float32) - 0.5, rng.random((m, k, k, c), dtype=np.float32) - 0.5)


def _numpy_conv(inp: np.ndarray, wts: np.ndarray, stride: int) -> np.ndarray:
    """Valid correlation, im2col + GEMM in float64."""
    h, _, c = inp.shape
    m, k = wts.shape[0], wts.shape[1]
    o = (h - k) // stride + 1
    cols = np.stack([inp[i:i + stride * o:stride, j:j + stride * o:stride, :].astype(np.float64)
                     for i in range(k) for j in range(k)], axis=2).reshape(o * o, k * k * c)
    return (cols @ wts.astype(np.float64).reshape(m, k * k * c).T).reshape(o, o, m)


def _sizes(h: int, c: int, m: int) -> dict[str, int]:
    return {"H": h, "W": h, "C": c, "M": m}


@pytest.mark.parametrize("k,stride", [(3, 1), (3, 2), (5, 1), (2, 2)])
def test_windows_of_the_input_itself_are_offered_the_pad_layout_first(k: int, stride: int) -> None:
    sizes = _sizes(9, 8, 16)
    prog = rw.auto_points(conv2d(k, stride), sizes, min_length=1)
    point = next(p for p in rw.points(prog).values() if p.kind == "block_nest")
    calls, y, x = window_source(nest_parts(point.f.body)[1])
    assert y is x and x is point.f.params[0]  # nothing to copy: the windows are read in place
    space = rw.auto_space(prog, sizes)["auto_b0"]
    assert space["layout"][0] == "pad"
    # the reduction (k k C) split into whole window rows (k C), single channels rows (C), or one loop
    whole = k * k * 8
    assert space["chunk"][-1] == whole and all(whole % c == 0 and c % 8 == 0 for c in space["chunk"])
    assert k * 8 in space["chunk"]  # one row of a window: k pixels of C channels, contiguous in X


def test_a_windows_call_over_a_reshaped_input_is_not_offered() -> None:
    """Windows of `split << x` (not the input as it lies, nor a padded copy): no "pad" layout."""
    prog = fun([Array(Float, M), Array(Array(Float, 4), C)], lambda x, w: map(
        lambda win: map(lambda f: reduce(lift.add, 0.0) << map(lift.mult) << zip(win, f)) << w)
        << slide(4, 4) << (lift.join << split(8) << x))
    sizes = {"M": 64, "C": 8}
    space = rw.auto_space(rw.auto_points(prog, sizes, min_length=1), sizes)["auto_b0"]
    assert "keep" in space["layout"] and "pad" not in space["layout"]


@settings(max_examples=12, deadline=None)
@given(data=st.data())
def test_every_choice_on_a_valid_or_strided_conv_preserves_the_interpreters_result(data) -> None:
    k, stride = data.draw(st.sampled_from([(3, 1), (3, 2), (2, 2), (5, 1)]))
    h = data.draw(st.sampled_from([k, k + 1, k + 3]))
    c, m = data.draw(st.sampled_from([1, 4, 8])), data.draw(st.sampled_from([2, 4, 8]))
    sizes = _sizes(h, c, m)
    prog = rw.auto_points(conv2d(k, stride), sizes, min_length=1)
    space = rw.auto_space(prog, sizes)["auto_b0"]
    choice = {key: data.draw(st.sampled_from(v)) for key, v in space.items() if key not in ("skip", "layout")}
    choice["layout"] = "pad"
    args = _inputs(h, c, m, k, 1)
    out, _ = apply_choice(prog, "auto_b0", choice, "divide", "lane sums")
    want = lift.interpret(conv2d(k, stride), *args)
    np.testing.assert_allclose(lift.interpret(out, *args), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(want, _numpy_conv(*args, stride), rtol=1e-4, atol=1e-4)


def _kernel_sources(source: str) -> list[str]:
    return ["kernel void" + s for s in re.split(r"\bkernel void", source)[1:]]


@pytest.mark.device
@pytest.mark.parametrize("stride", [1, 2])
def test_a_valid_conv_gets_the_register_blocks_by_default(stride: int) -> None:
    """`lift.compile` of a valid 3x3 conv with constant sizes: the blocks (accumulators of the
    device's native vector width: float8 on AVX2, float16 on AVX-512),
    windows read in place from the input (no copy of it, no im2col buffer), the reduction in whole
    window rows (no division in the inner loop), the interpreter's result."""
    h, c, m = 10, 32, 32  # a reduction of 288 (default points need 256)
    prog = lift.compile(_concrete(3, stride, h, c, m))
    point = prog.choices.points.get("auto_b0", {})
    assert point.get("layout") == "pad" and point.get("chunk") == 3 * c, prog.choices
    inp, wts = _inputs(h, c, m, 3, 5)
    want = lift.interpret(conv2d(3, stride), inp, wts)
    np.testing.assert_allclose(np.asarray(prog(inp, wts)).reshape(np.shape(want)), want, rtol=1e-4, atol=1e-4)
    temps = [int(evaluate(b.count, {})) for b in prog.plan.buffers if b.role == "temp"]
    o = (h - 3) // stride + 1
    assert h * h * c not in temps and o * o * 9 * c not in temps, temps  # no copy of the input, no im2col
    main = _kernel_sources(prog.source)[-1]
    width = point.get("width")
    assert width == Registers.of(profile_of(prog.device)).lanes, (width, prog.device)  # the device's vectors
    assert f"float{width} acc" in main
    loop = re.search(rf"for \(int (\w+) = 0; \w+ < {3 * c};", main)  # the loop over a window row
    assert loop is not None, main
    var, body = loop.group(1), main[loop.end():]
    body = body[body.index("\n"):body.index("}")]
    divided = re.findall(r"\(([^()]*)\) [/%]", body) + re.findall(r"(\w+) [/%]", body)
    assert divided == [] or all(not re.search(rf"\b{var}\b", d) for d in divided), body  # no division per step


def _concrete(k: int, stride: int, h: int, c: int, m: int):
    """`conv2d` with its sizes fixed."""
    def body(inp, wts):
        windows = map_nd(2, join_nd(3)) << slide_nd(2, (k, k), stride) << inp
        return map_nd(2, lambda win: map(lambda f: reduce(lift.add, 0.0) << map(lift.mult) << zip(win, f))
                      << (map(join_nd(3)) << wts)) << windows
    return fun([Array(Array(Array(Float, c), h), h), Array(Array(Array(Array(Float, c), k), k), m)], body)


def test_the_pad_layout_over_a_valid_conv_adds_no_kernel_for_the_input() -> None:
    sizes = _sizes(6, 8, 16)
    prog = rw.auto_points(conv2d(), sizes, min_length=1)
    out = rw.apply_all(prog, {"auto_b0": {"rows": 2, "cols": 1, "width": 8, "layout": "pad", "along": "reduced",
                                          "chunk": 24}})
    assert not any(isinstance(nd, OclKernel) for _, nd in walk(out))  # along the reduced dimension: none at all
    args = _inputs(6, 8, 16, 3, 2)
    np.testing.assert_allclose(lift.interpret(out, *args), lift.interpret(conv2d(), *args), rtol=1e-5, atol=1e-5)
