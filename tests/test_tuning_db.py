"""The SQLite tuning database: keys, winners, shared candidates, malformed rows, broken files,
export/import, and `tune` returning the cached winner or resuming from stored candidates."""

from __future__ import annotations

import json
import os
import sqlite3
import time

import numpy as np
import pytest

import lift
from lift import Array, Float, Size, fun, map, reduce, zip
from lift import rewrites as rw
from lift.explore import TuningDatabaseWarning, TuningDB, measure_key, program_hash, shapes_key, tune, tuning_key
from lift.explore.points import default_point, point
from lift.explore.points import key as point_key
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


CHOICES = {"structural": {}, "joint": {"m0": 30}, "vectorise": {}, "default": False}  # a search candidate
WINNER = lift.Choices(mapping={"m0": 30}).to_json()  # a winner's lift.Choices


def record(t: float, **joint: int) -> dict:
    return {"choices": {**CHOICES, "joint": joint}, "ok": True, "reason": "", "time": t, "memory": 64,
            "checked": True}


def test_measure_key_ignores_the_objective_and_the_tuning_key_does_not() -> None:
    x = rand(64)
    assert measure_key(dot_program(), (x, x), "dev") == measure_key(dot_program(), (x, x), "dev")
    assert tuning_key(dot_program(), (x, x), "dev", "time") != measure_key(dot_program(), (x, x), "dev")


def test_winner_is_replaced_only_by_a_better_one(tmp_path) -> None:
    db = TuningDB(tmp_path / "t.sqlite")
    assert db.lookup("k") is None
    assert db.store("k", {"choices": WINNER, "time": 2.0, "memory": 10}, {"objective": "time"})
    assert not db.store("k", {"choices": WINNER, "time": 3.0, "memory": 1}, {"objective": "time"})
    assert db.lookup("k")["time"] == 2.0
    assert db.store("k", {"choices": WINNER, "time": 1.0, "memory": 10}, {"objective": "time"})
    assert db.store("k", {"choices": WINNER, "time": 5.0, "memory": 10}, {"objective": "time"}, replace=True)
    assert db.lookup("k")["time"] == 5.0
    assert db.store("m", {"choices": WINNER, "time": 2.0, "memory": 10}, {"objective": "memory"})
    assert db.store("m", {"choices": WINNER, "time": 9.0, "memory": 5}, {"objective": "memory"})
    assert len(db.winners()) == 2 and db.path.with_name("t.sqlite-wal").exists()  # WAL mode


def test_candidates_claims_and_records(tmp_path) -> None:
    db = TuningDB(tmp_path / "t.sqlite")
    assert db.claim("p", "c1") == "claimed"
    assert db.claim("p", "c1") == "claimed"  # our own claim
    db.record("p", "c1", record(1.0))
    assert db.claim("p", "c1") == "finished" and db.finished("p") == {"c1": record(1.0)}
    db.record("p", "c1", record(9.0))  # the first result stays
    assert db.finished("p")["c1"]["time"] == 1.0
    with sqlite3.connect(db.path) as raw:  # claims by a live and by a dead process
        raw.execute("INSERT INTO candidates VALUES ('p', 'live', NULL, ?, ?, NULL)",
                    (f"{os.uname().nodename}:1", time.time()))
        raw.execute("INSERT INTO candidates VALUES ('p', 'dead', NULL, ?, ?, NULL)",
                    (f"{os.uname().nodename}:999999999", time.time()))
        raw.execute("INSERT INTO candidates VALUES ('p', 'old', NULL, 'elsewhere:1', 0, NULL)")
    assert db.claim("p", "live") == "busy"
    assert db.claim("p", "dead") == "claimed" and db.claim("p", "old") == "claimed"
    assert db.counts() == {"winners": 0, "candidates": 1, "claims": 3}


def test_malformed_and_foreign_rows_are_ignored_with_a_warning(tmp_path) -> None:
    db = TuningDB(tmp_path / "t.sqlite")
    db.record("p", "good", record(1.0))
    db.store("w", {"choices": WINNER, "time": 1.0, "memory": 1}, {"objective": "time"})
    with sqlite3.connect(db.path) as raw:
        bad_types, no_time = {**record(1.0), "choices": {"structural": 5}}, {**record(1.0), "time": None}
        for cand, text in (("cut", '{"choices": '), ("list", "[1, 2]"), ("types", json.dumps(bad_types)),
                           ("no-time", json.dumps(no_time))):
            raw.execute("INSERT INTO candidates VALUES ('p', ?, ?, 'x', 0, 0)", (cand, text))
        raw.execute("UPDATE winners SET entry = ? WHERE key = 'w'", (json.dumps({"choices": {"joint": {"a": "b"}}}),))
    with pytest.warns(TuningDatabaseWarning, match="malformed"):
        assert list(db.finished("p")) == ["good"]
    with pytest.warns(TuningDatabaseWarning, match="malformed"):
        assert db.lookup("w") is None


def test_a_file_that_is_not_a_tuning_database_warns(tmp_path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not sqlite at all, " * 100)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as raw:
        raw.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT)")
        raw.execute("INSERT INTO meta VALUES ('format', 'something else')")
    for path in (text, other):
        db = TuningDB(path)
        with pytest.warns(TuningDatabaseWarning, match="cannot be read"):
            assert db.lookup("k") is None
        assert db.broken and not db.store("k", {"choices": WINNER, "time": 1.0, "memory": 1})


def test_export_and_import(tmp_path) -> None:
    db = TuningDB(tmp_path / "a.sqlite")
    db.record("p", "c1", record(1.0, m0=30))
    db.store("k", {"choices": WINNER, "time": 1.0, "memory": 64}, {"objective": "time", "mkey": "p"})
    data = json.loads(json.dumps(db.export()))
    other = TuningDB(tmp_path / "b.sqlite")
    assert other.import_json(data) == 2
    assert other.lookup("k")["time"] == 1.0 and len(other.finished("p")) == 1
    with pytest.raises(ValueError, match="not a"):
        other.import_json({"winners": []})
    assert other.clear("k") == 1 and other.lookup("k") is None and other.finished("p") == {}


def test_default_location_is_under_the_liftcl_cache(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("LIFTCL_TUNING_DB", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert TuningDB().path == tmp_path / "liftcl" / "tuning.sqlite"
    monkeypatch.setenv("LIFTCL_TUNING_DB", str(tmp_path / "mine.sqlite"))
    assert TuningDB().path == tmp_path / "mine.sqlite"


@pytest.mark.device
def test_tune_returns_the_cached_winner_instantly_unless_refresh(tmp_path) -> None:
    x, y = rand(1 << 12), rand(1 << 12, seed=1)
    db = TuningDB(tmp_path / "tuning.sqlite")
    first = tune(tiled_dot(), x, y, budget=2, db=db, progress=False)
    assert not first.cached and len(db.winners()) == 1
    assert first.stats["measured"] == len(first.history) == db.counts()["candidates"]
    t0 = time.perf_counter()
    again = tune(tiled_dot(), x, y, budget=30, db=db, progress=False)
    assert again.cached and time.perf_counter() - t0 < 5
    assert again.choices == first.choices and len(again.history) == 1
    assert np.allclose(again.best(x, y), np.dot(x, y), rtol=1e-3)
    fresh = tune(tiled_dot(), x, y, budget=1, db=db, progress=False, refresh=True)
    assert not fresh.cached and fresh.stats["from_database"] == 0 and len(db.winners()) == 1


@pytest.mark.device
def test_a_tune_without_its_winner_resumes_from_the_stored_candidates(tmp_path) -> None:
    """A tune stopped before the end left its finished candidates: the next one reuses them."""
    x, y = rand(1 << 10), rand(1 << 10, seed=1)
    db = TuningDB(tmp_path / "tuning.sqlite")
    first = tune(tiled_dot(), x, y, budget=2, db=db, progress=False)
    done = db.counts()["candidates"]
    db.clear()  # the winner and the candidates gone ...
    for r in first.history:  # ... and the candidates back, as a stopped tune leaves them
        db.record(measure_key_of(first, x, y), point_key(r.candidate), r.to_json())
    again = tune(tiled_dot(), x, y, budget=2, db=db, progress=False)
    assert not again.cached and again.stats["from_database"] >= done
    assert again.stats["measured"] + again.stats["from_database"] == len(again.history)


def measure_key_of(result, *arrays) -> str:
    from lift.explore.tune import _device, _search_space, _sizes

    expr, _, _ = _search_space(tiled_dot(), _sizes(tiled_dot(), arrays), True)
    return measure_key(expr, arrays, _device(None).key)


@pytest.mark.device
def test_tune_survives_a_malformed_entry_and_an_unwritable_database(tmp_path) -> None:
    """Issue 14 item 5: a malformed entry raised a raw TypeError, and an unwritable database
    FileExistsError / IsADirectoryError after the whole search (the result lost)."""
    x, y = rand(1 << 10), rand(1 << 10, seed=1)
    db = TuningDB(tmp_path / "tuning.sqlite")
    first = tune(tiled_dot(), x, y, budget=1, db=db, progress=False)
    with sqlite3.connect(db.path) as raw:
        raw.execute("UPDATE winners SET entry = ?", (json.dumps({"choices": {"structural": 5}, "time": 1}),))
        raw.execute("UPDATE candidates SET record = '{\"ok\": 3'")
    with pytest.warns(TuningDatabaseWarning, match="malformed"):
        again = tune(tiled_dot(), x, y, budget=1, db=db, progress=False)
    assert not again.cached and again.best_record.ok and first.best_record.ok
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "a-dir").mkdir()
    for bad in (tmp_path / "a-file" / "tuning.sqlite", tmp_path / "a-dir"):
        with pytest.warns(TuningDatabaseWarning, match="cannot be"):
            res = tune(tiled_dot(), x, y, budget=0.5, db=str(bad), progress=False)
        assert res.best_record.ok and np.allclose(res.best(x, y), np.dot(x, y), rtol=1e-3)


@pytest.mark.device
def test_compile_uses_the_tuned_winner_of_a_concrete_program(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LIFTCL_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    concrete = lambda: fun([Array(Float, 1024), Array(Float, 1024)],  # noqa: E731
                           lambda x, y: reduce(lift.add, 0.0) << map(mult) << zip(x, y))
    x, y = rand(1024), rand(1024, seed=1)
    plain = lift.compile(concrete())
    assert not getattr(plain.choices, "origin", "")
    res = tune(concrete(), x, y, budget=120, trials=4, progress=False)
    prog = lift.compile(concrete())
    assert "tuning database" in prog.choices.origin
    assert prog.choices == res.choices and prog.choices.to_json() == res.choices.to_json()
    assert prog.source == res.best.source and np.allclose(prog(x, y), np.dot(x, y), rtol=1e-3)
    assert not getattr(lift.compile(dot_program()).choices, "origin", "")  # symbolic: never from the database
    assert not getattr(lift.compile(concrete(), choices={}).choices, "origin", "")  # explicit choices win
    monkeypatch.setenv("LIFTCL_USE_TUNED", "0")
    assert not getattr(lift.compile(concrete()).choices, "origin", "")  # turned off


@pytest.mark.device
def test_the_default_candidate_records_the_choices_compile_reports() -> None:
    """A tune whose winner is the default lowering stores choices that `lift.compile` reports back
    unchanged (the skipped automatic point's open width was filled by compile, not by the tuner)."""
    from lift.explore.evaluate import Evaluator
    from lift.explore.points import default_point
    from lift.explore.tune import _device, _search_space, _sizes

    prog = fun([Array(Float, 1024), Array(Float, 1024)], lambda x, y: reduce(lift.add, 0.0) << map(mult) << zip(x, y))
    args = (rand(1024), rand(1024, seed=1))
    sizes = _sizes(prog, args)
    expr, structural, _ = _search_space(prog, sizes, True)
    pipe = Evaluator(expr, args, _device(None), sizes)
    default = default_point(structural)
    plan, recorded = pipe.plan(default)
    built = pipe.compile(recorded)
    assert built.choices == recorded and built.source == plan.source


def test_a_search_points_key_is_the_key_its_rows_had_as_a_candidate() -> None:
    """The database keys of search points (`lift.Choices`) are the strings the older `Candidate`
    form had (`json.dumps(Candidate.to_json(), sort_keys=True)`), so rows stored before keep
    their keys: written out here as the older code printed them."""
    p = point({"a": {"skip": False, "w": 8}}, {"m0": 30, "T": 4, "local_size_0": 8}, {"m1": 4}, maps=["m0"],
              sizes={"N": 64})
    assert p.mapping == {"m0": 30} and p.tuning == {"T": 4} and p.launch == {"local_size_0": 8}
    assert point_key(p) == ('{"default": false, "joint": {"T": 4, "local_size_0": 8, "m0": 30}, '
                            '"structural": {"a": {"skip": false, "w": 8}}, "vectorise": {"m1": 4}}')
    assert point_key(default_point({"a": {}})) == ('{"default": true, "joint": {}, '
                                                    '"structural": {"a": {"skip": true}}, "vectorise": {}}')


@pytest.mark.device
def test_rows_written_in_the_older_candidate_form_are_read_back_as_search_points(tmp_path) -> None:
    """A database filled before search points were `lift.Choices`: its rows (the older JSON
    form, under the older keys) are found by the points the tuner proposes now, read back sorted
    by the program's space, survive an export and import, and new rows are written as `Choices`."""
    from lift.explore.evaluate import Evaluator, Record
    from lift.explore.shared import SharedWork
    from lift.explore.tune import _sizes

    x, y = rand(1 << 10), rand(1 << 10, seed=1)
    pipe = Evaluator(tiled_dot(), (x, y), None, _sizes(tiled_dot(), (x, y)))
    structural = {"R": {"skip": False}}
    joint = dict(pipe.space(structural).sample(1, seed=0)[0])
    now, default = pipe.point(structural, joint), default_point(structural)
    assert now.mapping and now.sizes == pipe.sizes
    db = TuningDB(tmp_path / "old.sqlite")
    old_rows = {'{"default": false, "joint": ' + json.dumps(joint, sort_keys=True)
                + ', "structural": {"R": {"skip": false}}, "vectorise": {}}':
                {"choices": {"structural": structural, "joint": joint, "vectorise": {}, "default": False},
                 "ok": True, "reason": "", "time": 2e-3, "memory": 64, "checked": True},
                '{"default": true, "joint": {}, "structural": {"R": {"skip": true}}, "vectorise": {}}':
                {"choices": {"structural": {"R": {"skip": True}}, "joint": {}, "vectorise": {}, "default": True},
                 "ok": True, "reason": "", "time": 3e-3, "memory": 64, "checked": True}}
    for key, row in old_rows.items():
        db.record("m", key, row)
    copy = TuningDB(tmp_path / "copy.sqlite")
    assert copy.import_json(json.loads(json.dumps(db.export()))) == 2
    for base in (db, copy):
        work = SharedWork(pipe, base, "m")
        assert set(work.known) == {point_key(now), point_key(default)} == set(old_rows)
        got, dflt = work.claim(now), work.claim(default)
        assert got.candidate == now and got.time == 2e-3 and got.ok and got.checked
        assert dflt.candidate == default and dflt.time == 3e-3
    fresh = point(structural, joint, {"extra": 4}, maps=now.mapping, sizes=pipe.sizes)
    SharedWork(pipe, db, "m").finish(fresh, Record(fresh, True, "", 1e-3, 64, True))
    stored = db.finished("m")[point_key(fresh)]["choices"]
    assert stored["format"] == 1 and lift.Choices.from_json(stored) == fresh

