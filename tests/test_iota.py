"""`iota(n)`: the indices 0..n-1 as a generated array (a view with no input buffer): typing, both
interpreters, and compiled programs equal to the interpreter and numpy, read in zips, maps,
reductions, layouts and gathers, fused into its readers (no buffer of its own)."""

from __future__ import annotations

import builtins
import re

import numpy as np
import pytest

import lift
from lift import (
    Array,
    Float,
    Int,
    Size,
    Tuple,
    fun,
    gather,
    interpret,
    iota,
    map,
    pad,
    reduce,
    select,
    slide,
    split,
    user_fun,
    zip,
)
from lift.errors import LiftTypeError
from lift.interpret import Stats
from lift.ir.nodes import Iota
from lift.ir.paths import walk

N, M = Size("N"), Size("M")
RNG = np.random.default_rng(41)
INF = float("inf")


def smaller(a, b):
    return select(b[1] < a[1], b, a)


def to_float(i):
    return i * 1.0


nearest = user_fun(smaller, [Tuple(Int, Float), Tuple(Int, Float)], Tuple(Int, Float), name="nearest")
as_float = user_fun(to_float, [Int], Float, name="int_to_float")


def argmin(length=N):
    """The index and value of the smallest element: a fold over the elements zipped with their indices."""
    return fun([Array(Float, length)], lambda x: reduce(nearest, (-1, INF)) << zip(iota(length), x))


def test_iota_is_an_int_array_of_its_length() -> None:
    e = iota(N)
    assert e.type == Array(Int, N) and isinstance(e.f, Iota) and e.args == ()
    assert str(fun([Array(Float, N)], lambda x: zip(x, iota(N)))) == "(x) => zip(x, iota(N))"
    with pytest.raises(LiftTypeError, match="iota length"):
        _ = iota(0).type


def test_both_interpreters_give_the_indices() -> None:
    x = RNG.random(50, dtype=np.float32)
    np.testing.assert_array_equal(interpret(fun([Array(Float, N)], lambda x: map(as_float) << iota(N)), x),
                                  np.arange(50, dtype=np.float32))
    idx, val = interpret(argmin(), x)
    assert idx == int(np.argmin(x)) and val == x.min()
    rows = fun([Array(Array(Float, M), N)], lambda a: map(lambda r: reduce(nearest, (-1, INF)) << zip(iota(M), r)) << a)
    mat = RNG.random((7, 9), dtype=np.float32)
    stats = Stats()
    got = interpret(rows, mat, stats=stats)
    np.testing.assert_array_equal(got[0], mat.argmin(axis=1))
    np.testing.assert_array_equal(got[1], mat.min(axis=1))


def _cases():
    x = RNG.random(5000, dtype=np.float32)
    mat = RNG.random((37, 23), dtype=np.float32)
    return {
        "argmin": (argmin(), (x,), (np.argmin(x), x.min())),
        "argmin, constant length": (argmin(5000), (x,), (np.argmin(x), x.min())),
        "sum of the indices": (fun([Array(Float, N)], lambda x: reduce(lift.add, 0) << iota(N)), (x,),
                               5000 * 4999 // 2),
        "weighted": (fun([Array(Float, 5000)], lambda x: map(lambda t: t[0] * t[1]) << zip(x, iota(5000))), (x,),
                     x * np.arange(5000, dtype=np.float32)),
        "gathered": (fun([Array(Float, N)], lambda x: gather(x, iota(N))), (x,), x),
        "split rows": (fun([Array(Float, 5000)], lambda x: map(lambda r: reduce(lift.add, 0) << r) << split(100)
                           << iota(5000)), (x,), np.arange(5000).reshape(50, 100).sum(axis=1)),
        "wrapped": (fun([Array(Float, N)], lambda x: map(as_float) << pad(2, 3, mode="wrap") << iota(N)), (x,),
                    np.pad(np.arange(5000.0), (2, 3), mode="wrap")),
        "windows": (fun([Array(Float, N)], lambda x: map(lambda w: reduce(lift.add, 0) << w) << slide(3, 1)
                        << iota(N)), (x,), 3 * np.arange(1, 4999)),
        "rows' argmin": (fun([Array(Array(Float, M), N)], lambda a: map(
            lambda r: reduce(nearest, (-1, INF)) << zip(iota(M), r)) << a), (mat,),
            (mat.argmin(axis=1), mat.min(axis=1))),
        "both indices": (fun([Array(Array(Float, M), N)], lambda a: map(
            lambda t: map(lambda u: u[0] * as_float(u[1]) + as_float(t[1])) << zip(t[0], iota(M))) << zip(a, iota(N))),
            (mat,), mat * np.arange(23) + np.arange(37)[:, None]),
    }


@pytest.mark.device
@pytest.mark.parametrize("name", list(_cases()))
def test_compiled_programs_reading_iota_equal_the_interpreter_and_numpy(name: str) -> None:
    prog, args, want = _cases()[name]
    compiled = lift.compile(prog)
    got, ref = compiled(*args), interpret(prog, *args)
    pairs = builtins.zip(got, ref, want) if isinstance(ref, tuple) else [(got, ref, want)]
    for g, r, w in pairs:
        np.testing.assert_allclose(g, r, rtol=1e-5)
        np.testing.assert_allclose(r, w, rtol=1e-5)
    inputs = [b.name for b in compiled.plan.buffers if b.role == "input"]
    assert len(inputs) == len(prog.params)  # generated where read: no input buffer of its own


@pytest.mark.device
def test_a_map_over_iota_and_an_input_needs_no_temporary() -> None:
    prog = _cases()["weighted"][0]
    compiled = lift.compile(prog)
    assert [b.role for b in compiled.plan.buffers] == ["input", "output"]  # fused into the map that reads it
    assert any(isinstance(f, Iota) for _, f in walk(prog))


@pytest.mark.parametrize("name", ["as_float", "distance", "fast_length", "step"])
def test_a_user_function_may_not_take_the_name_of_an_opencl_builtin(name: str) -> None:
    with pytest.raises(lift.UserFunError, match="not a usable C function name"):
        user_fun(to_float, [Int], Float, name=name)  # a builtin or macro of OpenCL C: the kernel would not build


@pytest.mark.device
def test_vectorised_lanes_of_ints_are_converted_not_cast() -> None:
    """`mult(float8, int8)`: OpenCL converts vectors with convert_float8; a cast does not build."""
    prog = fun([Array(Float, 1024), Array(Int, 1024)], lambda x, k: map(lambda t: t[0] * t[1]) << zip(x, k))
    x, k = RNG.random(1024, dtype=np.float32), np.arange(1024, dtype=np.int32)
    placed = lift.rewrites.auto_points(prog, {})
    compiled = lift.compile(placed, choices=lift.Choices(points={"auto_v0": {"skip": False, "width": 8}}, sizes={}))
    assert "convert_float8(" in compiled.source
    np.testing.assert_allclose(compiled(x, k), x * k, rtol=1e-6)


@pytest.mark.device
@pytest.mark.parametrize("name", ["sum of the indices", "weighted"])
def test_vectorised_indices_are_one_broadcast_plus_a_constant_vector(name: str) -> None:
    """iota read `as_vector(w)`: lane k is i + k, emitted as `(intw)(i) + (intw)(0, 1, ..)`, not
    as w index expressions packed into a vector (arg-min over 2^20 floats: 120 -> 89 us)."""
    prog, args, want = _cases()[name]
    compiled = lift.compile(prog)
    np.testing.assert_allclose(compiled(*args), interpret(prog, *args), rtol=1e-5)
    steps = re.findall(r"\(int(\d+)\)\(0, 1, 2, ", compiled.source)
    assert steps, compiled.source
    w = int(steps[0])
    assert f"(int{w})(0, {', '.join(str(k) for k in range(1, w))})" in compiled.source
    assert not re.search(r"\(int\d+\)\([^()]*gl[^()]*, [^()]*gl", compiled.source)  # no packed lanes


def test_fixing_the_sizes_fixes_iotas_length() -> None:
    """`substitute_sizes` (what specialising and tuning at a call's sizes start from) replaces the
    length of an `iota` as it does a split's or a pad's: the program with N fixed type-checks to
    the same array lengths everywhere."""
    from lift.arith import Cst
    from lift.realise import substitute_sizes
    from lift.typecheck import typecheck
    n = lift.Size("N")
    prog = fun([Array(Float, n)], lambda x: lift.get(0) << (reduce(nearest, (-1, 3.0e38)) << zip(iota(n), x)))
    fixed = substitute_sizes(prog, {"N": 1024})
    assert [x.n for _, x in walk(fixed) if isinstance(x, Iota)] == [Cst(1024)]
    typecheck(fixed)


@pytest.mark.device
def test_an_arg_min_over_a_symbolic_length_specialises_to_parallel_chunks() -> None:
    """With `Size("N")` the arg-min's chunks cannot be known to divide the array, so the generic
    program folds in one work-item; a call at a length they divide runs the chunked program
    (`lift.specialise`), at a length they do not the generic one; both equal numpy's argmin."""
    n = lift.Size("N")
    prog = fun([Array(Float, n)], lambda x: lift.get(0) << (reduce(nearest, (-1, 3.0e38)) << zip(iota(n), x)))
    k = lift.compile(prog)
    rng = np.random.default_rng(11)
    for length, parallel in ((1 << 16, True), ((1 << 16) - 5, False), (4096, False)):  # 4096: one chunk
        x = rng.random(length, dtype=np.float32)
        assert int(k(x)) == int(np.argmin(x))
        runs = k.specialised(x)
        wide = any(builtins.max(int(g) for g in r.global_size) > 1 for r in runs.ndrange)
        assert wide == parallel, (length, runs.ndrange, k.specialisations[-1])
