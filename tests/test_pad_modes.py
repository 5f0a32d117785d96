"""Boundary modes of `pad` and `pad_nd` ("clamp", "mirror", "wrap": numpy.pad's edge, symmetric and
wrap): typing, both interpreters and compiled programs against `numpy.pad` for every mode, length
and amount (pads wider than the array included), stencils and convolutions over them through the
default compile and the conv blocks' layouts, and the points that move maps across a pad."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lift
from lift import Array, Float, Int, Size, fun, join_nd, map, map_nd, pad, pad_nd, reduce, slide, slide_nd, zip
from lift import rewrites as rw
from lift.errors import LiftTypeError
from lift.interpret import interpret
from lift.rules.recompute import fuse_into_stencils
from lift.views import boundary_index

N, M = Size("N"), Size("M")
MODES = {"clamp": "edge", "mirror": "symmetric", "wrap": "wrap"}
RNG = np.random.default_rng(41)


def _padded(mode: str, left: int, right: int):
    return fun([Array(Float, N)], lambda x: map(lambda a: a * 2.0) << pad(left, right, mode=mode) << x)


def test_boundary_index_is_numpys_for_every_position() -> None:
    for mode, np_mode in MODES.items():
        for size in range(1, 6):
            want = np.pad(np.arange(size), 13, mode=np_mode)
            got = [lift.arith.evaluate(boundary_index(mode, lift.arith.Cst(c), lift.arith.Cst(size)))
                   for c in range(-13, size + 13)]
            assert got == list(want), (mode, size)


@given(mode=st.sampled_from(sorted(MODES)), n=st.integers(1, 9), left=st.integers(0, 20), right=st.integers(0, 20))
def test_both_interpreters_pad_as_numpy(mode: str, n: int, left: int, right: int) -> None:
    x = RNG.random(n, dtype=np.float32)
    want = np.pad(x, (left, right), mode=MODES[mode]) * 2
    np.testing.assert_array_equal(interpret(_padded(mode, left, right), x), want)
    batched = fun([Array(Array(Float, N), M)],
                  lambda xs: map(map(lambda a: a * 2.0) << pad(left, right, mode=mode)) << xs)
    xs = RNG.random((3, n), dtype=np.float32)
    np.testing.assert_array_equal(interpret(batched, xs), np.pad(xs, ((0, 0), (left, right)), mode=MODES[mode]) * 2)


@pytest.mark.device
@settings(max_examples=30)
@given(mode=st.sampled_from(sorted(MODES)), n=st.integers(1, 9), left=st.integers(0, 20), right=st.integers(0, 20))
def test_compiled_pads_equal_numpy(mode: str, n: int, left: int, right: int) -> None:
    x = RNG.random(n, dtype=np.float32)
    want = np.pad(x, (left, right), mode=MODES[mode]) * 2
    np.testing.assert_array_equal(lift.compile(_padded(mode, left, right))(x), want)  # symbolic length
    fixed = fun([Array(Float, n)], lambda y: map(lambda a: a * 2.0) << pad(left, right, mode=mode) << y)
    np.testing.assert_array_equal(lift.compile(fixed)(x), want)  # constant length: proofs and vectors


@pytest.mark.device
@settings(max_examples=12)
@given(mode=st.sampled_from(sorted(MODES)), h=st.integers(1, 5), w=st.integers(1, 5),
       pads=st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(0, 7), st.integers(0, 7)))
def test_pad_nd_equals_numpy_in_two_dimensions(mode: str, h: int, w: int, pads: tuple[int, int, int, int]) -> None:
    t, b, lf, r = pads
    prog = fun([Array(Array(Float, M), N)],
               lambda a: map(map(lambda v: v + 1.0)) << pad_nd(2, (t, lf), (b, r), mode=mode) << a)
    img = RNG.random((h, w), dtype=np.float32)
    want = np.pad(img, ((t, b), (lf, r)), mode=MODES[mode]) + 1
    np.testing.assert_array_equal(interpret(prog, img), want)
    np.testing.assert_array_equal(lift.compile(prog)(img), want)


def _box(h: int, w: int, mode: str, k: int = 3):
    """A k x k box filter over the image padded at the boundary `mode`."""
    r = k // 2
    return fun([Array(Array(Float, w), h)], lambda a: map(map(lambda win: reduce(lift.add, 0.0) << join_nd(2) << win))
               << slide_nd(2, k, 1) << pad_nd(2, r, r, mode=mode) << a)


def _box_numpy(img: np.ndarray, mode: str, k: int = 3) -> np.ndarray:
    h, w = img.shape
    p = np.pad(img.astype(np.float64), k // 2, mode=MODES[mode])
    return sum(p[i:i + h, j:j + w] for i in range(k) for j in range(k))


@pytest.mark.device
@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("h,w,k", [(32, 48, 3), (3, 2, 5), (256, 256, 3)])
def test_stencils_over_boundary_modes_compile_to_numpys_result(mode: str, h: int, w: int, k: int) -> None:
    img = RNG.random((h, w), dtype=np.float32)
    want = _box_numpy(img, mode, k)
    np.testing.assert_allclose(interpret(_box(h, w, mode, k), img), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(lift.compile(_box(h, w, mode, k))(img), want, rtol=1e-5, atol=1e-5)
    # a five-point stencil (Rodinia's hotspot reads its neighbours clamped), vectorised at 4096
    five = fun([Array(Array(Float, w), h)], lambda a: map(map(
        lambda v: v[0][1] + v[1][0] + v[1][1] * 4.0 + v[1][2] + v[2][1])) << slide_nd(2, 3, 1)
        << pad_nd(2, 1, 1, mode=mode) << a)
    p = np.pad(img, 1, mode=MODES[mode])
    want5 = p[:h, 1:w + 1] + p[1:h + 1, :w] + 4 * p[1:h + 1, 1:w + 1] + p[1:h + 1, 2:] + p[2:, 1:w + 1]
    np.testing.assert_allclose(lift.compile(five)(img), want5, rtol=1e-5, atol=1e-5)


@pytest.mark.device
@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_vectorised_1d_stencil_over_a_computed_array(mode: str) -> None:
    relu = lift.user_fun(lambda a: max(a, 0.0), [Float], Float, name="relu")
    n = 4096
    prog = fun([Array(Float, n)], lambda x: map(lambda win: reduce(lift.add, 0.0) << win) << slide(3, 1)
               << pad(1, 1, mode=mode) << map(relu) << x)
    x = RNG.random(n, dtype=np.float32) - 0.5
    p = np.pad(np.maximum(x, 0), 1, mode=MODES[mode])
    compiled = lift.compile(prog)
    np.testing.assert_allclose(compiled(x), p[:-2] + p[1:-1] + p[2:], rtol=1e-5, atol=1e-6)


def _conv2d(mode: str, h: int, c: int, m: int):
    def body(inp, wts):
        windows = map_nd(2, join_nd(3)) << slide_nd(2, (3, 3), 1) << pad_nd(2, 1, 1, mode=mode) << inp
        return map_nd(2, lambda win: map(lambda k: reduce(lift.add, 0.0) << map(lift.mult) << zip(win, k))
                      << (map(join_nd(3)) << wts)) << windows
    return fun([Array(Array(Array(Float, c), h), h), Array(Array(Array(Array(Float, c), 3), 3), m)], body)


def _conv_numpy(inp: np.ndarray, wts: np.ndarray, mode: str) -> np.ndarray:
    h, w, c = inp.shape
    xp = np.pad(inp.astype(np.float64), ((1, 1), (1, 1), (0, 0)), mode=MODES[mode])
    cols = np.stack([xp[i:i + h, j:j + w, :] for i in range(3) for j in range(3)], axis=2).reshape(h * w, 9 * c)
    return (cols @ wts.astype(np.float64).reshape(wts.shape[0], 9 * c).T).reshape(h, w, -1)


@pytest.mark.device
@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_conv_blocks_read_a_boundary_padded_input_in_every_layout(mode: str) -> None:
    h, c, m = 8, 8, 16
    prog = _conv2d(mode, h, c, m)
    inp, wts = RNG.random((h, h, c), dtype=np.float32) - 0.5, RNG.random((m, 3, 3, c), dtype=np.float32) - 0.5
    want = _conv_numpy(inp, wts, mode)
    np.testing.assert_allclose(interpret(prog, inp, wts), want, rtol=1e-4, atol=1e-4)
    compiled = lift.compile(prog)
    if lift.devices.current().kind == "cpu":  # a GPU gets its tiles instead of the register blocks
        assert compiled.choices.points["auto_b0"]["layout"] == "pad"  # the padded copy, as for a zero pad
    np.testing.assert_allclose(compiled(inp, wts), want, rtol=1e-4, atol=1e-4)
    placed = rw.auto_points(prog, {}, min_length=1)
    for layout in rw.auto_space(placed, {})["auto_b0"]["layout"]:
        point = {"rows": 2, "cols": 2, "width": 8, "layout": layout, "along": "output", "chunk": 72}
        got = lift.compile(placed, choices=lift.Choices(points={"auto_b0": point}, sizes={}))(inp, wts)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=layout)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_producer_is_recomputed_per_window_across_a_boundary_pad_whatever_it_computes(mode: str) -> None:
    inc = lift.user_fun(lambda a: a + 1.0, [Float], Float, name="inc")  # inc(0) != 0: never across a zero pad
    def prog(m: str, v: float = 0.0):
        return fun([Array(Float, N)], lambda x: map(lambda win: reduce(lift.add, 0.0) << win) << slide(3, 1)
                   << pad(1, 1, v, mode=m) << map(inc) << x)
    fused = fuse_into_stencils(prog(mode))
    assert str(fused).count("map(inc)") == 1 and "map(inc) << x" not in str(fused)
    zero = prog("constant")
    assert fuse_into_stencils(zero) is zero
    x = RNG.random(17, dtype=np.float32)
    np.testing.assert_allclose(interpret(fused, x), interpret(prog(mode), x), rtol=1e-6)


def test_typing_refuses_what_numpy_refuses() -> None:
    with pytest.raises(LiftTypeError, match="pad mode"):
        pad(1, 1, mode="edge")
    with pytest.raises(LiftTypeError, match="takes no value"):
        pad(1, 1, 2.0, mode="clamp")
    with pytest.raises(LiftTypeError, match=">= 0"):
        lift.typecheck(fun([Array(Float, 4)], lambda x: pad(-1, 1, mode="wrap") << x))
    symbolic = lift.typecheck(fun([Array(Float, N)], lambda x: pad(1, 1, mode="clamp") << x))
    assert symbolic is not None  # N >= 1 is a size condition checked at the call
    # any element type: tuples and rows are re-indexed whole
    pairs = fun([Array(Float, N), Array(Int, N)], lambda a, b: pad(2, 1, mode="mirror") << zip(a, b))
    a, b = np.arange(3, dtype=np.float32), np.arange(3, dtype=np.int32)
    got = interpret(pairs, a, b)
    np.testing.assert_array_equal(got[0], np.pad(a, (2, 1), mode="symmetric"))
    np.testing.assert_array_equal(got[1], np.pad(b, (2, 1), mode="symmetric"))
    assert str(pad(1, 2, mode="wrap")) == "pad(1, 2, mode='wrap')"
    assert "mode='clamp'" in str(fun([Array(Float, N)], lambda x: pad(1, 1, mode="clamp") << x))


@pytest.mark.device
@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_work_group_pads_its_local_copy_behind_a_barrier(mode: str) -> None:
    """Windows of a chunk copied to local memory and padded at the boundary: the re-indexed reads of
    other work-items' elements are ordered after the copy by a barrier."""
    prog = fun([Array(Float, N)], lambda x: lift.join << lift.map_wrg(
        lambda chunk: lift.map_lcl(lambda w: lift.reduce_seq(lift.add, 0.0) << w) << slide(3, 1)
        << pad(1, 1, mode=mode) << lift.to_local(lift.map_lcl(lift.id)) << chunk) << lift.split(64) << x)
    x = RNG.random(256, dtype=np.float32)
    chunks = np.pad(x.reshape(4, 64), ((0, 0), (1, 1)), mode=MODES[mode])
    want = (chunks[:, :-2] + chunks[:, 1:-1] + chunks[:, 2:]).reshape(-1)
    compiled = lift.compile(prog, local_size=64)
    assert "barrier(CLK_LOCAL_MEM_FENCE)" in compiled.source
    np.testing.assert_allclose(compiled(x), want, rtol=1e-6)
    np.testing.assert_allclose(interpret(prog, x), want, rtol=1e-6)


@pytest.mark.device
@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_narrow_boundary_pad_reads_through_a_selection_not_index_arithmetic(mode: str) -> None:
    """Pads no wider than the array: inside, a plain read; outside, the read at the re-indexed position,
    chosen as a zero pad's constant is (no min, max or modulo on the index, which PoCL calls as functions)."""
    compiled = lift.compile(_box(64, 64, mode))
    kernel = compiled.source.split("kernel void", 1)[1]
    assert "?" in kernel and not any(f in kernel for f in ("min(", "max(", "lift_floormod("))
    img = RNG.random((64, 64), dtype=np.float32)
    np.testing.assert_allclose(compiled(img), _box_numpy(img, mode), rtol=1e-5, atol=1e-5)


@pytest.mark.device
@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_tiled_stencil_over_a_boundary_pad(mode: str) -> None:
    """The `split_join` tiling point around a stencil's map: tiles of windows over the padded view."""
    prog = fun([Array(Float, 256)], lambda x: rw.split_join(map(lambda w: reduce(lift.add, 0.0) << w), label="T")
               << slide(3, 1) << pad(1, 1, mode=mode) << x)
    x = RNG.random(256, dtype=np.float32)
    p = np.pad(x, 1, mode=MODES[mode])
    for size in (4, 32):
        got = lift.compile(prog, choices={"T": {"size": size}})(x)
        np.testing.assert_allclose(got, p[:-2] + p[1:-1] + p[2:], rtol=1e-6)


@pytest.mark.device
@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_result_padded_at_the_boundary_is_copied_after_its_kernel(mode: str) -> None:
    """`pad(mode) << map(f) << x` at the result: the padded elements are not map(f)'s own, so the
    result is copied through the view in a kernel of its own (constraints/boundary.py)."""
    one = fun([Array(Float, N)], lambda x: pad(3, 2, mode=mode) << map(lambda v: v + 1.0) << x)
    two = fun([Array(Array(Float, N), N)], lambda a: pad_nd(2, 1, 2, mode=mode) << map(map(lambda v: v * 2.0)) << a)
    x, m = RNG.random(7, dtype=np.float32), RNG.random((5, 5), dtype=np.float32)
    np.testing.assert_array_equal(lift.compile(one)(x), np.pad(x + 1, (3, 2), mode=MODES[mode]))
    np.testing.assert_array_equal(lift.compile(two)(m), np.pad(m * 2, (1, 2), mode=MODES[mode]))
