"""The persistent tuning database: keys, corrupt lines, and `tune` returning the cached winner."""

from __future__ import annotations

import time

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, reduce, zip
from lift import rewrites as rw
from lift.explore import TuningDB, program_hash, shapes_key, tune, tuning_key
from tests.programs import dot_program, mult, rand

N = Size("N")


def tiled_dot():
    return fun([Array(Float, N), Array(Float, N)],
               lambda x, y: rw.split_reduce(lambda p: reduce(lift.add, 0.0) << map(mult) << p, label="R")
               << zip(x, y))


def test_program_hash_is_alpha_invariant_and_sees_point_parameters() -> None:
    assert program_hash(dot_program()) == program_hash(dot_program())  # fresh parameter ids
    assert program_hash(tiled_dot()) != program_hash(dot_program())
    sized = fun([Array(Float, N), Array(Float, N)], lambda x, y: rw.split_reduce(
        lambda p: reduce(lift.add, 0.0) << map(mult) << p, label="R", size=8) << zip(x, y))
    assert program_hash(sized) != program_hash(tiled_dot())


def test_key_depends_on_shapes_device_and_objective() -> None:
    x = rand(64)
    k = tuning_key(dot_program(), (x, x), "dev", "time")
    assert k == tuning_key(dot_program(), (x, x), "dev", "time")
    assert k != tuning_key(dot_program(), (rand(32), rand(32)), "dev", "time")
    assert k != tuning_key(dot_program(), (x, x), "other", "time")
    assert k != tuning_key(dot_program(), (x, x), "dev", "memory")
    assert shapes_key((x, (x, rand(2, 3)))) == "float32[64],(float32[64],float32[2, 3])"


def test_store_and_lookup_the_latest_entry_skipping_corrupt_lines(tmp_path) -> None:
    db = TuningDB(tmp_path / "t.jsonl")
    assert db.lookup("k") is None
    db.store("k", {"choices": {"default": True}, "time": 2.0})
    with open(db.path, "a") as fh:
        fh.write('{"key": "k", "choices": \n')  # a write cut short
        fh.write("not json at all\n")
        fh.write('{"key": "k", "version": 1}\n')  # no choices
        fh.write('[1, 2]\n')
    db.store("k", {"choices": {"default": False}, "time": 1.0})
    db.store("other", {"choices": {}, "time": 9.0})
    got = db.lookup("k")
    assert got is not None and got["time"] == 1.0 and got["choices"] == {"default": False}
    assert len(db.entries()) == 3


def test_default_location_is_under_the_liftcl_cache(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert TuningDB().path == tmp_path / "liftcl" / "tuning.jsonl"


@pytest.mark.device
def test_tune_returns_the_cached_winner_instantly_unless_refresh(tmp_path) -> None:
    x, y = rand(1 << 12), rand(1 << 12, seed=1)
    db = TuningDB(tmp_path / "tuning.jsonl")
    first = tune(tiled_dot(), x, y, budget=2, db=db, progress=False)
    assert not first.cached and len(db.entries()) == 1
    t0 = time.perf_counter()
    again = tune(tiled_dot(), x, y, budget=30, db=db, progress=False)
    assert again.cached and time.perf_counter() - t0 < 5
    assert again.choices == first.choices and len(again.history) == 1
    assert np.allclose(again.best(x, y), np.dot(x, y), rtol=1e-3)
    fresh = tune(tiled_dot(), x, y, budget=1, db=db, progress=False, refresh=True)
    assert not fresh.cached and len(db.entries()) == 2
