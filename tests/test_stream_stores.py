"""Streaming (non-temporal) stores of a program's results (lift/codegen/stream.py): only aligned
vector stores to result buffers that the kernel never reads, a macro that is a plain store
wherever clang's builtin is not known to be right, and the same numbers either way."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

import lift
from lift import Array, Float, fun, map, reduce, transpose, zip
from lift.arith import Cst, Var
from lift.codegen.c_ast import Assign, Block, CIndex, CRaw, CVar, Decl, KernelDef, KParam, StreamStore, walk_stmts
from lift.codegen.stream import streamed
from lift.program import Program

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import axpy  # noqa: E402

i = Var("i", Cst(0), None)


def _kernel(*stmts) -> KernelDef:
    return KernelDef("k", [KParam("global float*", "out", "global"), KParam("global float*", "tmp", "global")],
                     Block(list(stmts)))


def _vstore(buf: str) -> Assign:
    return Assign(CIndex(buf, i, "global", "float8"), CVar("v"))


def test_only_vector_stores_to_results_are_streamed():
    k = streamed(_kernel(_vstore("out"), _vstore("tmp"), Assign(CIndex("out", i + 1), CVar("s"))), {"out"})
    kinds = [type(s).__name__ for s in k.body.stmts]
    assert kinds == ["Assign", "Assign", "Assign"], "a scalar store to out shares its lines: none streamed"
    k = streamed(_kernel(_vstore("out"), _vstore("tmp")), {"out"})
    assert isinstance(k.body.stmts[0], StreamStore) and isinstance(k.body.stmts[1], Assign)


def test_a_result_the_kernel_reads_is_not_streamed():
    read = Decl("float8", "w", CIndex("out", i, "global", "float8"))
    k = streamed(_kernel(_vstore("out"), read), {"out"})
    assert not any(isinstance(s, StreamStore) for s in walk_stmts(k.body))
    raw = Assign(CVar("x"), CRaw("out[0]"))  # even where the read is raw C text
    k = streamed(_kernel(_vstore("out"), raw), {"out"})
    assert not any(isinstance(s, StreamStore) for s in walk_stmts(k.body))


@pytest.mark.device
def test_temporaries_between_kernels_keep_plain_stores():
    m = 256
    rng = np.random.default_rng(1)
    a, b = rng.random((m, m), dtype=np.float32), rng.random((m, m), dtype=np.float32)
    mm = fun([Array(Array(Float, m), m), Array(Array(Float, m), m)],
             lambda x, y: map(lambda r: map(lambda c: reduce(lift.add, 0.0) << map(lift.mult) << zip(r, c))
                              << (transpose << y)) << x)
    prog = lift.compile(mm, choices={"auto_b0": {"pack": "ab"}})  # register blocks, A and B packed by kernels
    lines = prog.source.splitlines()
    packed = [ln for ln in lines if ln.strip().startswith("((global float8*)tmp") and " = " in ln]
    assert len(packed) == 2  # A's and B's panels, each one vector store (A's across rows of 4: views._contiguous)
    streamed_ = [ln for ln in lines if "LIFT_STREAM_STORE(&" in ln]
    assert streamed_ and all(ln.strip().startswith("LIFT_STREAM_STORE(&((global float8*)out)[") for ln in streamed_)
    np.testing.assert_allclose(prog(a, b), a.astype(np.float64) @ b, rtol=1e-4)


@pytest.mark.device
def test_streamed_and_plain_stores_give_the_same_result():
    prog = lift.compile(axpy.vectorised())
    assert "LIFT_STREAM_STORE(&((global float8*)out)" in prog.source
    a, x, y = axpy.inputs(16)
    want = prog(a, x, y)
    np.testing.assert_allclose(want, np.float64(a) * x + y, rtol=1e-6)
    plain = prog.plan.source.replace("defined(__x86_64__)", "0")  # the fallback: *p = v
    other = Program(dataclasses.replace(prog.plan, source=plain))
    np.testing.assert_array_equal(other(a, x, y), want)


@pytest.mark.device
def test_streamed_result_written_in_several_kernel_launches():
    """A result written by a kernel and then the host reads it at once: the non-temporal lines
    are visible after the launch (PoCL ends a kernel with locked instructions)."""
    prog = lift.compile(axpy.vectorised())
    a, x, y = axpy.inputs(20)
    for k in range(3):
        np.testing.assert_allclose(prog(np.float32(k), x, y), np.float64(k) * x + y, rtol=1e-6)
