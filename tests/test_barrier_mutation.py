"""Mutation test: every barrier the pass puts into a program the tests run is needed.

For each barrier of each program, the kernel without that barrier must give a wrong result
on PoCL for the program's inputs or for random inputs of the same shapes: PoCL runs the
work-items of a group one after another between barriers, so a missing barrier shows up
(the mutant runs first on every input, so that no correct value is left over in local
memory from the intact kernel).

Two kinds of race are invisible to that schedule, and for them the analysis must show the
race instead: z3's model of two work-items and the element they race on, printed in the
barrier's reason ("race: work-items ... on element ..."). A barrier inside a loop that also
holds another barrier (a write-after-read across iterations) is never needed on PoCL, which
synchronises each iteration of such a loop by itself; and when every work-item computes
and writes the same outputs (a `map_seq` outside any `map_lcl`), the work-item that runs
last reads everything written and rewrites every output, so its result is right. A barrier
that neither changes a result nor has a race is one the analysis should not have inserted.

The programs: every example variant, the programs of `test_barriers` and `test_barriers_mag`,
and Table 5.1 M4 (fast, by default); with `-m slow`, every program run by the test modules
that compile programs, recorded while they run in this process.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest

from codegen_oracle import floats
from lift.codegen import generate
from lift.plan import KernelSource
from lift.program import Program

pytestmark = pytest.mark.device

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# Modules that run compiled programs; test_arith and test_userfun_translate run C snippets only.
MARKERS = ("codegen_oracle", "lift.codegen", "lift.compile", "compile(")
SKIP = {Path(__file__).name, "test_arith.py", "test_userfun_translate.py"}
KINDS = ("read-after-write", "write-after-read", "write-after-write")
RANDOM_INPUTS = 2
EXAMPLE_SIZES = {"dot": (13,), "gemv": (24, 40), "matmul": (64, 32, 16), "stencil2d": (20, 36), "conv": (6, 3, 8)}

Run = tuple[KernelSource, tuple]


# ------------------------------------------------------------------ programs


def registry() -> list[Run]:
    """The programs with barriers that the tests compile, with their inputs."""
    import test_barriers as tb
    import test_barriers_mag as tm

    rng = np.random.default_rng(11)
    runs: list[tuple[Any, dict, tuple]] = []
    sys.path.insert(0, str(ROOT / "examples"))
    for name, sizes in EXAMPLE_SIZES.items():
        module = __import__(name)
        runs += [(v.program, v.compile_kw, module.inputs(*sizes)) for v in module.variants()]
    runs += [(tb.tiled_transpose(), {}, (floats(rng, 256),)),
             (tb.tiled_transpose(), {"global_size": 32, "local_size": 16}, (floats(rng, 256),))]
    runs += [(program(), kw, tuple(floats(rng, *s) for s in shapes)) for program, kw, shapes in tm.CASES.values()]
    runs.append((table_5_1_m4(), {"local_size": (8,), "global_size": (32,)}, (floats(rng, 4, 8, 16),)))
    plans = [(generate(program, **kw), args) for program, kw, args in runs]
    return [(plan, args) for plan, args in plans if plan.barriers]


def table_5_1_m4():
    from test_constraints_mapping import SIZES, choice, listing_5_2

    from lift.constraints import mapping_space

    return mapping_space(listing_5_2(), "pocl-cpu", sizes=SIZES).realise(choice("M4"))


class Recorder:
    """A pytest plugin that records each run of a program with barriers (plan, inputs)."""

    def __init__(self) -> None:
        self.runs: dict[tuple, Run] = {}
        self.original = Program.__call__
        self.patched = ExitStack()  # Program.__call__ replaced for the session

    def pytest_sessionstart(self, session: Any) -> None:
        recorder, original = self, self.original

        def call(prog: Program, *arrays: Any) -> Any:
            plan = prog.plan
            if plan.barriers and len(barrier_lines(plan.source)) == len(plan.barriers):
                key = (plan.source, tuple(np.shape(a) for a in arrays if isinstance(a, np.ndarray)))
                recorder.runs.setdefault(key, (plan, copy.deepcopy(arrays)))
            return original(prog, *arrays)

        self.patched.enter_context(mock.patch.object(Program, "__call__", call))

    def pytest_sessionfinish(self, session: Any, exitstatus: int) -> None:
        self.patched.close()


def modules() -> list[str]:
    """The test modules that compile and run programs."""
    return sorted(str(p) for p in TESTS.glob("test_*.py")
                  if p.name not in SKIP and any(m in p.read_text() for m in MARKERS))


def harvest() -> list[Run]:
    """Every program with barriers that the test modules run, recorded while they run."""
    rec = Recorder()
    pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT), "-c", str(ROOT / "setup.cfg"),
                 *modules()], plugins=[rec])
    return list(rec.runs.values())


# ------------------------------------------------------------------ mutation


def barrier_lines(source: str) -> list[int]:
    return [k for k, line in enumerate(source.splitlines()) if line.strip().startswith("barrier(")]


def without(plan: KernelSource, line: int) -> KernelSource:
    lines = plan.source.splitlines()
    return dataclasses.replace(plan, source="\n".join(lines[:line] + lines[line + 1:]) + "\n")


def randomised(arrays: tuple, rng: np.random.Generator) -> tuple:
    """Arguments of the same shapes with fresh random floats (other values kept)."""
    def one(a: Any) -> Any:
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            return (rng.random(a.shape) * 2 - 1).astype(a.dtype)
        if isinstance(a, tuple):
            return tuple(one(x) for x in a)
        return a

    return tuple(one(a) for a in arrays)


def same(got: Any, want: Any) -> bool:
    if isinstance(want, tuple):
        return all(same(g, w) for g, w in zip(got, want))
    return bool(np.allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-4, equal_nan=True))


def exposed(plan: KernelSource, arrays: tuple, line: int) -> bool:
    """Whether the plan without the barrier on `line` gives a wrong result for some input."""
    good, bad = Program(plan, cache_dir=False), Program(without(plan, line), cache_dir=False)
    rng = np.random.default_rng(line)
    for args in [randomised(arrays, rng) for _ in range(RANDOM_INPUTS)] + [arrays]:
        got = bad(*args)  # first: local memory holds no result of the intact kernel for these inputs
        if not same(got, good(*args)):
            return True
    return False


def unneeded(runs: list[Run]) -> list[str]:
    """The barriers whose removal changes no result and whose reason shows no race."""
    out = []
    for plan, arrays in runs:
        for k, line in enumerate(barrier_lines(plan.source)):
            if not exposed(plan, arrays, line) and "(race: " not in plan.barriers[k].reason:
                out.append(f"{plan.barriers[k].reason}\n{plan.source}")
    return out


# --------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def runs() -> list[Run]:
    return registry()


def test_the_programs_include_every_kind_of_barrier(runs):
    reasons = [b.reason for plan, _ in runs for b in plan.barriers]
    assert len(runs) >= 6
    assert any(r.startswith("write-after-read") for r in reasons)  # Listing 5.3, the overwrite
    assert any("CLK_GLOBAL_MEM_FENCE" in plan.source for plan, _ in runs)


def test_every_barrier_resolves_a_dependence(runs):
    for plan, _ in runs:
        assert len(barrier_lines(plan.source)) == len(plan.barriers)
        for b in plan.barriers:
            assert b.reason.startswith(KINDS) and b.buffers, b


@pytest.mark.races_visible
def test_removing_any_one_barrier_gives_a_wrong_result_or_the_race_is_shown(runs):
    missed = unneeded(runs)
    assert not missed, "barriers whose removal changes no result:\n" + "\n\n".join(missed)


@pytest.mark.races_visible
@pytest.mark.slow
def test_every_program_the_test_suite_runs():
    runs = harvest()
    assert runs
    missed = unneeded(runs)
    assert not missed, "barriers whose removal changes no result:\n" + "\n\n".join(missed)
