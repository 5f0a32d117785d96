"""Tuning that transfers across sizes (issue 42, lift.explore.transfer): a winner tuned at one size
is used by `lift.compile` at other sizes where the constraints prove it valid (the default where
not), and seeds a tune at a new size."""

from __future__ import annotations

import numpy as np
import pytest

import lift
from lift.explore import TuningDB
from lift.explore.dbkeys import encode_choices
from lift.explore.evaluate import Evaluator, Record
from lift.explore.points import is_default, joint
from lift.explore.transfer import distance, moved, valid_at
from lift.rewrites import auto_points
from lift.rules.normalise import normalise
from tests.programs import gemv_program, rand

ROWS = 32


def _arrays(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    return rand(ROWS, n, seed=seed), rand(n, seed=seed + 1)


CHUNKS = {"auto_r0": {"combine": "kernel", "pad": False, "skip": False, "tail": False, "width": 4}}
JOINT = {"m0": 30, "m1": 0, "T_auto_r0": 64, "local_size_0": 16, "groups_0": 2, "local_size_1": 1, "groups_1": 1,
         "local_size_2": 1, "groups_2": 1}  # rows over work-items, chunks of 64 float4 (no tail): 256 | N


def _searched(n: int) -> Evaluator:
    """The evaluator of gemv at N = `n` as `tune` searches it (normalised, automatic points placed)."""
    expr, arrays = normalise(gemv_program()), _arrays(n)
    sizes = {"M": ROWS, "N": n}
    return Evaluator(auto_points(expr, sizes), arrays, None, sizes)


def _tuned_at_256(path) -> tuple[TuningDB, Record]:
    """A tune of gemv at N = 256 stored in the database at `path`, whose winner is then set to one
    measured candidate (`CHUNKS`, `JOINT`): the tests need a winner that is not compile's default
    and is invalid where 256 does not divide N. The database and the winner's record."""
    db = TuningDB(path)
    lift.tune(gemv_program(), *_arrays(256), budget=120, trials=2, db=db, progress=False)
    pipe = _searched(256)
    point = pipe.point(CHUNKS, JOINT)
    pipe.compute_reference()
    try:
        rec = pipe.measure(point)  # built, run and checked against the interpreter
    finally:
        pipe.close_reference()
    assert rec.ok and rec.checked, rec.reason
    (row,) = db.winners()
    entry = {**row["entry"], "choices": encode_choices(rec.choices), "candidate": encode_choices(point),
             "time": rec.time}
    assert db.store(row["key"], entry, row["info"], replace=True)
    return db, rec


def test_the_distance_of_sizes_is_symmetric_in_log_scale() -> None:
    assert distance({"N": 4096}, {"N": 8192}) == distance({"N": 4096}, {"N": 2048}) == 1.0
    assert distance({"N": 4}, {"N": 4}) == 0.0
    assert distance({"N": 4}, {"M": 4}) == float("inf")


@pytest.mark.device
def test_compiled_at_three_other_sizes_the_nearest_valid_winner_else_the_default(tmp_path, monkeypatch) -> None:
    path = tmp_path / "tuning.sqlite"
    monkeypatch.setenv("LIFTCL_TUNING_DB", str(path))
    _, rec = _tuned_at_256(path)
    expr = gemv_program()
    prog = lift.compile(expr)
    for n, transferred in ((512, True), (1024, True), (384, False)):  # 256 does not divide 384
        a, v = _arrays(n, seed=n)
        out = prog(a, v)
        assert np.allclose(out, lift.interpret(expr, a, v), rtol=1e-4, atol=1e-4)
        special = prog.specialised(a, v)
        origin = getattr(special.choices, "origin", "")
        if transferred:
            assert "nearest valid winner, tuned at M=32, N=256" in origin, origin
            assert "tuned at other sizes" in prog.specialisations[-1].reason
            assert special.choices.sizes == {"M": ROWS, "N": n}
            assert special.choices.tuning == rec.choices.tuning and special.choices.mapping == rec.choices.mapping
            assert lift.compile(expr, choices=special.choices).source == special.source  # rebuilt from its choices
        else:
            assert "nearest" not in origin and "tuned at other sizes" not in prog.specialisations[-1].reason
    a, v = _arrays(256)
    assert "tuned for these sizes" in (prog(a, v) is not None and prog.specialisations[-1].reason)


def test_validity_at_new_sizes_is_the_constraint_models() -> None:
    pipe = _searched(256)
    point = pipe.point(CHUNKS, JOINT)
    assert valid_at(pipe.expr, point, None)
    for n, valid in ((512, True), (1024, True), (384, False), (263, False)):
        at = auto_points(normalise(gemv_program()), {"M": ROWS, "N": n})
        assert valid_at(at, moved(point, {"M": ROWS, "N": n}), None) is valid, n
    wrong = point.replace(launch={**point.launch, "local_size_0": 64})  # more work-items than rows
    assert not valid_at(pipe.expr, wrong, None)


@pytest.mark.device
def test_a_tune_at_a_new_size_starts_from_the_stored_winner(tmp_path) -> None:
    db, rec = _tuned_at_256(tmp_path / "tuning.sqlite")
    a, v = _arrays(512, seed=5)
    res = lift.tune(gemv_program(), a, v, budget=120, trials=3, db=db, progress=False)
    assert res.stats["transferred"] == 1
    first = res.history[1]  # after the default lowering: the winner moved to N = 512
    assert not is_default(first.candidate) and first.ok and first.checked
    assert joint(first.candidate) == joint(rec.candidate) and first.candidate.sizes == {"M": ROWS, "N": 512}
    assert np.allclose(res.best(a, v), a @ v, rtol=1e-3)
