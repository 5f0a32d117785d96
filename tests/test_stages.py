"""Every IR function node is handled by the kernel stages (memory allocation and kernel generation
take the same case of `lift.allocation.kernel_case`) or rejected with a named `UnsupportedError`;
the kernel stages run in the order `lift.compile` shows."""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import pytest

import lift
from lift import Array, Float, Size, fun, map_glb, map_seq, ocl_kernel, reduce_seq, split, transpose
from lift.allocation import (
    KERNEL_CASES,
    KERNEL_REFUSED,
    KERNEL_RULES,
    Allocator,
    KernelCase,
    install_kernel_cases,
    kernel_case,
)
from lift.arith import Cst
from lift.barriers import insert_barriers
from lift.codegen import stages
from lift.codegen.access import divisibility
from lift.codegen.generate import HostTraversal, build
from lift.codegen.kernel import KERNEL_TABLE, KernelGen
from lift.codegen.names import Funs, Names
from lift.ir import nodes as n
from lift.ir.patterns import reduce_atomic
from lift.plan import BufferSpec
from lift.typecheck import size_conditions, typecheck
from lift.types import size_names

FUNCTION_NODES = sorted((c for c in vars(n).values() if isinstance(c, type) and issubclass(c, n.FunDecl)
                         and c not in (n.FunDecl, n.Pattern, n.AbstractMap, n.AbstractReduce)),
                        key=lambda c: c.__name__)


@pytest.mark.parametrize("cls", FUNCTION_NODES, ids=lambda c: c.__name__)
def test_every_function_node_has_a_kernel_case_or_a_named_refusal(cls):
    assert (cls in KERNEL_CASES) != (cls in KERNEL_REFUSED), f"{cls.__name__}: handled xor refused"
    assert cls in n.ALL_NODE_TYPES


def test_memory_allocation_and_kernel_generation_take_the_same_cases():
    """One table (`KERNEL_TABLE`) holds both walks' handler of every family, and both walks
    dispatch through it (no `match` of their own)."""
    every = set(KERNEL_CASES.values())
    assert set(KERNEL_RULES) == every and {c.family for c in KERNEL_TABLE} == every
    for case in KERNEL_TABLE:
        assert KERNEL_RULES[case.family] is case
        assert case.allocate is getattr(Allocator, f"on_{case.family}")
        assert case.emit is getattr(KernelGen, f"on_{case.family}")
    for walk in (Allocator.apply, KernelGen.apply):
        assert "KERNEL_RULES[kernel_case(" in inspect.getsource(walk) and "match" not in inspect.getsource(walk)


def test_installing_kernel_cases_needs_every_family_once():
    short = tuple(c for c in KERNEL_TABLE if c.family != "map")
    with pytest.raises(lift.LiftError, match="kernel cases for"):
        install_kernel_cases(short)
    with pytest.raises(lift.LiftError, match="kernel cases for"):
        install_kernel_cases((*KERNEL_TABLE, KernelCase("map", Allocator.on_map, KernelGen.on_map)))
    assert {c.family for c in KERNEL_RULES.values()} == set(KERNEL_CASES.values())  # left as it was


def test_a_refused_node_names_itself_and_the_reason():
    prog = lift.fun([lift.Array(lift.Float, lift.Size("N"))], lambda x: lift.map(lift.id) << x)
    mapped = prog.body.f
    with pytest.raises(lift.UnsupportedError, match="no OpenCL mapping; lower the program first"):
        kernel_case(mapped, prog.body)
    assert kernel_case(n.MapSeq(lift.id)) == "map" and kernel_case(n.Transpose()) == "layout"
    assert kernel_case(n.MapSeq(n.Transpose())) == "layout"  # a map of a layout pattern is a view
    assert kernel_case(prog) == "lambda"


def test_the_kernel_stages_run_in_the_documented_order():
    assert [s.__name__ for s in stages.KERNEL_STAGES] == ["allocated", "probed", "synchronised", "emitted",
                                                          "assembled"]
    src = inspect.getsource(importlib.import_module("lift.compile").link)
    assert "allocated, probed, synchronised, emitted, assembled" in src


def test_type_checking_runs_once_per_node_through_compile(monkeypatch):
    """Every call node of every program `lift.compile` goes through (the user's, the mapped one)
    is typed once: the stages read the call's memoised type afterwards."""
    from lift.devices import profile
    from lift.userfun.builtins import neg

    typecheck = importlib.import_module("lift.typecheck")
    seen: dict[int, int] = {}
    alive: list = []  # no id is reused while counting
    real = typecheck.set_memo

    def counting(e, got):
        seen[id(e)] = seen.get(id(e), 0) + 1
        alive.append(e)
        return real(e, got)

    monkeypatch.setattr(typecheck, "set_memo", counting)
    n_ = lift.Size("N")
    prog = lift.fun([lift.Array(lift.Array(lift.Float, n_), n_)],
                    lambda x: lift.map(lambda r: lift.reduce(lift.add, 0.0) << lift.map(neg) << r) << x)
    lift.compile(prog, device=profile("nvidia"), choices={})
    assert seen and max(seen.values()) == 1, {k: v for k, v in seen.items() if v > 1}


# ------------------------------------------------------------ the records between the stages


def _two_kernels() -> lift.Lambda:
    return fun([Array(Float, Size("N"))], lambda x: ocl_kernel(lambda q: map_glb(map_seq(lift.id)) << q)
               << transpose << ocl_kernel(lambda q: map_glb(map_seq(lambda v: v * 2.0)) << q) << split(8) << x)


def _context(program: lift.Lambda) -> stages.KernelContext:
    typecheck(program)
    sizes = tuple(size_names(q.ptype for q in program.params))
    names = Names(set(sizes) | {"id"})
    return stages.KernelContext(program, names, Funs(names), sizes, divisibility(size_conditions(program)),
                                insert_barriers)


def test_the_host_traversal_yields_buffers_and_kernel_jobs_in_order():
    prog = _two_kernels()
    ctx = _context(prog)
    steps = list(HostTraversal(prog, ctx.names, None, (4,)).steps())  # one local size: every parallel kernel
    kinds = [("buffer", s.role) if isinstance(s, BufferSpec) else ("job", s.name) for s in steps]
    assert kinds == [("buffer", "input"), ("buffer", "output"), ("buffer", "temp"), ("job", "lift_kernel"),
                     ("job", "lift_kernel_1")]
    jobs = [s for s in steps if isinstance(s, stages.KernelJob)]
    assert all(j.local_size == (4,) and j.global_size is None for j in jobs)
    assert jobs[0].call is not None and jobs[0].dest != jobs[1].dest


def test_every_kernel_stage_returns_a_frozen_record_and_leaves_the_context_alone():
    prog = _two_kernels()
    ctx = _context(prog)
    buffers: list = []
    for step in HostTraversal(prog, ctx.names, None, None).steps():
        if isinstance(step, BufferSpec):
            buffers.append(step)
            continue
        kctx = dataclasses.replace(ctx, buffers=tuple(buffers))
        record: object = step
        for stage in stages.KERNEL_STAGES:
            record = stage(kctx, record)
            assert dataclasses.is_dataclass(record) and type(record).__dataclass_params__.frozen
            with pytest.raises(dataclasses.FrozenInstanceError):
                record.job = None  # type: ignore[attr-defined]
        assert isinstance(record, stages.AssembledKernel) and kctx.buffers == tuple(buffers)
        (kernel,) = record.kernels
        assert kernel.launch.kernel == step.name and record.buffers == ()
        buffers.extend(record.buffers)


def test_an_atomic_kernel_assembles_with_its_fill_launch_first():
    prog = fun([Array(Float, Size("N"))], lambda x: reduce_atomic(lift.add, 0.0) << map_glb(
        lambda c: reduce_seq(lift.add, 0.0) << c) << split(64) << x)
    gen = build(prog, verify=True)
    assert [launch.kernel for launch in gen.source.launches] == ["lift_kernel_fill", "lift_kernel"]
    assert gen.source.launches[0].global_size == (Cst(1),)


def test_launch_sizes_are_computed_without_changing_the_request():
    par = {("glb", 0): Cst(100), ("glb", 1): Cst(7)}
    request = (8,)
    local = stages.local_request(par, None, request)
    assert local == (8, 1) and request == (8,)  # completed to the kernel's two dimensions
    assert stages.ndrange(par, None, local) == ((Cst(104), Cst(7)), (Cst(8), Cst(1)))
    assert stages.local_request(par, (64, 8), request) == (8,)  # a global size given: as requested
    assert stages.ndrange(par, None, None) == ((Cst(100), Cst(7)), None)
    with pytest.raises(lift.UnsupportedError, match="mixes map_glb with map_wrg"):
        stages.ndrange({("glb", 0): Cst(4), ("lcl", 0): Cst(4)}, None, None)
