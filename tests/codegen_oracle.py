"""Run generated programs on the OpenCL device and compare them with the interpreter (the oracle)."""

from __future__ import annotations

from typing import Any

import numpy as np

import lift
from lift.codegen import build
from lift.codegen.verify import verify_kernel_source
from lift.plan import KernelSource


def run(plan: KernelSource, *args: Any) -> Any:
    """Build and run a plan with the runtime's `Program` (device buffers, launches, outputs)."""
    from lift.program import Program

    return Program(plan, cache_dir=False)(*args)


def assert_same(got: Any, want: Any, tol: float = 1e-4) -> None:
    """Equal up to float tolerance, component by component for tuples."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, tol)
        return
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


def check(program: Any, *args: Any, plan: KernelSource | None = None, **kw: Any) -> KernelSource:
    """Generate (unless `plan` is given) with every stage's checker on, run on the device and
    compare with `lift.interpret`."""
    if plan is None:
        plan = build(program, verify=True, **kw).source
    verify_kernel_source(plan)
    assert_same(run(plan, *args), lift.interpret(program, *args))
    return plan


def floats(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Random float32 data (values in [-1, 1))."""
    return (rng.random(shape, dtype=np.float32) * 2 - 1).astype(np.float32)
