"""Issue 14 item 2: every valid program compiles with the solver's mapping, no fallback.

A result copied through `pad` gets a kernel boundary (constraints/boundary.py), a map inside a
nested `iterate` is sequential, and a mapping the barrier pass cannot synchronise teaches the
model a named constraint before the solver chooses again (constraints/learn.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, pad, reduce, slide, split, transpose, user_fun
from lift.choices import Choices
from lift.compile import plan
from lift.constraints import choose_mapping, mapping_space
from lift.constraints.learn import taught
from lift.errors import LiftError, MappingFallback
from lift.rules.normalise import normalise
from lift.testing import assert_same

N, M = Size("N"), Size("M")
inc = user_fun(lambda a: a + 1.0, [Float], Float, name="inc")


def _compiled(prog, *xs, choices=None):
    with warnings.catch_warnings():
        warnings.simplefilter("error", MappingFallback)
        k = lift.compile(prog, choices=choices)
    assert_same(lift.interpret(prog, *xs), k(*xs))
    return k


X1 = np.arange(1000, dtype=np.float32)
X2 = np.arange(64 * 48, dtype=np.float32).reshape(64, 48)


@pytest.mark.parametrize("t, body, x", [
    (Array(Float, 1000), lambda x: pad(1, 2, 0.0) << map(inc) << x, X1),  # the refusal
    (Array(Float, N), lambda x: pad(1, 2, 0.0) << map(inc) << x, X1),
    (Array(Array(Float, M), N), lambda x: pad(1, 2, 0.0) << map(map(inc)) << x, X2),
    (Array(Array(Float, M), N), lambda x: map(pad(1, 1, 0.0)) << map(map(inc)) << x, X2),
    (Array(Array(Float, M), N), lambda x: pad(1, 1, 0.0) << transpose << map(map(inc)) << x, X2),
    (Array(Float, N), lambda x: pad(1, 1, 0.0) << map(reduce(lift.add, 0.0)) << split(10) << x, X1),
    (Array(Float, N), lambda x: slide(3, 1) << pad(1, 1, 0.0) << map(inc) << x, X1),
    (Array(Float, N), lambda x: pad(2, 1, 1.5) << map(inc) << map(reduce(lift.add, 0.0)) << slide(3, 1)
     << map(inc) << x, X1),  # several stages: the copy is one more kernel
])
def test_a_pad_of_a_parallel_result_gets_a_kernel_boundary(t, body, x):
    prog = fun([t], body)
    space = mapping_space(prog)
    assert "kernel boundary" in space.stats()
    k = _compiled(prog, x)
    assert "copy" in k.kernels


def test_a_sequential_computation_copies_its_own_result_in_one_kernel():
    prog = fun([Array(Float, N)], lambda x: pad(1, 2, 0.0) << map(inc) << x)
    k = _compiled(prog, X1, choices={"m0": 0})
    assert len(k.kernels) == 1


def test_the_boundary_constraint_follows_the_mapping():
    import z3

    prog = fun([Array(Float, N)], lambda x: pad(1, 2, 0.0) << map(inc) << x)
    space = mapping_space(prog)
    (c,) = [c for c in space.constraints if c.kind == "kernel boundary"]
    s = z3.Solver()
    s.add(c.formula, space.model.vars["m0"] == 30, z3.Not(z3.Bool("kernel_boundary")))
    assert s.check() == z3.unsat  # a parallel map must end its kernel before the copy
    s = z3.Solver()
    s.add(c.formula, space.model.vars["m0"] == 0, z3.Bool("kernel_boundary"))
    assert s.check() == z3.unsat  # a sequential one copies in its own kernel


def test_a_nested_stage_the_barrier_pass_refuses_teaches_the_solver_a_named_constraint():
    # inside one row, the windows read elements of map(inc)'s result that other work-items wrote
    prog = fun([Array(Array(Float, M), N)], lambda x: map(
        lambda row: map(reduce(lift.add, 0.0)) << slide(3, 1) << pad(1, 1, 0.0) << map(inc) << row) << x)
    first = choose_mapping(prog)
    assert first["m1"] >= 20 and first["m2"] >= 20  # the model alone allows the unsynchronisable mapping
    x = np.random.default_rng(0).random((16, 40), dtype=np.float32)
    k = _compiled(prog, x)
    lessons = plan(normalise(prog), None, Choices()).mapped.lessons  # what the compile learnt: its own values
    learnt = [c for c in taught(mapping_space(prog), lessons).constraints if c.kind == "no barrier placement"]
    assert learnt and set(learnt[0].labels) == {"m1", "m2"}
    assert not [c for c in mapping_space(prog).constraints if c.kind == "no barrier placement"]  # no cache kept it
    assert all(k.choices.mapping[m] < 20 for m in ("m1", "m2"))  # sequential or work-group local
    with pytest.raises(LiftError):  # an explicit mapping is compiled as given, never changed
        lift.compile(prog, choices=first)



# ---------------------------------------------- rewritten programs the sweep over lift.rules found refused

neg = user_fun(lambda a: -a, [Float], Float, name="neg")
T2 = Array(Array(Float, 6), 4)


@pytest.mark.parametrize("body", [
    # a parallel map of reductions inside a map: its result was "private memory" (the reductions'
    # accumulators are), which no parallel map may write; it is global now
    lambda x, y: map(lambda p: map(inc) << map(lambda r: reduce(lift.add, 0.0) << r) << slide(3, 1)
                     << lift.get(0) << p) << lift.zip(x, y),
    lambda x, y: map(lambda p: map(lambda r: reduce(lift.mult, 1.0) << r) << map(map(neg)) << transpose
                     << split(2) << map(lambda w: reduce(lift.max_, -1e30) << w) << slide(3, 1)
                     << lift.get(0) << p) << lift.zip(x, y),
    # a map that only makes a constant computes too: the model gives it a variable, so the back end's
    # default lowering never meets a half-mapped program ("computes outside every ocl_kernel")
    lambda x, y: reduce(lift.add, 0.0) << reduce(lambda accs, col: map(lift.mult) << lift.zip(accs, col),
                                                 map(lambda row: 1.0) << transpose << x) << transpose << transpose << x,
    lambda x, y: map(lambda row: 1.0) << x,
])
def test_rewritten_forms_compile_with_the_solvers_mapping(body):
    prog = fun([T2, T2], body)
    x = np.random.default_rng(1).random((4, 6), dtype=np.float32)
    k = _compiled(prog, x, x)
    assert k.choices.mapping  # every computing map has a variable (none left to the default lowering)


def test_a_one_dimensional_constant_init_compiles():
    prog = fun([Array(Float, 12), Array(Float, 12)], lambda x, y: reduce(
        lambda accs, col: map(lift.add) << lift.zip(accs, col),
        map(lambda row: 0.0) << split(3) << map(lift.add) << lift.zip(x, y)) << transpose << split(3)
        << map(lift.add) << lift.zip(x, y))
    x = np.arange(12, dtype=np.float32)
    _compiled(prog, x, x)


def test_a_constant_map_inside_a_sequential_stage_uses_the_stages_dimensions():
    # `map(row => -1e30)` had no nesting chain in the model (chains were recorded at user functions
    # only), so "exhaustive thread indexing" let it be map_glb inside a map_seq whose other work every
    # work-item then ran redundantly: a race on the temporaries, refused by the barrier pass
    relu = lambda v: lift.max_(v, 0.0)  # noqa: E731
    t = Array(Array(Float, 4), 6)
    prog = fun([t, t], lambda x, y: map(lambda q: reduce(lift.mult, 1.0) << reduce(
        lambda accs, col: map(lift.max_) << lift.zip(accs, col),
        map(lambda row: -1e30) << transpose << split(2) << lift.let(map(relu)) << lift.get(0) << q)
        << transpose << split(2) << lift.let(map(relu)) << lift.get(0) << q) << lift.zip(x, y))
    space = mapping_space(prog)
    assert not space.is_valid({"m0": 0, "m2": 30})
    x = np.random.default_rng(2).random((6, 4), dtype=np.float32) - 0.5
    _compiled(prog, x, x)


def test_address_space_rules_do_not_wrap_a_map_of_layouts():
    # found by the 15-minute fuzz run: to_local_memory wrapped `map(pad(1, 0, 0))`, a view, and the
    # rewritten program was refused ("computes nothing the code generator can read")
    prog = fun([T2], lambda x: map(lambda r: reduce(lift.max_, -1e30) << r) << map(pad(1, 0, 0.0)) << x)
    for rule in (lift.rules.to_local_memory, lift.rules.to_private_memory, lift.rules.to_global_memory):
        labels = [str(lift.ir.paths.at(prog, p)) for p in rule.matches(prog)]
        assert not any(s.startswith("map(pad") for s in labels), labels
    x = np.random.default_rng(3).random((4, 6), dtype=np.float32)
    _compiled(lift.rules.to_local_memory.apply(prog, at=lift.rules.to_local_memory.matches(prog)[0]), x)
