"""`lift.decide`: compile's policy as alternatives apart from the pipeline (`lift.compile.plan`), issue 24."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, reduce, transpose, user_fun, zip
from lift.choices import Choices
from lift.compile import built, first_built, plan
from lift.decide import Decision, Tuned, decide, register_tuned, tuned_lookup
from lift.devices import profile
from lift.rules.normalise import normalise
from lift.spaces import profile_of
from lift.testing import assert_same

N = Size("N")


def dot_program():
    return fun([Array(Float, N), Array(Float, N)],
               lambda x, y: reduce(lift.add, 0.0) << map(lambda p: p[0] * p[1]) << zip(x, y))


def matmul(n: int = 256):  # 256: large enough for the default register blocks
    return fun([Array(Array(Float, n), n), Array(Array(Float, n), n)],
               lambda a, b: map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lambda p: p[0] * p[1])
                                              << zip(r, c)) << transpose << b) << a)


def scale():
    return fun([Array(Float, N)], lambda x: map(lambda v: v * 2.0) << x)


def alternatives(expr, device=None, **kw):
    kw.setdefault("plain", True)
    return list(decide(normalise(expr), device, None, **kw))


def test_a_map_is_compiled_as_written_and_specialises():
    (only,) = alternatives(scale())
    assert not only.fallible and only.specialise and only.origin == ""


def test_a_full_reduction_gets_its_default_chunks_and_no_other_alternative():
    (only,) = alternatives(dot_program())
    assert any(lab.startswith("auto_r") and not c.get("skip") for lab, c in only.choices.points.items())
    assert only.program is not only.node  # the automatic point placed; the calls checked against the program


def test_constant_nests_try_the_grid_launch_then_the_first_blocks_then_the_program_as_written():
    grid, first, written = alternatives(matmul())
    assert grid.fallible and first.fallible and not written.fallible
    assert grid.choices.launch and not first.choices.launch
    assert grid.choices.points == first.choices.points and grid.spaces is first.spaces  # one kept space


def test_compile_builds_the_first_alternative_that_plans():
    expr = matmul()
    grid = alternatives(expr)[0]
    planned = plan(grid.program, None, grid.choices, spaces=grid.spaces)
    prog = lift.compile(expr, tuned=False)
    assert prog.source == planned.source.source and prog.choices == planned.choices


def test_a_gpu_profile_tries_its_tiles_first():
    alts = alternatives(matmul(), lift.devices.profile("nvidia"))
    assert alts[0].fallible and any(lab.startswith("auto_g") for lab in alts[0].choices.points)


def test_explicit_choices_decide_only_the_program_as_written():
    (only,) = list(decide(normalise(matmul()), None, {"auto_b0": {"skip": True}}, plain=False))
    assert not only.fallible and not only.specialise


def test_a_failing_fallible_alternative_gives_way_to_the_next():
    expr = normalise(scale())
    bad = Decision(expr, Choices(mapping={"nope": 30}), node=expr, fallible=True)
    good = Decision(expr, Choices(), node=expr)
    prog = first_built([bad, good], None)
    x = np.arange(16, dtype=np.float32)
    assert prog is not None and prog.choices == plan(expr, None, Choices()).choices
    assert_same(lift.interpret(scale(), x), prog(x))
    with pytest.raises(lift.LiftError, match="nope"):
        first_built([Decision(expr, Choices(mapping={"nope": 30}), node=expr)], None)


def test_the_tuning_database_is_one_hook(monkeypatch):
    asked = []

    def lookup(expr, device=None, sizes=None):
        asked.append(sizes)
        return None

    monkeypatch.setattr(lift.decide, "_TUNED", [])
    assert tuned_lookup() is None
    register_tuned(lookup)
    monkeypatch.setenv("LIFTCL_USE_TUNED", "1")
    assert tuned_lookup() is lookup and tuned_lookup(False) is None
    monkeypatch.setenv("LIFTCL_USE_TUNED", "0")
    assert tuned_lookup() is None
    monkeypatch.setenv("LIFTCL_USE_TUNED", "1")
    lift.compile(matmul(16), cache_dir=False)
    assert asked == [None]
    lift.compile(matmul(16), cache_dir=False, tuned=False)
    assert asked == [None]


def test_a_tuned_winner_is_planned_first_and_a_stale_one_is_reported(monkeypatch):
    expr = matmul()
    default = lift.compile(expr, tuned=False, cache_dir=False)
    stale: list[BaseException] = []
    winner = Tuned(Choices(points={"auto_b0": {"skip": True}}), normalise(expr), False, "test db", stale.append)
    monkeypatch.setattr(lift.decide, "_TUNED", [lambda e, device=None, sizes=None: winner])
    monkeypatch.setenv("LIFTCL_USE_TUNED", "1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", lift.RewritePointSkipped)
        prog = lift.compile(expr, cache_dir=False)
    assert prog.choices.origin == "test db" and prog.choices.points["auto_b0"]["skip"] is True
    assert prog.source != default.source and not stale
    broken = Tuned(Choices(mapping={"nope": 30}), normalise(expr), False, "test db", stale.append)
    monkeypatch.setattr(lift.decide, "_TUNED", [lambda e, device=None, sizes=None: broken])
    again = lift.compile(expr, cache_dir=False)
    assert len(stale) == 1 and "nope" in str(stale[0])
    assert again.source == default.source and not hasattr(again.choices, "origin")


def test_a_default_tuned_winner_is_compiles_own_default_with_its_origin(monkeypatch):
    expr = matmul(16)
    default = lift.compile(expr, tuned=False, cache_dir=False)
    winner = Tuned(Choices(), normalise(expr), True, "test db", lambda err: None)
    monkeypatch.setattr(lift.decide, "_TUNED", [lambda e, device=None, sizes=None: winner])
    monkeypatch.setenv("LIFTCL_USE_TUNED", "1")
    prog = lift.compile(expr, cache_dir=False)
    assert prog.source == default.source and prog.choices == default.choices and prog.choices.origin == "test db"


def test_a_program_is_not_changed_after_it_is_built():
    prog = lift.compile(scale(), cache_dir=False)
    with pytest.raises(AttributeError):
        prog.choices = Choices()  # type: ignore[misc]
    x = np.arange(64, dtype=np.float32)
    special = prog.specialised(x)
    assert special.choices is not None


def test_built_records_the_sizes_of_a_specialisation():
    expr = normalise(scale())
    planned = plan(expr, None, Choices())
    prog = built(planned, None, node=expr, sizes={"N": 64}, cache_dir=False)
    assert prog.choices.sizes == {"N": 64} and planned.choices.sizes is None


def _root(a):
    return math.sqrt(a)


def test_a_map_calling_builtins_gets_8_lanes_where_pocl_targets_a_cpu_without_avx512() -> None:
    """PoCL 3.0's LLVM aborts the process on `sqrt(float16)` when it compiles for znver3 (AVX2): the
    default `vectorise` width of a map whose function calls a builtin is 8 there, 16 elsewhere."""
    from dataclasses import replace

    from lift.decide import default_blocks

    root = lift.user_fun(_root, [Float], Float, name="root")
    prog = fun([Array(Float, 4096)], lambda x: map(root) << x)
    plain = fun([Array(Float, 4096)], lambda x: map(lambda v: v * 2.0 + 1.0) << x)
    base = lift.devices.profile("pocl-cpu")
    znver3 = replace(base, version="OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3")
    avx512 = replace(base, version="OpenCL 3.0 PoCL HSTR: pthread-x86_64-pc-linux-gnu-skylake-avx512")

    def width(p, dev):
        d = next(default_blocks(p, dev))
        return next(iter(d.choices.points.values()))["width"]

    assert width(prog, znver3) == 8 and width(prog, avx512) == 16 and width(prog, base) == 16
    assert width(plain, znver3) == 16  # plain arithmetic at 16 lanes builds there


# ------------------------------------------------------------------ a nested reduction's chunks: the device's vectors


@user_fun
def _times(a: Float, b: Float) -> Float:
    return a * b


def _row_dots(spelling: str, rows: int = 256, n: int = 2048):
    """Matrix-vector products as a user may write them: LIFT's dot (`mult` over a zip), a user
    function of the pair, and GESUMMV's two products of each row pair in one map."""
    sq, vec = Array(Array(Float, n), rows), Array(Float, n)
    if spelling == "dot":
        return fun([sq, vec], lambda a, x: map(lambda r: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, x)) << a)
    if spelling == "user function":
        return fun([sq, vec], lambda a, x: map(
            lambda r: reduce(lift.add, 0.0) << map(lambda p: _times(p[0], p[1])) << zip(r, x)) << a)
    return fun([sq, sq, vec], lambda a, b, x: map(lambda rs: lift.add(
        reduce(lift.add, 0.0) << map(lift.mult) << zip(rs[0], x),
        reduce(lift.add, 0.0) << map(lift.mult) << zip(rs[1], x))) << zip(a, b))


@pytest.mark.parametrize("spelling", ["dot", "user function", "two products"])
@pytest.mark.parametrize("device, lanes", [("cpu-avx512", 16), ("cpu-avx2", 8)])
def test_a_nested_reductions_chunks_fill_the_devices_vectors(spelling: str, device: str, lanes: int) -> None:
    """The default chunks of each row's reduction (`reduce_chunks` points placed by default) are
    vectors as wide as the device's (`Registers.of(device).lanes`, as the register blocks), compiled
    offline per profile."""
    prog = lift.compile(_row_dots(spelling), device=profile(device))
    widths = [c["width"] for lab, c in prog.choices.points.items() if lab.startswith("auto_r") and not c.get("skip")]
    assert widths and set(widths) == {lanes}, prog.choices
    assert f"float{lanes} acc" in prog.source


@pytest.mark.device
@pytest.mark.parametrize("spelling", ["dot", "user function", "two products"])
def test_a_nested_reductions_default_chunks_run_on_the_device(spelling: str) -> None:
    """On the device at hand: its vector width (16 on AVX-512 targets, 8 on AVX2) and the
    interpreter's result."""
    expr = _row_dots(spelling, rows=64)
    prog = lift.compile(expr)
    lanes = profile_of(prog.device).vector_bits // 32
    widths = {c["width"] for lab, c in prog.choices.points.items() if lab.startswith("auto_r") and not c.get("skip")}
    if profile_of(prog.device).kind == "cpu" and lanes in (4, 8, 16):
        assert widths == {lanes}, prog.choices
    rng = np.random.default_rng(3)
    args = [rng.random((64, 2048), dtype=np.float32) - 0.5 for _ in range(2 if spelling == "two products" else 1)]
    args.append(rng.random(2048, dtype=np.float32) - 0.5)
    assert_same(prog(*args), lift.interpret(expr, *args), rtol=1e-4, atol=1e-4)
