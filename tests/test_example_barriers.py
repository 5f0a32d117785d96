"""Removing the barrier from the two-stage dot or the tiled matmul makes the PoCL result wrong.

PoCL runs the work-items of a group one after another between barriers, so without the
barrier after the cooperative write to local memory, a work-item reads elements that the
others have not written yet (whatever an earlier group or run left there). The barrier is
removed from the generated source text (the barrier pass is not involved), and the edited
source runs with the same host plan. Every work-group sees different data and several
inputs are tried: a stale value that happens to be the right one cannot hide the race.
The examples' local sizes leave no branch on the local id between the write and the read:
with one (`if (l < 1)`), PoCL was seen to run the broken kernel correctly most of the time.
On a device where a race may not show (a GPU's work-items run side by side: `races_show` is
False) only the intact kernel is checked.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import dot  # noqa: E402
import matmul  # noqa: E402

from lift.codegen import generate  # noqa: E402
from lift.plan import KernelSource  # noqa: E402
from lift.program import Program  # noqa: E402

pytestmark = pytest.mark.device


def barrier_lines(source: str) -> list[int]:
    """The line numbers of the `barrier(...)` statements."""
    return [k for k, line in enumerate(source.splitlines()) if line.strip().startswith("barrier(")]


def without_line(plan: KernelSource, k: int) -> KernelSource:
    """The same plan with line `k` of its source deleted."""
    lines = plan.source.splitlines()
    return dataclasses.replace(plan, source="\n".join(lines[:k] + lines[k + 1:]) + "\n")


def first_barrier_removed(plan: KernelSource) -> KernelSource:
    """The plan without its first barrier: the one after the cooperative write to local memory."""
    found = barrier_lines(plan.source)
    assert found, "the program has no barrier to remove"
    edited = without_line(plan, found[0])
    assert len(barrier_lines(edited.source)) == len(found) - 1
    return edited


def wrong_somewhere(plan: KernelSource, cases: list[tuple], want, rtol: float) -> bool:
    """Whether running `plan` gives a wrong result for at least one of `cases`."""
    prog = Program(plan, cache_dir=False)
    for args in cases:
        if not np.allclose(np.reshape(prog(*args), np.shape(want(*args))), want(*args), rtol=rtol, atol=rtol):
            return True
    return False


def ramp(n: int, block: int) -> np.ndarray:
    """1 in the first `block` elements, 2 in the next, ...: every work-group sees different data,
    so values left in local memory by another group (or an earlier run) are wrong ones."""
    return (np.arange(n) // block + 1).astype(np.float32)


def test_two_stage_dot_needs_its_barrier(races_show):
    plan = generate(dot.two_stage(), **dot.LOCAL)
    n = 16 * dot.GROUP
    ones, steps = np.ones(n, np.float32), ramp(n, dot.GROUP)
    cases = [(ones, steps), (steps, steps[::-1].copy()), (2 * steps, ones), dot.inputs(16)]

    def want(x, y):
        return np.asarray(np.dot(x.astype(np.float64), y))

    assert not wrong_somewhere(plan, cases, want, 1e-4)
    assert not races_show or wrong_somewhere(first_barrier_removed(plan), cases, want, 1e-4)


def test_tiled_matmul_needs_its_barrier(races_show):
    plan = generate(matmul.tiled(), **matmul.LOCAL)
    a, bt = matmul.inputs(128, 128, 48)
    cases = [(a + ramp(128, matmul.T)[:, None], bt), (a, bt + ramp(128, matmul.T)[:, None]), (a, bt)]

    def want(a, bt):
        return a.astype(np.float64) @ bt.T.astype(np.float64)

    assert not wrong_somewhere(plan, cases, want, 1e-4)
    assert not races_show or wrong_somewhere(first_barrier_removed(plan), cases, want, 1e-4)
