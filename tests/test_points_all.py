"""The eleven rewrite points of thesis 6.2.5 (and register_block): random structural and tuning choices from each
point's valid space preserve the interpreter's result on random programs it matches; `skip` is
the identity; a misplaced point warns with its label, the user's line and why."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lift
from lift import Array, Float, fun, join, map, reduce, split, zip
from lift import rewrites as rw
from lift.errors import RewritePointSkipped

ELEMS = {"double": lambda e: e * 2.0, "inc": lambda e: e + 1.0, "neg": lambda e: 0.0 - e}


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _mm(point, n: int, m: int, k: int, **kw):
    """map(a => map(b => reduce(+) << map(*) << zip(a, b)) << B) << A, wrapped in `point`."""
    return fun([Array(Array(Float, k), n), Array(Array(Float, k), m)], lambda a, b: point(
        map(lambda ra: map(lambda rb: reduce(lift.add, 0.0) << map(lift.mult) << zip(ra, rb)) << b), label="P", **kw)
        << a)


def _elementwise(point, n: int, m: int, g: str, **kw):
    return fun([Array(Array(Float, m), n)], lambda x: point(map(map(ELEMS[g])), label="P", **kw) << x)


def _two_stage(point, n: int, m: int, g: str, **kw):
    return fun([Array(Array(Float, m), n)], lambda x: point(
        lambda v: map(map(ELEMS[g])) << map(map(lambda e: e * 3.0)) << v, label="P", **kw) << x)


def _dot(point, n: int, g: str, **kw):
    return fun([Array(Float, n), Array(Float, n)], lambda x, y: point(
        reduce(lift.add, 0.0) << map(lift.mult), label="P", **kw) << zip(x, y))


def _priv(n: int):
    return fun([Array(Float, n)], lambda x: rw.privatise_accumulator(reduce(lift.add, 0.0), label="P") << x)


def _rows_reduce(n: int, m: int):
    """reduce((acc, row) => map(+) << zip(acc, row), zeros) << x: column sums, a reduction of rows."""
    def body(x):
        op = lambda acc, row: map(lambda q: lift.add(q[0], q[1])) << zip(acc, row)  # noqa: E731
        return rw.interchange_reduce_nd(reduce(op, lift.value(0.0, Array(Float, m))), label="P") << x
    return fun([Array(Array(Float, m), n)], body)


def _pad(n: int, g: str):
    return fun([Array(Float, n)], lambda x: rw.pad_extra_nd(
        lambda v: join << map(map(ELEMS[g])) << split(n // 2) << v, label="P") << x)


def _pad_nd(k: int, shape: list[int], g: str):
    """pad_extra_nd(v => map_nd(k, g) << v, k) over a k-dimensional array."""
    t = Float
    for d in reversed(shape):
        t = Array(t, d)
    return fun([t], lambda x: rw.pad_extra_nd(lambda v: lift.map_nd(len(shape), ELEMS[g]) << v, k=k, label="P")
               << x)


# point -> (program builder from (draw, data), structural and tuning choices drawn for label "P")
SIZES = st.sampled_from([4, 6, 8, 12])


@st.composite
def cases(draw, kind: str):
    n, m, k = draw(SIZES), draw(SIZES), draw(SIZES)
    g = draw(st.sampled_from(sorted(ELEMS)))
    match kind:
        case "split_join":
            prog = fun([Array(Float, n)], lambda x: rw.split_join(map(ELEMS[g]), label="P") << x)
            ch = {"size": draw(st.sampled_from(_divisors(n)))}
        case "flatten":
            prog, ch = _elementwise(rw.flatten, n, m, g), {}
        case "ab_tile":
            prog = _mm(rw.ab_tile, n, m, k)
            ch = {"size_a": draw(st.sampled_from(_divisors(n))), "size_b": draw(st.sampled_from(_divisors(m))),
                  "prefetch_a": draw(st.sampled_from(rw.tiling.PREFETCH)),
                  "prefetch_b": draw(st.sampled_from(rw.tiling.PREFETCH))}
        case "tile_nested_map_reduce":
            prog = _mm(rw.tile_nested_map_reduce, n, m, k, final=lift.add)
            ch = {"size": draw(st.sampled_from(_divisors(k)))}
        case "fission":
            prog, ch = _two_stage(rw.fission, n, m, g), {}
        case "materialise":
            prog = _elementwise(rw.materialise, n, m, g)
            ch = {"mem": draw(st.sampled_from(rw.memory_points.MEMS)),
                  "width": draw(st.sampled_from(rw.memory_points.COPY_WIDTHS))}
        case "optimise_data_layout":
            k = draw(st.sampled_from([1, 2, 3]))
            prog = _two_stage(lambda f, **kw: rw.optimise_data_layout(f, n=k, **kw), n, m, g)
            order = draw(st.permutations(list(range(k + 1))))
            left, factors = n * m, []
            for _ in range(k):  # factors whose product divides n*m
                factors.append(draw(st.sampled_from(_divisors(left))))
                left //= factors[-1]
            ch = {"order": tuple(order), "factor": factors[0] if k == 1 else tuple(factors)}
        case "interchange_maps":
            prog, ch = _mm(rw.interchange_maps, n, m, k), {}
        case "interchange_reduce_nd":
            prog, rank = _rows_reduce(n, m), draw(st.sampled_from([2, 3]))
            ch = {"rank": rank, "new_reduce_dim": draw(st.sampled_from(range(1, rank)))}
            if rank == 3:
                ch["factor"] = draw(st.sampled_from(_divisors(m)))
        case "privatise_accumulator":
            prog, ch = _priv(n), {"result_mem": draw(st.sampled_from(rw.memory_points.MEMS))}
        case "pad_extra_nd":
            k = draw(st.sampled_from([1, 2, 3]))
            if k == 1:
                prog, ch = _pad(n, g), {"pad": draw(st.sampled_from([1, 2, 3])) * (n // 2)}  # keeps split(n/2) valid
            else:
                prog = _pad_nd(k, [n, m, k + 1][:k], g)
                ch = {"pad": tuple(draw(st.sampled_from([0, 1, 2, 3])) for _ in range(k))}
        case "register_block":
            prog = _mm(rw.register_block, n, m, k)
            ch = {"rows": draw(st.sampled_from([1, 2, 3, 4, 8])), "cols": draw(st.sampled_from([1, 2, 4, 5])),
                  "width": draw(st.sampled_from([1, 2, 4, 8]))}
        case _:
            raise AssertionError(kind)
    return prog, ch


POINTS = ["split_join", "flatten", "ab_tile", "tile_nested_map_reduce", "fission", "materialise",
          "optimise_data_layout", "interchange_maps", "interchange_reduce_nd", "privatise_accumulator",
          "pad_extra_nd", "register_block"]


def _args(prog, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for p in prog.params:
        shape, t = [], p.ptype
        while hasattr(t, "size"):
            shape.append(int(t.size.value) if hasattr(t.size, "value") else int(str(t.size)))
            t = t.elem
        out.append(rng.random(shape, dtype=np.float32))
    return out


@pytest.mark.parametrize("kind", POINTS)
@settings(max_examples=6, deadline=None)
@given(data=st.data())
def test_random_choices_preserve_the_interpreters_result(kind: str, data) -> None:
    prog, ch = data.draw(cases(kind))
    args = _args(prog, 0)
    want = lift.interpret(rw.apply_all(prog, {"P": {"skip": True}}), *args)
    outcomes: list = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", RewritePointSkipped)  # the point must match here
        out = rw.apply_all(prog, {"P": ch}, outcomes=outcomes)
    assert any(o.label == "P" and o.applied for o in outcomes)
    assert not any(rw.is_point(x) for _, x in lift.ir.paths.walk(out))
    np.testing.assert_allclose(lift.interpret(out, *args), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", POINTS)
def test_skip_is_the_identity(kind: str) -> None:
    prog, _ = _fixed_case(kind)
    args = _args(prog, 1)
    skipped = rw.apply_all(prog, {"P": {"skip": True}})
    assert not any(rw.is_point(x) for _, x in lift.ir.paths.walk(skipped))
    np.testing.assert_array_equal(lift.interpret(skipped, *args), lift.interpret(prog, *args))


def _fixed_case(kind: str):
    return {
        "split_join": lambda: (fun([Array(Float, 8)], lambda x: rw.split_join(map(ELEMS["inc"]), label="P") << x), 0),
        "flatten": lambda: (_elementwise(rw.flatten, 4, 6, "inc"), 0),
        "ab_tile": lambda: (_mm(rw.ab_tile, 4, 6, 8), 0),
        "tile_nested_map_reduce": lambda: (_mm(rw.tile_nested_map_reduce, 4, 6, 8, final=lift.add), 0),
        "fission": lambda: (_two_stage(rw.fission, 4, 6, "inc"), 0),
        "materialise": lambda: (_elementwise(rw.materialise, 4, 6, "inc"), 0),
        "optimise_data_layout": lambda: (_two_stage(rw.optimise_data_layout, 4, 6, "inc"), 0),
        "interchange_maps": lambda: (_mm(rw.interchange_maps, 4, 6, 8), 0),
        "interchange_reduce_nd": lambda: (_rows_reduce(4, 6), 0),
        "privatise_accumulator": lambda: (_priv(8), 0),
        "pad_extra_nd": lambda: (_pad(8, "inc"), 0),
        "register_block": lambda: (_mm(rw.register_block, 4, 6, 8), 0),
    }[kind]()


MISPLACED = {  # each point around something its pattern does not match, and a word of the reason
    "split_join": (lambda: fun([Array(Float, 8)], lambda x: rw.split_join(reduce(lift.add, 0.0), label="P") << x),
                   "map"),
    "flatten": (lambda: fun([Array(Float, 8)], lambda x: rw.flatten(map(lift.id), label="P") << x), "map(map"),
    "ab_tile": (lambda: fun([Array(Float, 8)], lambda x: rw.ab_tile(map(lift.id), label="P") << x), "map"),
    "tile_nested_map_reduce": (lambda: fun([Array(Float, 8)], lambda x: rw.tile_nested_map_reduce(
        map(lift.id), label="P") << x), "map(rb"),
    "fission": (lambda: fun([Array(Float, 8)], lambda x: rw.fission(map(lift.id), label="P") << x), "f << g"),
    "materialise": (lambda: fun([Array(Float, 8)], lambda x: rw.materialise(reduce(lift.add, 0.0), label="P")
                                << x), "not an array"),
    "optimise_data_layout": (lambda: fun([Array(Float, 8)], lambda x: rw.optimise_data_layout(
        map(lift.id), label="P") << x), "f << g"),
    "interchange_maps": (lambda: fun([Array(Float, 8)], lambda x: rw.interchange_maps(map(lift.id), label="P")
                                     << x), "map(a =>"),
    "interchange_reduce_nd": (lambda: fun([Array(Float, 8)], lambda x: rw.interchange_reduce_nd(
        reduce(lift.add, 0.0), label="P") << x), "zip(acc, x)"),
    "privatise_accumulator": (lambda: fun([Array(Float, 8)], lambda x: rw.privatise_accumulator(
        map(lift.id), label="P") << x), "reduce"),
    "pad_extra_nd": (lambda: fun([Array(Float, 8)], lambda x: rw.pad_extra_nd(
        lambda v: lift.reduce(lift.add, 0.0) << v, label="P") << x), "reduce"),
    "register_block": (lambda: fun([Array(Float, 8)], lambda x: rw.register_block(map(lift.id), label="P") << x),
                       "map(rb"),
}


@pytest.mark.parametrize("kind", POINTS)
def test_a_misplaced_point_warns_with_label_line_and_reason(kind: str) -> None:
    make, word = MISPLACED[kind]
    prog = make()
    line = next(x for _, x in lift.ir.paths.walk(prog) if rw.is_point(x)).loc.line
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        rw.apply_all(prog)
    w = [g.message for g in got if isinstance(g.message, RewritePointSkipped)]
    assert len(w) == 1 and w[0].label == "P" and w[0].line == line, [str(x) for x in w]
    assert word in w[0].reason and "P" in str(w[0]) and f":{line}" in str(w[0])
