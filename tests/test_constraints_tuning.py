"""Tuning constraints (thesis 4.3): inference, simplification, Algorithm 2 range reduction."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, join, map, slide, split, to_local, zip
from lift.arith import Cst, Var
from lift.constraints import Pred, TuningParam, reduce_ranges, simplify, tuning_space
from lift.constraints import tuning as tn
from lift.errors import UnsatisfiableError
from tests.programs import mult, rand

N = Size("N")
T, S = Size("T"), Size("S")


def _c(name: str, pred: Pred):
    return tn.pred_constraint(tn.BOUNDS, pred, (name,), name, "algorithmic")


def test_range_reduction_equation_4_11_symbolic() -> None:
    a, b, e = Var("a", Cst(1), None), Var("b", Cst(1), None), Var("e", Cst(1), None)
    d = Var("d", e + 1, None)  # d > e
    t1, t2, t3 = Var("t1", Cst(1), None), Var("t2", Cst(1), None), Var("t3", Cst(1), None)
    params = {"t1": TuningParam("t1", Cst(1), b), "t2": TuningParam("t2", Cst(1), (a * b) // t1),
              "t3": TuningParam("t3", Cst(1), d)}
    c1, c2 = _c("c1", Pred(">=", t1, b)), _c("c2", Pred("<=", t3, (e * t2) // a))
    left, cons, fixed = reduce_ranges(params, [c1, c2])
    assert fixed == {"t1": b}  # t1 eliminated: its range is [b..b]
    assert set(left) == {"t2", "t3"}
    assert left["t2"].lo == 1 and left["t2"].hi == a  # [1..ab/b] -> [1..a]
    assert left["t3"].lo == 1 and left["t3"].hi == e  # c2 with t2 <= a gives t3 <= e
    assert cons == [c2]  # c1 consumed, c2 kept (t2 takes several values)


def test_range_reduction_equation_4_11_concrete() -> None:
    a, b, d, e = 4, 8, 10, 6
    t1, t2, t3 = (Var(x, Cst(1), None) for x in ("t1", "t2", "t3"))
    params = {"t1": TuningParam("t1", Cst(1), Cst(b)), "t2": TuningParam("t2", Cst(1), (a * b) // t1),
              "t3": TuningParam("t3", Cst(1), Cst(d))}
    c2 = _c("c2", Pred("<=", t3, (e * t2) // a))
    left, cons, fixed = reduce_ranges(params, [_c("c1", Pred(">=", t1, Cst(b))), c2])
    assert fixed == {"t1": 8}
    assert (left["t2"].hi, left["t3"].hi) == (Cst(a), Cst(e)) and cons == [c2]


def test_deduplication_equation_4_8() -> None:
    x, y, a = Var("x", Cst(1), None), Var("y", Cst(1), None), Var("a", Cst(1), None)
    c1 = tn.pred_constraint(tn.DIVISIBILITY, Pred("==", (x * x + 2 * x * y + y * y) % a, Cst(0)), (), "4.8a", "")
    c2 = tn.pred_constraint(tn.DIVISIBILITY, Pred("==", ((x + y) * (x + y)) % a, Cst(0)), (), "4.8b", "")
    kept, dropped = simplify({}, [c1, c2])
    assert kept == [c1] and dropped[0][0] == c2 and "duplicate" in dropped[0][1]


def test_deduplication_equation_4_9() -> None:
    """x/a + y/a == (x+y)/a needs exact division: with x and y multiples of a (as split sizes are)."""
    x, y, a, b = (Var(v, Cst(1), None) for v in "xyab")
    c1 = tn.pred_constraint(tn.DIVISIBILITY, Pred("==", (x // a + y // a) % b, Cst(0)), (), "4.9a", "")
    c2 = tn.pred_constraint(tn.DIVISIBILITY, Pred("==", ((x + y) // a) % b, Cst(0)), (), "4.9b", "")
    ctx = [tn.pred_constraint(tn.DIVISIBILITY, Pred("==", v % a, Cst(0)), (), f"{v} % a", "") for v in (x, y)]
    kept, dropped = simplify({}, [c1, c2, *ctx])
    assert c1 in kept and c2 not in kept and [d for d, _ in dropped] == [c2]
    kept, _ = simplify({}, [c1, c2])  # floor division: not equivalent (x = y = 1, a = 2, b = 2)
    assert kept == [c1, c2]


def test_entailed_constraints_are_dropped_4_6_and_4_7() -> None:
    x, a = Var("x", Cst(1), Cst(10)), Var("a", Cst(11), Cst(20))
    c1 = tn.pred_constraint(tn.POSITIVITY, Pred(">", a - x, Cst(0)), (), "a - x > 0 with a > x", "")
    c2 = tn.pred_constraint(tn.DIVISIBILITY, Pred("==", (4 * x) % 2, Cst(0)), (), "4x % 2 == 0", "")
    kept, dropped = simplify({}, [c1, c2])
    assert kept == [] and {why for _, why in dropped} == {"entailed by the parameter ranges"}


def tiled_dot():
    return fun([Array(Float, N), Array(Float, N)],
               lambda x, y: lift.reduce(lift.add, 0.0) << map(lambda c: lift.reduce(lift.add, 0.0) << map(mult) << c)
               << split(T) << zip(x, y))


def test_split_constraints_are_inferred_and_reduced() -> None:
    sp = tuning_space(tiled_dot(), "pocl-cpu")
    kinds = {c.kind for c in sp.constraints}
    assert tn.DIVISIBILITY in kinds
    assert "T" in sp.params and sp.params["T"].hi == N  # T <= N consumed by Algorithm 2
    sp = tuning_space(tiled_dot(), "pocl-cpu", sizes={"N": 96})
    values = sorted(c["T"] for c in sp.sample(50, seed=0))
    assert values == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96] and sp.count() == 12
    assert not sp.is_valid({"T": 5})
    x, y = rand(96), rand(96, seed=1)
    for c in sp.sample(4, seed=2):
        assert np.isclose(lift.interpret(sp.realise(c), x, y), float(np.dot(x, y)), rtol=1e-4)


def test_strict_slide_coverage_for_tiling_slides() -> None:
    prog = fun([Array(Float, N)], lambda x: map(lambda w: lift.reduce(lift.add, 0.0) << w) << slide(S, T) << x)
    sp = tuning_space(prog, "pocl-cpu", sizes={"N": 12})
    assert tn.COVERAGE in sp.stats()
    for c in sp.sample(20, seed=0):
        assert (12 - c["S"]) % c["T"] == 0 and c["S"] <= 12


def test_local_memory_hardware_constraint_and_unsat_core() -> None:
    M = Size("M")
    prog = fun([Array(Array(Float, N), M)],
               lambda a: lift.map_wrg(lambda r: join << lift.map_lcl(lift.map_seq(lift.to_global(lift.id)))
                                      << split(T) << to_local(lift.map_lcl(lift.id)) << r) << a)
    sp = tuning_space(prog, "mali-g72", sizes={"N": 4096, "M": 4})
    assert sp.stats().get(tn.LOCAL_MEM, 0) == 0  # 16 KiB fit, entailed and dropped
    assert any(c.kind == tn.LOCAL_MEM for c, _ in sp.dropped)
    with pytest.raises(UnsatisfiableError) as e:
        tuning_space(prog, "mali-g72", sizes={"N": 1 << 14, "M": 4})  # 64 KiB > 32 KiB
    assert [c.kind for c in e.value.core] == [tn.LOCAL_MEM]
    assert "local buffers" in str(e.value)


def test_unsatisfiable_split_reports_its_core() -> None:
    prog = fun([Array(Float, N)], lambda x: join << map(map(lift.id)) << split(T) << x)
    with pytest.raises(UnsatisfiableError) as e:
        tuning_space(prog, "pocl-cpu", sizes={"N": 7}).check({"T": 2})
    assert {c.kind for c in e.value.core} == {tn.DIVISIBILITY}
