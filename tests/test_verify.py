"""The stage checkers of the back end: verify_lowered, verify_allocated, verify_kernel_source/generated."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

import lift
from lift import Array, Float, Size, fun, map, map_glb, reduce, reduce_seq, split, to_global, zip
from lift.allocation import Allocated, Buffer, Loop, allocate, verify_allocated
from lift.codegen import build
from lift.codegen.c_ast import KParam
from lift.codegen.verify import verify_generated, verify_kernel_source
from lift.lower import lower, verify_lowered
from lift.plan import BufferSpec, KernelArg

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import axpy  # noqa: E402
import conv  # noqa: E402
import dot  # noqa: E402
import gemv  # noqa: E402
import matmul  # noqa: E402
import stencil2d  # noqa: E402

N = Size("N")
EXAMPLES = [(m.__name__, k) for m in (axpy, conv, dot, gemv, matmul, stencil2d) for k in range(len(m.variants()))]
MODULES = {"axpy": axpy, "conv": conv, "dot": dot, "gemv": gemv, "matmul": matmul, "stencil2d": stencil2d}


def _dot():
    return fun([Array(Float, N), Array(Float, N)], lambda x, y: reduce(lift.add, 0.0) << map(lift.mult) << zip(x, y))


@pytest.mark.parametrize(("name", "k"), EXAMPLES, ids=[f"{n}-{k}" for n, k in EXAMPLES])
def test_every_example_passes_every_checker(name: str, k: int) -> None:
    v = MODULES[name].variants()[k]
    build(v.program, verify=True, **v.compile_kw)


def test_verify_lowered_checks_the_type_too() -> None:
    p = _dot()
    verify_lowered(lower(p), p)
    other = fun([Array(Float, N)], lambda x: reduce_seq(lift.add, 0.0) << x)
    with pytest.raises(lift.LiftValueError, match="the type changed"):
        verify_lowered(other, p)


def test_verify_allocated_rejects_symbolic_private_memory() -> None:
    prog = fun([Array(Float, N)],
               lambda x: map_glb(to_global(lambda r: reduce_seq(lift.add, 0.0) << r)) << split(4) << x)
    alloc = allocate(prog.body, (0,))
    verify_allocated(alloc)
    loop = Loop((0, 0), "glb", 0, N)
    bad = Buffer((0, 1), "tmp9", "private", Array(Float, N), (loop,))
    broken = Allocated(alloc.body, {**alloc.buffers, bad.path: bad}, alloc.accs, alloc.inline, alloc.spaces)
    with pytest.raises(lift.LiftValueError, match="private tmp9 has size"):
        verify_allocated(broken)


def _plan():
    return build(_dot(), verify=True)


def test_an_unused_temporary_buffer_is_reported() -> None:
    plan = _plan().source
    extra = BufferSpec("spare", Float, N, role="temp")
    with pytest.raises(lift.LiftValueError, match="buffer spare \\(temp\\) is used by no launch"):
        verify_kernel_source(dataclasses.replace(plan, buffers=plan.buffers + (extra,)))


def test_a_launch_argument_that_does_not_exist_is_reported() -> None:
    plan = _plan().source
    launch = plan.launches[0]
    bad = dataclasses.replace(launch, args=launch.args + (KernelArg("buffer", "ghost"), KernelArg("size", "Q")))
    with pytest.raises(lift.LiftValueError, match="given buffer ghost.*given size Q"):
        verify_kernel_source(dataclasses.replace(plan, launches=(bad,) + plan.launches[1:]))


def test_vload16_and_undefined_kernels_are_reported() -> None:
    plan = _plan().source
    src = plan.source.replace("kernel void", "void") + "\n// vload16(0, x)\n"
    with pytest.raises(lift.LiftValueError, match="is not defined in the source.*vload16"):
        verify_kernel_source(dataclasses.replace(plan, source=src))


def test_kernel_parameters_must_match_the_launch() -> None:
    gen = _plan()
    verify_generated(gen)
    gen.unit.kernels[0].params.append(KParam("int", "extra"))
    with pytest.raises(lift.LiftValueError, match="launched with"):
        verify_generated(gen)
