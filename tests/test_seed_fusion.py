"""The fusions the seed workloads rely on (issue 17 item 4): normalisations every program gets before
mapping (`lift.rules.fusion.fuse_epilogues`, next to `fuse_reduce_maps`: an epilogue written as its own
map runs in the GEMM's kernel, an elementwise chain runs inside the reduction), a producer read by a
stencil recomputed per window (`lift.rules.recompute.fuse_into_stencils`, applied on request: it
does not pay on the CPU device), MLP layers in one kernel (`lift.rules.map_row_fusion`). Each is
checked against the interpreter (and numpy), by the solver's mapping and by the default lowering."""

from __future__ import annotations

import builtins
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, pad, reduce, slide, user_fun, zip
from lift.errors import MappingFallback
from lift.lower import lower
from lift.rules.fusion import fuse_epilogues
from lift.rules.recompute import fuse_into_stencils
from lift.testing import assert_same

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import seed_programs as sp  # noqa: E402

M, N, K = Size("M"), Size("N"), Size("K")


@user_fun
def relu(x: Float) -> Float:
    return x if x > 0.0 else 0.0


@user_fun
def plus_one(x: Float) -> Float:
    return x + 1.0


def _dot(a, b):
    return reduce(lift.add, 0.0) << map(lambda p: p[0] * p[1]) << zip(a, b)


def _gemm_then_epilogue() -> lift.Lambda:
    """relu(x @ w.T + bias) written as a user would: the GEMM, then the epilogue as its own map."""
    def body(x, w, bias):
        y = map(lambda r: map(lambda c: _dot(r, c)) << w) << x
        return map(lambda row: map(lambda p: relu(p[0] + p[1])) << zip(row, bias)) << y
    return fun([Array(Array(Float, K), M), Array(Array(Float, K), N), Array(Float, N)], body)


def _rand(*shape: int) -> np.ndarray:
    return np.random.default_rng(sum(shape)).random(shape, dtype=np.float32) - 0.5


def _temps(prog: lift.Program) -> list[str]:
    return [b.name for b in prog.plan.buffers if b.role == "temp"]


def _both(p: lift.Lambda, tmp_path: Path) -> list[lift.Program]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MappingFallback)
        return [lift.compile(p, cache_dir=tmp_path), lift.compile(lower(p), cache_dir=tmp_path)]


# ------------------------------------------------------------------ GEMM epilogue


def test_epilogue_is_fused_into_the_gemm_map() -> None:
    p = _gemm_then_epilogue()
    q = fuse_epilogues(p)
    assert q is not p and str(q).count("map(") == str(p).count("map(") - 2  # two maps fewer: one traversal
    x, w, b = _rand(5, 7), _rand(6, 7), _rand(6)
    assert_same(lift.interpret(p, x, w, b), lift.interpret(q, x, w, b))


@pytest.mark.device
def test_gemm_bias_relu_is_one_kernel_without_a_temporary(tmp_path: Path) -> None:
    p = _gemm_then_epilogue()
    x, w, b = _rand(8, 16), _rand(12, 16), _rand(12)
    for prog in _both(p, tmp_path):
        assert len(prog.kernels) == 1 and _temps(prog) == []  # no array holds the GEMM's result
        assert_same(sp.np_fc_relu(x, w, b), prog(x, w, b), rtol=1e-5, atol=1e-5)


@pytest.mark.device
def test_epilogue_is_fused_into_a_tiled_gemm(tmp_path: Path) -> None:
    """The GEMM's rows tiled by a `split_join` point: the epilogue crosses the point's `join`."""
    from lift import rewrites as rw

    def body(x, w, bias):
        y = rw.split_join(map(lambda r: map(lambda c: _dot(r, c)) << w), label="T") << x
        return map(lambda row: map(lambda p: relu(p[0] + p[1])) << zip(row, bias)) << y

    p = fun([Array(Array(Float, K), M), Array(Array(Float, K), N), Array(Float, N)], body)
    x, w, b = _rand(8, 16), _rand(12, 16), _rand(12)
    prog = lift.compile(p, choices={"T": {"size": 4}}, cache_dir=tmp_path)
    assert len(prog.kernels) == 1 and _temps(prog) == []
    assert_same(sp.np_fc_relu(x, w, b), prog(x, w, b), rtol=1e-5, atol=1e-5)


def test_a_consumer_reading_elements_twice_is_not_fused() -> None:
    """Two MLP layers: each output of layer 2 reads a whole row of layer 1; fusing the maps would
    recompute layer 1 per output, so they stay two traversals."""
    p = sp.mlp3()
    assert fuse_epilogues(p) is p


def _zip_consumer(twice: bool = False) -> lift.Lambda:
    """out = relu(x + (y + 1)) over rows, the producer `y + 1` a map zipped with x (an unsharp mask's
    sharpening of the image with its blur); `twice`: the consumer reads the producer's row twice."""
    def body(x, y):
        made = map(lambda row: map(plus_one) << row) << y
        if twice:
            return map(lambda rr: map(lambda p: relu(p[0] + p[1])) << zip(rr[1], rr[1])) << zip(x, made)
        return map(lambda rr: map(lambda p: relu(p[0] + p[1])) << zip(rr[0], rr[1])) << zip(x, made)
    return fun([Array(Array(Float, N), M), Array(Array(Float, N), M)], body)


def test_a_producer_zipped_with_an_input_is_computed_where_it_is_read() -> None:
    """`map(f) << zip(x, map(g) << y)`, f reading g's row once: g runs inside f's traversal, down to
    the elements (no array holds `y + 1`); a consumer reading the row twice keeps the producer."""
    p = _zip_consumer()
    q = fuse_epilogues(p)
    assert str(q).count("map(") == str(p).count("map(") - 2 and "map(map(plus_one))" not in str(q), str(q)
    x, y = _rand(5, 7), _rand(5, 7) * 3
    assert_same(lift.interpret(p, x, y), lift.interpret(q, x, y))
    twice = _zip_consumer(twice=True)
    assert fuse_epilogues(twice) is twice
    inner = fun([Array(Float, M), Array(Float, M), Array(Float, K)],  # read once, but per element of w
                lambda x, y, w: map(lambda p: reduce(lambda acc, v: acc + v * p[1], 0.0) << w)
                << zip(x, map(plus_one) << y))
    assert fuse_epilogues(inner) is inner


@pytest.mark.device
def test_a_zipped_producer_runs_in_its_consumers_kernel(tmp_path: Path) -> None:
    p = _zip_consumer()
    x, y = _rand(8, 64), _rand(8, 64) * 3
    for prog in _both(p, tmp_path):
        assert len(prog.kernels) == 1 and _temps(prog) == [], prog.source
        assert_same(np.maximum(x + y + 1, 0), prog(x, y), rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------- producer into stencil


@pytest.mark.device
def test_quantize_is_recomputed_per_window_in_the_conv_kernel(tmp_path: Path) -> None:
    seed = next(s for s in sp.SEEDS if s.name == "quant_conv_relu")
    img, w = seed.inputs(seed.tiny)
    for prog in _both(fuse_into_stencils(seed.build()), tmp_path):
        assert len(prog.kernels) == 1 and _temps(prog) == []  # the window lives in private memory
        assert_same(sp.np_quant_conv_relu(img, w), prog(img, w), rtol=1e-5, atol=1e-5)


def test_a_producer_that_changes_the_padding_value_stays_a_separate_map() -> None:
    """pad(0) << map(x + 1) is not map(x + 1) << pad(0): the windows read real zeros at the border."""
    p = fun([Array(Float, N), Array(Float, 3)],
            lambda x, w: map(lambda win: _dot(win, w)) << slide(3, 1) << pad(1, 1, 0.0) << map(plus_one) << x)
    assert fuse_into_stencils(p) is p
    keep = fun([Array(Float, N), Array(Float, 3)],
               lambda x, w: map(lambda win: _dot(win, w)) << slide(3, 1) << pad(1, 1, 0.0) << map(relu) << x)
    fused = fuse_into_stencils(keep)
    assert fused is not keep
    x, ws = _rand(40), _rand(3)
    assert_same(lift.interpret(keep, x, ws), lift.interpret(fused, x, ws))


@pytest.mark.device
def test_a_padded_stencil_keeps_a_producer_that_changes_the_padding_correct(tmp_path: Path) -> None:
    p = fun([Array(Float, N), Array(Float, 3)],
            lambda x, w: map(lambda win: _dot(win, w)) << slide(3, 1) << pad(1, 1, 0.0) << map(plus_one) << x)
    x, w = _rand(40), _rand(3)
    for prog in _both(p, tmp_path):
        assert_same(lift.interpret(p, x, w), prog(x, w))


# -------------------------------------------------------- elementwise chain into reductions


@pytest.mark.device
@pytest.mark.parametrize("name", ["add_mul_sum0", "two_reductions"])
def test_elementwise_chains_run_inside_the_reduction(name: str, tmp_path: Path) -> None:
    seed = next(s for s in sp.SEEDS if s.name == name)
    arrays = seed.inputs(seed.tiny)
    for prog in _both(seed.build(), tmp_path):
        assert len(prog.kernels) == 1 and _temps(prog) == []
        got, want = prog(*arrays), seed.reference(*arrays)
        for g, v in builtins.zip(*((got, want) if isinstance(want, tuple) else ((got,), (want,)))):
            assert_same(np.asarray(v, dtype=np.float32), np.asarray(g), rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------- MLP layers in one kernel


def _rows_fused(p: lift.Lambda) -> lift.Lambda:
    from lift.rules import map_row_fusion
    from lift.rules.strategies import normalize, rewrite

    return rewrite(p, normalize(map_row_fusion)).expr  # type: ignore[return-value]


def test_map_row_fusion_computes_each_row_once() -> None:
    """The three layers become one map over the batch rows; each layer's row is bound by a `let`
    (computed once, read by every output of the next layer), not inlined into each read."""
    p = sp.mlp3()
    q = _rows_fused(p)
    assert str(q).count("let(") == 2 and str(q).startswith("(x, w1, b1, w2, b2, w3, b3) => map((r")
    seed = next(s for s in sp.SEEDS if s.name == "mlp3")
    arrays = seed.inputs(seed.tiny)
    assert_same(lift.interpret(p, *arrays), lift.interpret(q, *arrays))


@pytest.mark.device
def test_mlp_layers_in_one_kernel_with_a_work_group_per_row(tmp_path: Path) -> None:
    """map_row_fusion, then a work-group per batch row (map_wrg) and its work-items over each layer's
    outputs (map_lcl): one kernel, the layers separated by work-group barriers."""
    seed = next(s for s in sp.SEEDS if s.name == "mlp3")
    q = _rows_fused(seed.build())
    arrays = seed.inputs((4, 16, 8, 8, 4))
    want = sp._mlp_ref(*arrays)
    maps = sorted(lift.constraints.mapping_space(q).context.maps)
    assert "m0" in maps  # the map over the batch rows; the others: one per layer
    rows = {m: (20 if m == "m0" else 10) for m in maps}
    prog = lift.compile(q, choices=rows, cache_dir=tmp_path)
    assert len(prog.kernels) == 1 and len(prog.barriers) == 2
    assert "get_group_id(0)" in prog.source and "get_local_id(0)" in prog.source
    assert_same(want, prog(*arrays), rtol=1e-4, atol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MappingFallback)  # the solver's map_glb choice cannot synchronise
        default = lift.compile(q, cache_dir=tmp_path)
    assert len(default.kernels) == 1  # a work-item per row
    assert_same(want, default(*arrays), rtol=1e-4, atol=1e-5)


# ----------------------------------------------------- the recomputation as a tuner's choice


def _marked_quant_conv_relu() -> lift.Lambda:
    from lift import join, map_nd, pad_nd, slide_nd
    from lift import rewrites as rw

    H, W = Size("H"), Size("W")
    return fun([Array(Array(Float, W), H), Array(Array(Float, 3), 3)],
               lambda img, w: rw.recompute_producer(
                   lambda v: map_nd(2, lambda nbh: sp.relu(sp._dot(join << nbh, join << w)))
                   << slide_nd(2, 3, 1) << pad_nd(2, 1, 1, 0.0) << map_nd(2, sp.quantize) << v, label="P") << img)


@pytest.mark.device
def test_recompute_producer_point_applied_or_skipped(tmp_path: Path) -> None:
    """The point's `skip` is the choice between one kernel recomputing the producer per window and
    two kernels with a temporary; both match numpy."""
    from lift import rewrites as rw

    p = _marked_quant_conv_relu()
    img, w = _rand(12, 20), _rand(3, 3)
    want = sp.np_quant_conv_relu(img, w)
    applied, skipped = rw.apply_all(p, {"P": {}}), rw.apply_all(p, {"P": {"skip": True}})
    assert_same(lift.interpret(skipped, img, w), lift.interpret(applied, img, w))
    one = lift.compile(p, choices={"P": {}}, cache_dir=tmp_path)
    two = lift.compile(p, choices={"P": {"skip": True}}, cache_dir=tmp_path)
    assert (len(one.kernels), len(two.kernels)) == (1, 2) and _temps(one) == [] and _temps(two) != []
    for prog in (one, two):
        assert_same(want, prog(img, w), rtol=1e-5, atol=1e-5)
