"""`lift.compile` of a program with symbolic sizes specialises to the sizes of its calls (lift/specialise.py):
each shape gets the default register blocks where they apply (or the tuned winner for that shape), every
result matches the interpreter, and the generic program runs whatever is refused or fails."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lift
from lift import Array, Float, Size, fun, map, reduce, runtime, transpose, zip
from lift.decide import Tuned
from lift.errors import DeviceError, LiftTypeError
from lift.explore.points import is_default
from lift.specialise import Specialiser
from lift.testing import assert_same

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import conv  # noqa: E402

M, N, K = Size("M"), Size("N"), Size("K")


def matmul():
    """C = A B with B [K][N] read through `transpose`, all sizes symbolic."""
    return fun([Array(Array(Float, K), M), Array(Array(Float, N), K)], lambda a, b: map(
        lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c)) << (transpose << b)) << a)


def args(m: int, n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)


def blocked(prog: lift.Program) -> bool:
    """Whether `prog` runs the default register blocks (a private accumulator array, no skipped block point)."""
    points = prog.choices.points if prog.choices is not None else {}
    return any(lab.startswith("auto_b") and not c.get("skip") for lab, c in points.items()) and " acc[" in prog.source


@pytest.mark.device
def test_two_shapes_specialise_to_blocks_and_match_the_interpreter() -> None:
    expr = matmul()
    prog = lift.compile(expr)
    assert prog.specialises and not blocked(prog)  # the generic program: no blocks (they need size conditions)
    generic_source = prog.source
    for shape in ((16, 32, 256), (24, 16, 512)):
        a, b = args(*shape)
        assert_same(lift.interpret(expr, a, b), prog(a, b))
        special = prog.specialised(a, b)
        assert special is not prog and blocked(special), special.source
        assert special is prog.specialised(a, b)  # compiled once per shape
    assert prog.source == generic_source
    recs = prog.specialisations
    assert [r.sizes for r in recs] == [{"K": 256, "M": 16, "N": 32}, {"K": 512, "M": 24, "N": 16}]
    assert all(r.program is not None and "default points auto_b0" in r.reason and r.seconds > 0 for r in recs)
    a, b = args(16, 32, 256, seed=1)  # the first shape again: its specialised program, new values
    assert_same(lift.interpret(expr, a, b), prog(a, b))
    assert len(prog.specialisations) == 2


@pytest.mark.device
def test_shapes_the_blocks_do_not_divide_or_do_not_need_still_run() -> None:
    expr = matmul()
    prog = lift.compile(expr)
    a, b = args(7, 9, 257)  # prime sizes: no block of 8 rows or 16 columns divides them
    assert_same(lift.interpret(expr, a, b), prog(a, b))
    a, b = args(8, 8, 8)  # too short a reduction for the default points: the generic program, nothing compiled
    assert_same(lift.interpret(expr, a, b), prog(a, b))
    assert prog.specialised(a, b) is prog
    rec = prog.specialisations[-1]
    assert rec.program is None and "nothing to specialise" in rec.reason


_ONE: dict[str, lift.Program] = {}  # one specialising program across the examples (its shapes accumulate)


@pytest.mark.device
@settings(max_examples=6, deadline=None)
@given(m=st.integers(1, 24), n=st.integers(1, 40), k=st.sampled_from([256, 260, 300, 512]))
def test_any_shape_matches_the_interpreter(m: int, n: int, k: int) -> None:
    expr = matmul()
    prog = _ONE.setdefault("matmul", lift.compile(expr))
    a, b = args(m, n, k, seed=m * n + k)
    assert_same(lift.interpret(expr, a, b), prog(a, b))
    rec = prog.specialisations[-1]
    assert rec.sizes == {"K": k, "M": m, "N": n} and (rec.program is None) == (prog.specialised(a, b) is prog)


@pytest.mark.device
def test_the_conv_layer_specialises_at_two_sizes() -> None:
    expr = conv.listing_4_1()
    prog = lift.compile(expr)
    for size, cout in ((8, 16), (4, 8)):
        inp, wts = conv.inputs(size, 32, cout)  # 3x3x32 = 288 products per output: the default blocks apply
        assert_same(lift.interpret(expr, inp, wts), prog(inp, wts))
        assert blocked(prog.specialised(inp, wts))


@pytest.mark.device
def test_the_specialised_choices_rebuild_it() -> None:
    expr = matmul()
    a, b = args(16, 32, 256)
    special = lift.compile(expr).specialised(a, b)
    assert special.choices.sizes == {"K": 256, "M": 16, "N": 32}
    by_sizes = lift.compile(expr).specialised(sizes={"K": 256, "M": 16, "N": 32})  # no arrays needed
    assert by_sizes.source == special.source
    with pytest.raises(LiftTypeError, match="no value for N"):
        lift.compile(expr).specialised(sizes={"K": 256, "M": 16})
    again = lift.compile(expr, choices=special.choices)
    assert again.source == special.source and not again.specialises
    assert_same(lift.interpret(expr, a, b), again(a, b))


@pytest.mark.device
def test_the_tuned_winner_for_the_shape_is_used(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LIFTCL_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    expr = matmul()
    a, b = args(16, 32, 256)
    res = lift.tune(expr, a, b, budget=120, trials=4, progress=False)
    prog = lift.compile(expr)
    assert not getattr(prog.choices, "origin", "")  # the generic program is never a tuned one
    assert_same(lift.interpret(expr, a, b), prog(a, b))
    special = prog.specialised(a, b)
    assert special.source == res.best.source  # the tuned winner, as the tune ran it
    if is_default(res.best_record.candidate):  # compile's own default won: what a plain call runs at these sizes
        assert "default points" in prog.specialisations[-1].reason or special is prog
    else:
        assert "tuning database" in special.choices.origin
        assert "tuned for these sizes" in prog.specialisations[-1].reason
        assert special.choices == res.choices
    c, d = args(24, 16, 512)  # a tune without automatic points: its winner is never compile's default
    res2 = lift.tune(expr, c, d, budget=120, trials=3, progress=False, auto=False)
    assert_same(lift.interpret(expr, c, d), prog(c, d))
    special = prog.specialised(c, d)
    assert "tuning database" in special.choices.origin and "tuned for these sizes" in prog.specialisations[-1].reason
    assert special.source == res2.best.source
    e, f = args(16, 16, 256)  # another shape, not tuned: the nearest valid winner (issue 42), else the default blocks
    assert_same(lift.interpret(expr, e, f), prog(e, f))
    special = prog.specialised(e, f)
    if "nearest valid winner" in getattr(special.choices, "origin", ""):
        assert "tuned at other sizes" in prog.specialisations[-1].reason
    else:
        assert blocked(special) and not getattr(special.choices, "origin", "")


@pytest.mark.device
def test_only_the_program_of_the_last_call_holds_device_buffers(monkeypatch) -> None:
    runtime.open_device()  # every program below copies its arguments and results (as on a GPU): buffers held
    monkeypatch.setattr(runtime, "_CONTEXTS", {k: dataclasses.replace(dc, zero_copy=False)
                                              for k, dc in runtime._CONTEXTS.items()})
    expr = matmul()
    prog = lift.compile(expr)
    shapes = [args(16, 32, 256), args(24, 16, 512), args(8, 8, 8)]  # two specialised, then the generic program
    runs = []
    for a, b in shapes:
        assert_same(lift.interpret(expr, a, b), prog(a, b))
        runs.append(prog.specialised(a, b))
        holding = {id(p) for p in (prog, *runs) if p.device_buffers}
        assert holding == {id(runs[-1])}
    assert runs[-1] is prog


@pytest.mark.device
def test_specialised_binaries_use_the_programs_disk_cache(tmp_path) -> None:
    expr = matmul()
    a, b = args(16, 32, 256)
    first = lift.compile(expr, cache_dir=tmp_path).specialised(a, b)
    assert first.build_info.status == "miss" and first.build_info.path.parent.parent == tmp_path
    again = lift.compile(expr, cache_dir=tmp_path).specialised(a, b)
    assert again.build_info.status == "hit" and again.build_info.key == first.build_info.key
    assert_same(lift.interpret(expr, a, b), again(a, b))
    assert lift.compile(expr, cache_dir=False).specialised(a, b).build_info.status == "uncached"


@pytest.mark.device
def test_a_tuned_default_winner_is_compiles_own_specialisation(monkeypatch) -> None:
    """A database winner that is compile's default (a generic, specialising program) does not recurse:
    the call gets what compile's default gives at these sizes, the default blocks."""
    expr = matmul()

    def lookup(e, device=None, sizes=None):  # a default winner for every call's sizes
        return Tuned(lift.Choices(), e, True, "test", lambda err: None) if sizes else None

    monkeypatch.setattr(lift.decide, "_TUNED", [lookup])
    monkeypatch.setenv("LIFTCL_USE_TUNED", "1")
    prog = lift.compile(expr)
    a, b = args(16, 32, 256)
    assert_same(lift.interpret(expr, a, b), prog(a, b))
    assert blocked(prog.specialised(a, b)) and "default points auto_b0" in prog.specialisations[-1].reason


@pytest.mark.device
def test_a_specialised_program_that_fails_leaves_the_call_to_the_generic_one(monkeypatch) -> None:
    expr = matmul()
    prog = lift.compile(expr)
    a, b = args(16, 32, 256)
    special = prog.specialised(a, b)
    assert special is not prog

    def broken(*args, **kwargs):  # the specialised program's run raises (as a device failure would)
        raise DeviceError("simulated failure of a specialised kernel")

    monkeypatch.setattr(special, "_run", broken)
    assert_same(lift.interpret(expr, a, b), prog(a, b))
    rec = prog.specialisations[-1]
    assert rec.program is None and "failed to run" in rec.reason and "simulated" in rec.reason
    assert prog.specialised(a, b) is prog


@pytest.mark.device
@pytest.mark.parametrize("blocks, why", [(lambda *a: iter(()), "do not compile for these sizes"),
                                         (lambda *a: 1 // 0, "specialisation failed (ZeroDivisionError")])
def test_refused_or_failing_specialisations_leave_the_call_to_the_generic_program(monkeypatch, blocks, why) -> None:
    expr = matmul()
    prog = lift.compile(expr)
    monkeypatch.setattr(sys.modules["lift.specialise"], "default_block_decisions", blocks)  # refuse, or raise
    a, b = args(16, 32, 256)
    assert_same(lift.interpret(expr, a, b), prog(a, b))
    rec = prog.specialisations[-1]
    assert rec.program is None and why in rec.reason and prog.specialised(a, b) is prog


@pytest.mark.device
def test_argument_errors_are_the_generic_programs_and_decide_nothing() -> None:
    prog = lift.compile(matmul())
    a, _ = args(16, 32, 256)
    with pytest.raises(LiftTypeError):
        prog(a, np.ones((300, 32), np.float32))  # K disagrees: the error of before
    assert prog.specialisations == ()


def test_off_and_explicit_compilations_do_not_specialise() -> None:
    expr = matmul()
    assert not lift.compile(expr, specialise=False).specialises
    assert not lift.compile(expr, choices={}).specialises
    assert not lift.compile(fun([Array(Float, 64)], lambda x: map(lift.id) << x)).specialises  # constant sizes
    with pytest.raises(LiftTypeError):
        lift.compile(expr, specialise="yes")


def test_an_offline_program_specialises_for_inspection() -> None:
    prog = lift.compile(matmul(), device=lift.devices.profile("mali-g72"))  # a profile, not attached here
    special = prog.specialised(sizes={"K": 256, "M": 16, "N": 32})
    assert not special.attached and special is not prog and blocked(special)


def test_decisions_are_kept_for_the_most_recent_shapes() -> None:
    spec = Specialiser(matmul(), limit=2)
    for k in (2, 3, 4, 3):  # short reductions: decided without compiling
        assert spec.get({"M": 4, "N": 4, "K": k}).program is None
    assert [r.sizes["K"] for r in spec.records] == [4, 3]


def stencil():
    """out[i] = x[i-1] + x[i] + x[i+1], zero outside, over a symbolic length."""
    return fun([Array(Float, N)], lambda x: map(lambda w: reduce(lift.add, 0.0) << w)
               << lift.slide(3, 1) << lift.pad(1, 1, 0.0) << x)


@pytest.mark.device
@pytest.mark.requires_cpu_device  # a GPU's default is the map as written (test below)
def test_a_stencil_compiles_to_cache_line_vectors_by_default() -> None:
    """A map computing the result gets the default `vectorise` point on a CPU: 16 floats (a
    cache line) per work-item where they divide the length; the choices rebuild it."""
    x = np.random.default_rng(3).random(4096, dtype=np.float32)
    prog = lift.compile(stencil())
    assert_same(lift.interpret(stencil(), x), prog(x))
    special = prog.specialised(x)
    assert "float16" in special.source and special.choices.points["auto_v0"] == {"skip": False, "width": 16}
    again = lift.compile(stencil(), choices=special.choices)
    assert again.source == special.source
    odd = np.random.default_rng(4).random(4100, dtype=np.float32)  # 4 divides it, 16 does not
    assert_same(lift.interpret(stencil(), odd), prog(odd))
    assert prog.specialised(odd).choices.points["auto_v0"]["width"] == 4


def test_default_map_points_are_skipped_on_a_gpu() -> None:
    """On a GPU consecutive work-items already read consecutive elements: no default width,
    the program as written (compiled offline for a profile)."""
    fixed = lift.constraints.substitute_sizes(stencil(), {"N": 4096})
    prog = lift.compile(fixed, device=lift.devices.profile("nvidia"))
    assert "auto_v" not in str(prog.choices) and "float16" not in prog.source
    cpu = lift.compile(fixed, device=lift.devices.profile("pocl-cpu"))
    assert cpu.choices.points["auto_v0"]["width"] == 16


def test_default_map_width_fits_a_cache_line_of_its_scalars() -> None:
    """16 floats or ints, but 8 doubles: 64 bytes per work-item."""
    for t, width in ((Float, 16), (lift.Int, 16), (lift.Double, 8)):
        add = fun([Array(t, 4096), Array(t, 4096)], lambda x, y: map(lift.add) << zip(x, y))
        prog = lift.compile(add, device=lift.devices.profile("pocl-cpu"))
        assert prog.choices.points["auto_v0"]["width"] == width, t


def gemv():
    """y = A v: a reduction inside a map over the rows, all sizes symbolic."""
    return fun([Array(Array(Float, N), M), Array(Float, N)],
               lambda a, v: map(lambda r: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, v)) << a)


@pytest.mark.device
def test_row_reductions_are_chunked_by_default() -> None:
    """A reduction inside a map gets the default `reduce_chunks` point at constant sizes (vector
    lanes along the row); rows the widths do not divide keep a valid program."""
    prog = lift.compile(gemv())
    for m, n in ((64, 1024), (3, 1000)):
        rng = np.random.default_rng(m)
        a, v = rng.random((m, n), dtype=np.float32), rng.random(n, dtype=np.float32)
        assert_same(lift.interpret(gemv(), a, v, precise=True), prog(a, v))
    rng = np.random.default_rng(64)
    special = prog.specialised(rng.random((64, 1024), dtype=np.float32), rng.random(1024, dtype=np.float32))
    assert not special.choices.points["auto_r0"]["skip"]


@pytest.mark.device
@pytest.mark.parametrize("spelling", ["dot", "sum of user squares"])
def test_a_full_reduction_specialises_when_its_length_is_known(spelling: str) -> None:
    """A top-level reduction over `Size("N")`: at a length its chunks cover, the specialised
    program has no tail step and (on a CPU) combines its partials in order in the chunks' kernel,
    one launch where the generic program's atomic combine takes two; at a length they do not
    cover, the generic program runs (the default is the same). Every result is the interpreter's."""
    from lift.rewrites.defaults import DEFAULT_CHUNK
    if spelling == "dot":
        expr = fun([Array(Float, N), Array(Float, N)],
                   lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y))
    else:
        sq = lift.user_fun(lambda v: v * v, [Float], Float, name="sq")
        expr = fun([Array(Float, N), Array(Float, N)], lambda x, y: reduce(lift.add, 0.0) << map(sq) << x)
    prog = lift.compile(expr)
    rng = np.random.default_rng(5)
    n = 16 * DEFAULT_CHUNK
    x, y = rng.random(n, dtype=np.float32) - 0.5, rng.random(n, dtype=np.float32) - 0.5
    assert_same(lift.interpret(expr, x, y), prog(x, y))
    special = prog.specialised(x, y)
    assert special is not prog and "length known" in prog.specialisations[-1].reason
    (chunks,) = [c for c in special.choices.points.values() if not c.get("skip")]
    assert chunks["tail"] is False
    generic = dict(prog.choices.points)
    if prog.device is not None and prog.device.kind == "cpu":
        assert chunks["combine"] == "kernel" and len(special.ndrange) == 1
        assert any(c.get("combine") == "atomic" for c in generic.values()) and len(prog.ndrange) == 2
    x, y = x[:n - 3].copy(), y[:n - 3].copy()  # a length the chunks do not cover
    assert_same(lift.interpret(expr, x, y), prog(x, y))
    assert prog.specialised(x, y) is prog and "nothing to specialise" in prog.specialisations[-1].reason
