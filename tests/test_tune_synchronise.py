"""Synchronisability in the solver (issue 42, thesis 7.2.2, lift.explore.synchronise): a mapping is
classified always / sometimes / never synchronisable before its candidates are planned; "never"
removes it from the space, "sometimes" confines its launch to the values that synchronise."""

from __future__ import annotations

import pytest
import z3

import lift
from lift import Array, Float, Size, fun, map, pad, reduce, slide, user_fun
from lift.errors import NotSynchronisableError
from lift.explore import synchronise as sync
from lift.explore.evaluate import Evaluator
from lift.explore.points import key as point_key
from lift.rewrites import auto_points
from lift.rules.normalise import normalise
from tests.programs import gemv_program, rand

M, N = Size("M"), Size("N")
inc = user_fun(lambda a: a + 1.0, [Float], Float, name="inc")
INNER_GLOBAL = {"m0": 0, "m1": 30, "m2": 30}  # each row's two stages over global dimension 0


def written():
    """Per row: a producer map, then windows of its padded result reduced: the second stage reads
    what other iterations of the first wrote (a barrier between them, within one work-group)."""
    return fun([Array(Array(Float, M), N)], lambda x: map(
        lambda row: map(reduce(lift.add, 0.0)) << slide(3, 1) << pad(1, 1, 0.0) << map(inc) << row) << x)


def staged():
    return normalise(written())


def _pipe(n: int = 2, m: int = 12) -> Evaluator:
    pipe = Evaluator(staged(), (rand(n, m),), None, {"N": n, "M": m})
    pipe.unique = True
    return pipe


def _solutions(space, mapping) -> list[dict[str, int]]:
    """Every joint choice of `space` with `mapping` (z3, solutions blocked one by one)."""
    s, _ = space.model.solver()
    for k, v in mapping.items():
        s.add(space.model.vars[k] == v)
    out = []
    while s.check() == z3.sat:
        m = s.model()
        sol = {k: m.eval(space.model.vars[k], model_completion=True).as_long() for k in space.variables}
        out.append(sol)
        s.add(z3.Or([space.model.vars[k] != v for k, v in sol.items()]))
    return out


def _synchronises(pipe: Evaluator, joint: dict[str, int]) -> bool:
    try:
        pipe.planned(pipe.point({}, joint))
    except NotSynchronisableError:
        return False
    return True


def test_a_sometimes_synchronisable_mapping_is_tuned_only_over_valid_values() -> None:
    before = _pipe()
    every = _solutions(before.space({}), INNER_GLOBAL)
    good = [j for j in every if _synchronises(before, j)]
    assert 0 < len(good) < len(every)  # sometimes: e.g. 4 of the 40 launches at 2 x 12
    pipe = _pipe()
    space = pipe.space({})
    several = sync.launch_with(space, INNER_GLOBAL, 0)  # a launch with several work-groups in dimension 0
    assert sync.classify(pipe, pipe.point({}, several)) == sync.SOMETIMES
    assert any(c.kind == sync.ONLY for c in space.constraints)
    left = _solutions(space, INNER_GLOBAL)
    assert len(left) == len(good)  # exactly the launches that synchronise are left, counted
    assert sorted(tuple(sorted(j.items())) for j in left) == sorted(tuple(sorted(j.items())) for j in good)


def test_an_always_synchronisable_mapping_keeps_its_space() -> None:
    pipe = _pipe()
    space = pipe.space({})
    rows = {"m0": 30, "m1": 0, "m2": 0}  # rows over work-items, each row sequential: nothing to order
    n = len(_solutions(space, rows))
    assert sync.classify(pipe, pipe.point({}, sync.launch_with(space, rows, 0))) == sync.ALWAYS
    assert len(_solutions(space, rows)) == n


@pytest.mark.device
def test_a_never_synchronisable_mapping_is_never_planned(monkeypatch) -> None:
    """The barrier pass refuses the mapping at every launch (made so here, for a mapping the pass
    would accept, so that the test does not depend on finding one): it is classified "never",
    removed from the space, and no candidate with it reaches the builder after the probes."""
    refused = {"m0": 30, "m1": 31, "m2": 31}
    planned: list[str] = []
    real = Evaluator.planned

    def planned_or_refused(self, point):
        if point.mapping == refused:
            planned.append(point_key(point))
            raise NotSynchronisableError("refused by the test: never synchronisable")
        return real(self, point)

    monkeypatch.setattr(Evaluator, "planned", planned_or_refused)
    pipe = _pipe()
    space = pipe.space({})
    probe = sync.launch_with(space, refused, None)
    assert sync.classify(pipe, pipe.point({}, probe)) == sync.NEVER_SYNC
    assert any(c.kind == sync.NEVER for c in space.constraints) and not space.is_valid(refused)
    probes = len(planned)
    assert all(s["m0"] != 30 or s["m1"] != 31 for s in space.sample(40, seed=3))
    res = lift.tune(written(), rand(2, 12), budget=120, trials=16, db=False, progress=False, auto=False)
    refused_in_tune = [r for r in res.history if r.candidate.mapping == refused]
    assert all("refused by the test" not in r.reason for r in res.history)  # found before planning
    assert not refused_in_tune and res.stats["mappings"]["never"] <= 1
    assert len(planned) - probes <= 4  # the tune's own probes of the mapping (one per dimension end), nothing else


@pytest.mark.device
def test_a_tune_plans_no_unsynchronisable_candidate() -> None:
    prog, x = written(), rand(2, 24)
    res = lift.tune(prog, x, budget=120, trials=24, db=False, progress=False, auto=False)
    assert not [r for r in res.history if "NotSynchronisable" in r.reason]
    assert res.stats["mappings"]["sometimes"] >= 1 and res.stats["unsynchronisable"] >= 1
    assert all((r.ok and r.checked) or not r.ok for r in res.history)
    assert abs(float(res.best(x).sum()) - float(lift.interpret(prog, x).sum())) < 1e-2


def test_a_mapping_no_probe_can_plan_is_removed_from_its_space() -> None:
    """gemv's row sums with the atomic combine (`reduce_atomic` needs the kernel's result in global
    memory, which a row of a map is not): planned at no launch, so not proposed again."""
    sizes = {"M": 32, "N": 256}
    pipe = Evaluator(auto_points(normalise(gemv_program()), sizes), (rand(32, 256), rand(256)), None, sizes)
    pipe.unique = True
    atomic = {"auto_r0": {"combine": "atomic", "pad": False, "skip": False, "tail": False, "width": 8}}
    space = pipe.space(atomic)
    rows = {"m0": 30, "m1": 0}
    probe = sync.launch_with(space, rows, 0)
    assert probe is not None and space.is_valid(rows)
    assert sync.classify(pipe, pipe.point(atomic, probe)) == sync.UNKNOWN
    assert any(c.kind == sync.UNPLANNABLE for c in space.constraints) and not space.is_valid(rows)
    kernel = {"auto_r0": {**atomic["auto_r0"], "combine": "kernel"}}  # the other combine keeps the mapping
    assert pipe.space(kernel).is_valid(rows)
