"""The default lowering: outermost map -> map_glb, the rest map_seq, reduce -> reduce_seq, kernel stages."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from codegen_oracle import check, floats
from lift import Array, Float, Size, fun, map, reduce, transpose, zip
from lift.ir import nodes as n
from lift.ir.paths import walk
from lift.lower import lower
from lift.types import types_equal

N, M = Size("N"), Size("M")
RNG = np.random.default_rng(5)


def _kinds(p) -> list[str]:
    return [type(x).__name__ for _, x in walk(p) if isinstance(x, n.AbstractMap | n.AbstractReduce | n.OclKernel)]


def test_outermost_map_is_global_the_rest_sequential():
    p = fun([Array(Array(Float, M), N)], lambda a: map(map(lambda v: v + 1.0)) << a)
    low = lower(p)
    assert _kinds(low) == ["MapGlb", "MapSeq"]
    assert types_equal(low.body.type, p.body.type)


def test_element_wise_chain_stays_one_kernel():
    p = fun([Array(Float, N)], lambda x: map(lift.id) << map(lambda v: v * 2.0) << x)
    assert "OclKernel" not in _kinds(lower(p))


def test_dot_product_fuses_its_map_into_the_reduction():
    """reduce(add) << map(mult) << zip: map(mult) joins the operator, no temporary array, no MapGlb."""
    p = fun([Array(Float, N), Array(Float, N)], lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y))
    low = lower(p)
    assert "ReduceSeq" in _kinds(low) and not any(isinstance(x, n.AbstractMap) for _, x in walk(low))
    assert not any(isinstance(x, n.Map | n.Reduce) for _, x in walk(low))


@pytest.mark.device
def test_lowered_programs_match_the_interpreter():
    a = floats(RNG, 8, 6)
    check(fun([Array(Array(Float, M), N)], lambda m: map(map(lambda v: v * 3.0)) << transpose
              << map(map(lambda v: v + 1.0)) << m), a)
    check(fun([Array(Array(Float, M), N)], lambda m: map(lambda r: reduce(lift.add, 0.0) << r) << m), a)


@pytest.mark.device
def test_compile_uses_the_lowering():
    x, y = floats(RNG, 100), floats(RNG, 100)
    dot = fun([Array(Float, N), Array(Float, N)], lambda u, v: reduce(lift.add, 0.0) << map(lift.mult) << zip(u, v))
    from lift.compile import compile as lift_compile

    np.testing.assert_allclose(lift_compile(dot, cache_dir=False)(x, y), lift.interpret(dot, x, y), rtol=1e-4)


# ------------------------------------------- a fold of per-element reductions; a tuple folded, then read

INF = float("inf")
P, K, D = Size("P"), Size("K"), Size("D")


def _closer(a, b):
    return lift.select(b[1] < a[1], b, a)


def _count_nearest(acc, d):
    if d < acc[2]:
        return (acc[0] + 1, acc[0], d)
    return (acc[0] + 1, acc[1], acc[2])


def _squared_difference(a, b):
    return (a - b) * (a - b)


closer = lift.user_fun(_closer, [lift.Tuple(lift.Int, Float), lift.Tuple(lift.Int, Float)],
                       lift.Tuple(lift.Int, Float), name="closer")
count_nearest = lift.user_fun(_count_nearest, [lift.Tuple(lift.Int, lift.Int, Float), Float],
                              lift.Tuple(lift.Int, lift.Int, Float), name="count_nearest")
sqdiff = lift.user_fun(_squared_difference, [Float, Float], Float, name="sqdiff")


def _distances(p, cs):
    """The squared distance of point `p` to every centroid: a map whose function reduces."""
    return map(lambda c: reduce(lift.add, 0.0) << map(lambda t: sqdiff(t[0], t[1])) << zip(p, c)) << cs


def _nearest_programs(k=K, d=D):
    pts, cs = Array(Array(Float, d), P), Array(Array(Float, d), k)
    return {
        "fold with a counter": fun([pts, cs], lambda ps, c: map(
            lambda p: lift.get(1) << (reduce(count_nearest, (0, -1, INF)) << _distances(p, c))) << ps),
        "fold over zip(iota, ..)": fun([pts, cs], lambda ps, c: map(
            lambda p: lift.get(0) << (reduce(closer, (-1, INF)) << zip(lift.iota(k), _distances(p, c)))) << ps),
    }


@pytest.mark.device
@pytest.mark.parametrize("sizes", ["symbolic", "constant"])
@pytest.mark.parametrize("name", list(_nearest_programs()))
def test_a_fold_of_reductions_per_element_compiles_with_symbolic_lengths(name: str, sizes: str) -> None:
    """K-Means' assignment step: the distances to every centroid (a map whose function reduces), folded to the
    nearest, per point. The map is fused into the fold (no private array of K distances: K may be symbolic)."""
    pts, cs = RNG.random((64, 4), dtype=np.float32), RNG.random((5, 4), dtype=np.float32)
    prog = _nearest_programs(*((K, D) if sizes == "symbolic" else (5, 4)))[name]
    want = ((pts[:, None, :] - cs[None]) ** 2).sum(-1).argmin(1)
    np.testing.assert_array_equal(lift.interpret(prog, pts, cs), want)
    np.testing.assert_array_equal(lift.compile(prog)(pts, cs), want)
    maps = [type(x).__name__ for _, x in walk(lower(prog)) if isinstance(x, n.AbstractMap)]
    assert maps == ["MapGlb"]  # the points' map; the distances and their differences are fused into the folds


def test_the_partial_results_of_a_tiled_reduction_stay_a_map() -> None:
    """`reduce << map(chunk => reduce << chunk) << split(k)`: the chunks' partial results are kept, at
    the top level and per row (the parallel stage the rewrites chose), while other reducing producers are fused."""
    def tiled(r):
        return reduce(lift.add, 0.0) << map(lambda ch: reduce(lift.add, 0.0) << ch) << lift.split(4) << r

    rows = fun([Array(Array(Float, 64), N)], lambda a: map(tiled) << a)
    top = fun([Array(Float, 64)], tiled)
    for p in (rows, top):
        assert sum(isinstance(x, n.AbstractReduce) for _, x in walk(lower(p))) == 2
        assert any(isinstance(x, n.AbstractMap) and computes_reduce(x) for _, x in walk(lower(p)))


def computes_reduce(m) -> bool:
    return any(isinstance(y, n.AbstractReduce) for _, y in walk(m.f))


def _moments(v):
    return (v, v * v)


def _add_pairs(a, b):
    return (a[0] + b[0], a[1] + b[1])


def _standardise(v, s):
    return (v - s[0]) * s[1]


moments = lift.user_fun(_moments, [Float], lift.Tuple(Float, Float), name="moments")
add_pairs = lift.user_fun(_add_pairs, [lift.Tuple(Float, Float)] * 2, lift.Tuple(Float, Float), name="add_pairs")
standardise = lift.user_fun(_standardise, [Float, lift.Tuple(Float, Float)], Float, name="standardise")


def _stats_then_scale(rows, cols):
    """SRAD's shape: statistics of the image as a tuple (a full reduction bound by let), then every pixel
    scaled by them."""
    return fun([Array(Array(Float, cols), rows)], lambda img: lift.let(
        lambda s: map(map(lambda v: standardise(v, s))) << img)
        << (reduce(add_pairs, (0.0, 0.0)) << map(moments) << lift.join << img))


@pytest.mark.device
@pytest.mark.parametrize("shape", [(N, M), (20, 30)])
def test_a_tuple_valued_reduction_bound_by_let_is_read_inside_a_map(shape) -> None:
    prog = _stats_then_scale(*shape)
    img = RNG.random((20, 30), dtype=np.float32)
    total, squares = img.astype(np.float64).sum(), (img.astype(np.float64) ** 2).sum()
    want = (img - total) * squares
    np.testing.assert_allclose(lift.interpret(prog, img), want, rtol=1e-4)
    np.testing.assert_allclose(lift.compile(prog)(img), want, rtol=1e-4)
    # the initial tuple is built in the reduction's kernel, never passed to it
    kernels = [x for _, x in walk(lower(prog)) if isinstance(x, n.OclKernel)]
    assert any(isinstance(y, n.MakeTuple) for k in kernels for _, y in walk(k))


@pytest.mark.device
def test_a_tuple_valued_reduction_per_row_and_at_the_result() -> None:
    def scaled(row):
        stats = reduce(add_pairs, (0.0, 0.0)) << map(moments) << row
        return lift.let(lambda s: map(lambda v: standardise(v, s)) << row) << stats

    per_row = fun([Array(Array(Float, M), N)], lambda a: map(scaled) << a)
    result = fun([Array(Float, N)], lambda x: reduce(add_pairs, (0.0, 0.0)) << map(moments) << x)
    img = RNG.random((7, 9), dtype=np.float32)
    np.testing.assert_allclose(lift.compile(per_row)(img), lift.interpret(per_row, img), rtol=1e-4)
    x = RNG.random(1000, dtype=np.float32)
    got, want = lift.compile(result)(x), lift.interpret(result, x)
    np.testing.assert_allclose(np.asarray(got[0]), want[0], rtol=1e-4)
    np.testing.assert_allclose(np.asarray(got[1]), want[1], rtol=1e-4)
