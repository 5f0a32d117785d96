"""Multi-output programs (issue 17 item 3): a program returning a tuple of independent computations
of different lengths is one kernel with one output buffer per component (`lift.lower.fused_tuple`,
`lift.codegen.tasks`), by the solver's mapping and by the default lowering; every result is checked
against the interpreter."""

from __future__ import annotations

import builtins

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, reduce, transpose, user_fun, zip
from lift.arith import Cst
from lift.constraints import mapping_space
from lift.errors import UnsupportedError
from lift.ir.patterns import map_glb, map_lcl, map_seq, map_wrg, ocl_kernel, reduce_seq
from lift.lower import lower
from lift.testing import assert_same

N, M, K = Size("N"), Size("M"), Size("K")
neg = user_fun(lambda x: -x, [Float], Float, name="neg")
sq = user_fun(lambda x: x * x, [Float], Float, name="sq")
NEG_INF = float("-inf")

pytestmark = pytest.mark.device


def _rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + sum(shape)).random(shape, dtype=np.float32)


def _two_reductions() -> lift.Lambda:
    """(sum(a + b) over N, max(c) over M): the seed workload `two_reductions`."""
    return fun([Array(Float, N), Array(Float, N), Array(Float, M)],
               lambda a, b, c: (reduce(lift.add, 0.0) << map(lambda p: p[0] + p[1]) << zip(a, b),
                                reduce(lift.max_, NEG_INF) << c))


def _check(prog: lift.Program, p: lift.Lambda, *arrays: np.ndarray) -> None:
    got, want = prog(*arrays), lift.interpret(p, *arrays)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in builtins.zip(got, want):
        assert np.shape(g) == np.shape(w)
        assert_same(w, g, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("lowered", [False, True], ids=["solver", "default-lowering"])
def test_two_reductions_of_different_lengths_are_one_kernel(lowered: bool, tmp_path) -> None:
    p = _two_reductions()
    prog = lift.compile(lower(p) if lowered else p, cache_dir=tmp_path)
    assert len(prog.kernels) == 1
    (nd,) = prog.ndrange
    assert nd.global_size == (Cst(2),) and nd.local_size == (Cst(1),)  # one work-group per reduction
    assert "task == 1" in prog.source
    _check(prog, p, _rand(1024), _rand(1024, seed=1), _rand(2176))


@pytest.mark.parametrize("n,m", [(37, 100), (100, 37)])
def test_arrays_of_different_lengths_in_one_kernel(n: int, m: int, tmp_path) -> None:
    p = fun([Array(Float, N), Array(Float, M)], lambda a, c: (map(neg) << a, map(sq) << c))
    prog = lift.compile(p, cache_dir=tmp_path)
    assert len(prog.kernels) == 1
    _check(prog, p, _rand(n), _rand(m))


def test_a_parallel_and_a_sequential_component(tmp_path) -> None:
    p = fun([Array(Float, N), Array(Float, M)], lambda a, c: (map(neg) << a, reduce(lift.add, 0.0) << c))
    prog = lift.compile(p, cache_dir=tmp_path)
    assert len(prog.kernels) == 1 and "task == 0" in prog.source  # the reduction: one work-item
    _check(prog, p, _rand(300), _rand(77))


def test_components_with_their_own_producer_kernels(tmp_path) -> None:
    """A component reading its producer through a transpose needs the producer's kernel first; the
    other components share the tuple's kernel, the 1-D ones guarded to the first row."""
    p = fun([Array(Array(Float, M), N), Array(Float, N)],
            lambda x, c: (map(map(neg)) << transpose << map(map(sq)) << x, reduce(lift.add, 0.0) << c,
                          map(sq) << c))
    solver, default = lift.compile(p, cache_dir=tmp_path), lift.compile(lower(p), cache_dir=tmp_path)
    for prog in (solver, default):
        assert len(prog.kernels) == 2
        _check(prog, p, _rand(6, 5), _rand(6))
    if "dim=1" in solver.source:  # the 2-D component uses dimension 1: the others keep to its first row
        assert "get_global_id(1) == 0" in solver.source


def test_lowering_keeps_one_kernel_for_the_tuple() -> None:
    low = lower(_two_reductions())
    kernels = [x for _, x in lift.ir.paths.walk(low) if isinstance(x, lift.ir.nodes.OclKernel)]
    assert kernels == []  # one kernel in all: the bare tuple is the kernel
    assert isinstance(low.body.f, lift.ir.nodes.MakeTuple)


def test_mapping_space_keeps_a_launch_to_one_indexing_form() -> None:
    p = fun([Array(Float, N), Array(Array(Float, K), M)],
            lambda a, x: (map(neg, label="A") << a, map(map(sq, label="C"), label="B") << x))
    space = mapping_space(p)
    assert space.is_valid({"A": 30, "B": 30, "C": 0})
    assert space.is_valid({"A": 20, "B": 20, "C": 10}) is False  # A: a work-group per element, no local
    assert space.is_valid({"A": 30, "B": 20, "C": 10}) is False  # global ids next to group ids: one launch


def test_a_user_kernel_mixing_global_and_group_ids_is_refused() -> None:
    p = fun([Array(Float, N), Array(Array(Float, K), M)],
            lambda a, x: ocl_kernel(lambda u, v: (map_glb(neg) << u, map_wrg(map_lcl(sq)) << v))(a, x))
    with pytest.raises(UnsupportedError, match="mixes map_glb with map_wrg") as info:
        lift.compile(p)
    assert info.value.loc is not None and "test_multi_output.py" in str(info.value)  # the user's line


def test_sequential_components_inside_a_user_kernel(tmp_path) -> None:
    """Written by hand: two sequential reductions and a sequential map, one work-item each."""
    p = fun([Array(Float, N), Array(Float, M)],
            lambda a, c: ocl_kernel(lambda u, v: (reduce_seq(lift.add, 0.0) << u, map_seq(neg) << v,
                                                  reduce_seq(lift.max_, NEG_INF) << v))(a, c))
    prog = lift.compile(p, cache_dir=tmp_path)
    assert prog.ndrange[0].global_size == (Cst(3),)
    _check(prog, p, _rand(50), _rand(21))
