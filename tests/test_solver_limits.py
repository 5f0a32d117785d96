"""Deterministic compiles: every z3 question is bounded by z3's resource counter (`rlimit`), never
by the clock (lift/constraints/limits.py), so the generated code does not depend on how loaded the
machine is.

The machine is slowed artificially, without bound: every wall-clock guard any z3 call sets (a
solver's "timeout", `set_param`, `TryFor`) is cut to 1 ms, as on a machine too loaded to answer
anything in time. The TC example gconv, whose mapping used to change under load (map_seq/map_glb
instead of map_wrg/map_lcl: its barrier question took 0.9M to over 120M resource units, up to half
a minute, against guards of 30-60 s), must still compile to its golden code, and every check made
must have a resource limit. Reintroducing a wall-clock guard that decides a result fails here."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
import z3

import lift.constraints.model as model_mod
from lift.constraints import choose_mapping, limits, mapping_space
from lift.constraints.lexopt import BudgetSpent, lex_optimum
from lift.constraints.model import Constraint, Model
from lift.constraints.tuning import _proved
from lift.errors import UnsatisfiableError

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import test_golden_corpus as corpus  # noqa: E402

import programs  # noqa: E402


class SlowMachine:
    """z3 patched so that each wall-clock guard fires at once (1 ms), and each check is recorded
    with whether its solver was given a resource limit."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.timeouts: list[str] = []  # where a wall-clock guard was set
        self.unlimited: list[str] = []  # where a check ran without a resource limit
        self.checks = 0
        for cls in (z3.Solver, z3.Optimize):
            monkeypatch.setattr(cls, "set", self._set(cls.set))
            monkeypatch.setattr(cls, "check", self._check(cls.check))
        set_param = z3.set_param
        try_for = z3.TryFor

        def slow_set_param(*args: Any, **kw: Any) -> None:
            args, kw = self._cut(args, kw)
            set_param(*args, **kw)

        def slow_try_for(t: Any, ms: int, ctx: Any = None) -> Any:
            self.timeouts.append(_caller())
            return try_for(t, 1, ctx)

        monkeypatch.setattr(z3, "set_param", slow_set_param)
        monkeypatch.setattr(z3, "TryFor", slow_try_for)

    def _cut(self, args: tuple, kw: dict) -> tuple[tuple, dict]:
        """The parameters with any timeout set to 1 ms (and noted)."""
        names = [str(a) for a in args[::2]] + list(kw)
        if any("timeout" in k for k in names):
            self.timeouts.append(_caller())
            args = tuple(1 if i % 2 and "timeout" in str(args[i - 1]) else a for i, a in enumerate(args))
            kw = {k: 1 if "timeout" in k else v for k, v in kw.items()}
        return args, kw

    def _set(self, orig: Any) -> Any:
        def set_(solver: Any, *args: Any, **kw: Any) -> None:
            args, kw = self._cut(args, kw)
            if "rlimit" in [str(a) for a in args[::2]] + list(kw):
                solver._test_rlimit = True
            orig(solver, *args, **kw)

        return set_

    def _check(self, orig: Any) -> Any:
        def check(solver: Any, *assumptions: Any) -> Any:
            self.checks += 1
            if not getattr(solver, "_test_rlimit", False):
                self.unlimited.append(_caller())
            return orig(solver, *assumptions)

        return check


def _caller() -> str:
    """The first frame of liftcl's own code on the stack (file:line)."""
    frame = sys._getframe(2)
    while frame is not None:
        rel = Path(frame.f_code.co_filename).resolve()
        if ROOT in rel.parents and "tests" not in rel.relative_to(ROOT).parts[:1]:
            return f"{rel.relative_to(ROOT)}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


@pytest.mark.parametrize("stem", ["tc-gconv-gconv", "gpu-nvidia-matmul-high-level-default-lowering"])
def test_code_does_not_depend_on_the_clock(stem: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With every wall-clock guard cut to 1 ms the code is still the golden code, and every z3
    check the compile made had a resource limit."""
    want = corpus.golden()[stem]
    slow = SlowMachine(monkeypatch)
    make, device, arrays = corpus.cases()[stem]
    got = corpus._source(make, device, arrays, str(tmp_path))
    assert slow.checks > 0, "the compile asked z3 nothing: pick a program that does"
    assert not slow.timeouts, f"z3 wall-clock guards set at {sorted(set(slow.timeouts))}: use an rlimit"
    assert not slow.unlimited, f"z3 checks without a resource limit at {sorted(set(slow.unlimited))}"
    assert got == want, f"{stem}: the code changed on a machine where every wall-clock guard fires"


SOLVER_DIRS = ("constraints", "rewrites", "rules", "lift")
WALL_CLOCK = re.compile(r"""(\.set|set_param|Params\.set|With)\(\s*["']?timeout|timeout\s*=\s*\d|TryFor\(""")


def test_no_source_sets_a_z3_wall_clock_guard() -> None:
    """No module of the compiler sets a z3 timeout (the tuner's worker timeouts in lift/explore
    bound whole processes, not z3 questions, and are not z3 parameters)."""
    found = []
    for d in SOLVER_DIRS:
        for path in sorted((ROOT / d).rglob("*.py")):
            text = path.read_text()
            if "z3" not in text:
                continue
            for k, line in enumerate(text.splitlines(), 1):
                if WALL_CLOCK.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{k}: {line.strip()}")
    assert not found, "z3 wall-clock guards (use z3's rlimit, lift/constraints/limits.py):\n" + "\n".join(found)


# ------------------------------------------------------- what the limit gives when reached


def test_proof_out_of_budget_is_not_proved() -> None:
    """A proof that needs more than its budget is "not proved" (the timeout's fallback), every time."""
    x, y = z3.Ints("x y")
    facts = [x >= 1, y >= 1, x * x * y <= 4096]
    claim = x * y <= 4096
    assert _proved(claim, facts)
    assert [_proved(claim, facts, rlimit=1) for _ in range(3)] == [False] * 3


def test_mapping_out_of_budget_is_a_valid_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    """`lex_optimum` out of budget raises `BudgetSpent`; `choose_mapping` then takes a valid sample,
    the same one every time."""
    a, b = z3.Int("a"), z3.Int("b")
    with pytest.raises(BudgetSpent):
        lex_optimum({"a": (0, 1, 2), "b": (0, 1, 2)}, [a + b <= 2], [(a >= 1, 1)], ["a", "b"], rlimit=1)
    expr = programs.matmul_program()
    best = choose_mapping(expr, "pocl-cpu")
    import lift.constraints.space as space_mod

    monkeypatch.setattr(space_mod, "OPTIMIZE_RLIMIT", 1)
    got = [choose_mapping(expr, "pocl-cpu") for _ in range(2)]
    assert got[0] == got[1]
    assert mapping_space(expr, "pocl-cpu").model.is_valid(got[0])
    assert set(got[0]) == set(best)


def test_model_out_of_budget_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model check out of its budget is "could not decide" (an `UnsatisfiableError`), not a guess."""
    m = Model()
    x, y = m.var("x", range(1, 200)), m.var("y", range(1, 200))
    m.add(Constraint("test", (), "x*y is 391", x * y == 391))
    assert m.core() is None
    monkeypatch.setattr(model_mod, "MODEL_RLIMIT", 1)
    with pytest.raises(UnsatisfiableError, match="could not decide"):
        Model.core(m)


def test_recorder_summarises_use_per_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`LIFTCL_Z3_RECORD` (the calibration aid) records each check's site and resource use."""
    path = tmp_path / "z3.jsonl"
    monkeypatch.setenv(limits.RECORD_ENV, str(path))
    for cls in (z3.Solver, z3.Optimize):
        monkeypatch.setattr(cls, "check", cls.check)  # undone after the test
    limits.install_recorder()
    x = z3.Int("x")
    assert _proved(x * x >= 0, [x >= 0])
    summary = limits.summary(path.read_text().splitlines())
    site = summary["constraints/tuning.py:_proved"]
    assert site["checks"] == 1 and site["max_used"] > 0 and site["results"] == {"unsat": 1}
