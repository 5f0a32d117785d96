"""The rewrite-point families of thesis 6.2.5: each rewrite preserves the meaning (the
interpreter is the oracle) and the type, and compiles through the constraint pipeline."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, reduce, zip
from lift import rewrites as rw
from lift.interpret import bind_sizes
from lift.ir.paths import walk
from lift.rewrites.apply import equal_types
from tests.programs import mult, rand

N, M = Size("N"), Size("M")
X, Y, A, B = rand(64), rand(64, seed=1), rand(8, 64), rand(16, seed=2)


def _madd(acc, p):
    return acc + p[0] * p[1]


CASES = {
    "split_join": (lambda: fun([Array(Float, N)], lambda x: rw.split_join(map(lift.id), label="P") << x),
                   {"P": {"size": 8}}, (X,), "join << map(map(id)) << split(8)"),
    "split_reduce": (lambda: fun([Array(Float, N), Array(Float, N)], lambda x, y: rw.split_reduce(
        lambda p: reduce(lift.add, 0.0) << map(mult) << p, label="P") << zip(x, y)),
        {"P": {"size": 8}}, (X, Y), "map((x2) => reduce(add, 0.0) << map(mult) << x2) << split(8)"),
    "split_reduce_final": (lambda: fun([Array(Float, N), Array(Float, N)], lambda x, y: rw.split_reduce(
        lambda p: reduce(_madd, 0.0) << p, label="P", final=lift.add) << zip(x, y)),
        {"P": {"size": 4}}, (X, Y), "reduce(add, 0.0) << map("),
    "flatten": (lambda: fun([Array(Array(Float, N), M)], lambda a: rw.flatten(map(map(lift.id)), label="P") << a),
                {}, (A,), "split(N) << map(id) << join << a"),
    "vectorise": (lambda: fun([Array(Float, N)], lambda x: rw.vectorise(map(lift.id), label="P") << x),
                  {"P": {"width": 4}}, (X,), "as_scalar << map(vectorise(id, 4)) << as_vector(4)"),
    "vectorise_zip": (lambda: fun([Array(Float, N), Array(Float, N)], lambda x, y: rw.vectorise(
        lambda a, b: map(mult) << zip(a, b), label="P")(x, y)),
        {"P": {"width": 8}}, (X, Y), "zip(as_vector(8) << x, as_vector(8) << y)"),
    "fission": (lambda: fun([Array(Float, N), Array(Float, N)], lambda x, y: rw.fission(
        lambda p: reduce(lift.add, 0.0) << map(mult) << p, label="P") << zip(x, y)),
        {}, (X, Y), "ocl_kernel((input) => reduce(add, 0.0) << input) << ocl_kernel(map(mult))"),
    "ab_tile": (lambda: fun([Array(Float, N), Array(Float, M)], lambda a, b: rw.ab_tile(
        lambda q: map(lambda ea: map(lambda eb: mult(ea, eb)) << b) << q, label="P") << a),
        {"P": {"size_a": 4, "size_b": 8}}, (X[:16], B), "map(join) << join << map(transpose)"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_family_rewrites_and_preserves_the_meaning(name: str) -> None:
    make, choice, args, shape = CASES[name]
    prog = make()
    out = rw.apply_all(prog, choice)
    assert shape in str(out), str(out)
    assert not any(rw.is_point(n) for _, n in walk(out))
    assert equal_types(lift.typecheck(out), lift.typecheck(prog))
    assert np.allclose(lift.interpret(out, *args), lift.interpret(prog, *args), rtol=1e-4)


@pytest.mark.parametrize("name", list(CASES))
def test_each_family_skipped_is_the_program_as_written(name: str) -> None:
    make, _, args, _ = CASES[name]
    prog = make()
    out = rw.apply_all(prog, {"P": {"skip": True}})
    assert "split_reduce" not in str(out) and np.allclose(lift.interpret(out, *args), lift.interpret(prog, *args))


def test_split_reduce_needs_a_monoid_or_a_final_operator() -> None:
    prog = fun([Array(Float, N), Array(Float, N)], lambda x, y: rw.split_reduce(
        lambda p: reduce(_madd, 0.0) << p, label="P") << zip(x, y))
    with pytest.warns(lift.RewritePointSkipped, match="final="):
        rw.apply_all(prog, {"P": {"size": 4}})


def test_split_reduce_inside_gemv_rows() -> None:
    prog = fun([Array(Array(Float, N), M), Array(Float, N)], lambda a, v: map(
        lambda row: rw.split_reduce(lambda p: reduce(lift.add, 0.0) << map(mult) << p, label="R")
        << zip(row, v)) << a)
    out = rw.apply_all(prog, {"R": {"size": 16}})
    assert np.allclose(lift.interpret(out, A, X), A @ X, rtol=1e-4)


def test_vectorise_exposes_its_width_as_a_structural_parameter() -> None:
    make = CASES["vectorise"][0]
    assert rw.structural_space(make())["P"] == {"skip": (False, True), "width": (8, 4, 16, 2)}


@pytest.mark.device
@pytest.mark.parametrize("name", list(CASES))
def test_each_family_compiles_and_matches_the_interpreter(name: str) -> None:
    """Rewritten, mapped by a sampled valid choice of the joint constraint space, compiled."""
    from lift.explore import Evaluator

    make, choice, args, _ = CASES[name]
    prog = make()
    pipe = Evaluator(prog, args, None, bind_sizes([p.ptype for p in prog.params], args, prog))
    pipe.compute_reference()
    structural = {"P": {**choice.get("P", {}), "skip": False}}
    space = pipe.space(structural)
    records = [pipe.measure(pipe.point(structural, c)) for c in space.sample(3, seed=0)]
    assert any(r.ok for r in records), [r.reason for r in records]
    assert all(r.ok or "wrong" not in r.reason for r in records), [r.reason for r in records]
