"""Issue 39 rows 1-6: what a tuning database, an export or a verdict cache holds is the user's (or
anyone's) data, and none of it crashes, hangs or loses rows: deeply nested JSON is a skipped row,
a malformed or future claim is stale, a read never waits for a writer's lock, `db clear` matches
keys as `db show` does, a JSON export given as `--db` is left alone, and an import with a bad row
stores the good ones and names the bad one."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

import lift
from lift import Array, Float, fun, map, reduce, zip
from lift.cli import main
from lift.devices import usable
from lift.explore import TuningDatabaseWarning, TuningDB, reuse
from lift.explore.dbkeys import liftcl_version, program_hash
from tests.programs import mult

DEEP = "[" * 200_000 + "]" * 200_000  # json's nesting limit is far below: RecursionError
WINNER = lift.Choices(mapping={"m0": 30}).to_json()
RECORD = {"choices": {"structural": {}, "joint": {"m0": 30}, "vectorise": {}, "default": False}, "ok": True,
          "reason": "", "time": 1.0, "memory": 64, "checked": True}
ROOT = Path(__file__).resolve().parents[1]


def concrete():
    return fun([Array(Float, 64), Array(Float, 64)], lambda x, y: reduce(lift.add, 0.0) << map(mult) << zip(x, y))


def info(i: int = 0, **kw) -> dict:
    return {"objective": "time", "mkey": f"p{i}", "user_program": "u", "sizes": "{}", "device": "d",
            "version": liftcl_version(), **kw}


def quiet(fn):
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in got if issubclass(w.category, TuningDatabaseWarning)]


def lift_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lift", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=300)


# --------------------------------------------------------------- row 1: deeply nested JSON


def test_deep_json_in_rows_is_a_skipped_row_never_an_exception(tmp_path: Path) -> None:
    db = TuningDB(tmp_path / "t.sqlite")
    db.store("good", {"choices": WINNER, "time": 1.0, "memory": 1}, info(0))
    db.store("deep", {"choices": WINNER, "time": 2.0, "memory": 1}, info(1))
    db.record("p0", "c-good", RECORD)
    with sqlite3.connect(db.path) as raw:
        raw.execute("UPDATE winners SET entry = ? WHERE key = 'deep'", (DEEP,))
        raw.execute("INSERT INTO winners (key, info, entry, stored) VALUES ('deep-info', ?, ?, 0)",
                    (DEEP, json.dumps({"choices": WINNER, "time": 1.0, "memory": 1})))
        raw.execute("INSERT INTO candidates VALUES ('p0', 'c-deep', ?, 'x', 0, 0)", (DEEP,))
    assert quiet(lambda: db.lookup("deep"))[0] is None
    (rows, said) = quiet(db.winners)
    assert [w["key"] for w in rows] == ["good"] and any("nested too deeply" in s for s in said)
    assert quiet(lambda: list(db.finished("p0")))[0] == ["c-good"]
    assert quiet(lambda: db.claim("p0", "c-deep"))[0] == "claimed"
    exported = quiet(db.export)[0]
    assert [w["key"] for w in exported["winners"]] == ["good"] and len(exported["candidates"]) == 1
    assert db.broken is None


def test_deep_json_in_the_winner_compile_would_reuse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIFTCL_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    dev = lift.devices.profile("pocl-cpu")
    db = TuningDB(tmp_path / "tuning.sqlite")
    db.store("k", {"choices": WINNER, "time": 1.0, "memory": 1},
             info(user_program=program_hash(concrete()), device=dev.key))
    with sqlite3.connect(db.path) as raw:
        raw.execute("UPDATE winners SET entry = ?, info = ?", (DEEP, DEEP))
    found, said = quiet(lambda: reuse.lookup(concrete(), dev))
    assert found is None and said


def test_deep_json_given_to_the_cli_is_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    db = str(tmp_path / "t.sqlite")
    r = lift_cli("db", "import", str(deep), "--db", db)
    assert r.returncode == 1 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "nested too deeply" in r.stderr
    r = lift_cli("show", "examples/dot.py", "--choices", f"@{deep}")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "nested too deeply" in r.stderr, r.stderr
    TuningDB(db).store("good", {"choices": WINNER, "time": 1.0, "memory": 1}, info(0))
    with sqlite3.connect(db) as raw:
        raw.execute("INSERT INTO winners (key, info, entry, stored) VALUES ('deep', ?, ?, 0)", (DEEP, DEEP))
    r = lift_cli("db", "list", "--db", db)
    assert r.returncode == 0 and "1 tuned problems" in r.stdout and "Traceback" not in r.stderr, r.stderr


def test_a_deep_device_verdict_is_probed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    usable.verdict_dir().mkdir(parents=True)
    (usable.verdict_dir() / "k.json").write_text('{"key": "k", "usable": true, "reason": "ok", "log": ' + DEEP + "}")
    assert usable._read("k") is None
    (usable.verdict_dir() / "k.json").write_text(json.dumps({"key": "k", "usable": True, "reason": "ok"}))
    assert usable._read("k") == usable.Verdict(True, "ok", "", "k", True)


# --------------------------------------------------------------------- row 2: claims


@pytest.mark.parametrize("owner, claimed", [
    (f"{socket.gethostname()}:99999999999999999999", 0.0),  # OverflowError from os.kill
    (f"{socket.gethostname()}:²", 0.0),  # '²'.isdigit(): ValueError from int()
    (f"{socket.gethostname()}:", 0.0), (f"{socket.gethostname()}:-5", 0.0), (f"{socket.gethostname()}:0", 0.0),
    (f"{socket.gethostname()}:1", 1e9),  # a live process, claimed a million seconds from now
    (f"{socket.gethostname()}:1", float("nan")), ("elsewhere:1", 1e9), (":1", 0.0), ("no colon", 0.0),
])
def test_a_malformed_or_future_claim_is_stale(tmp_path: Path, owner: str, claimed: float) -> None:
    db = TuningDB(tmp_path / "t.sqlite")
    db.claim("p", "other")
    with sqlite3.connect(db.path) as raw:
        raw.execute("INSERT INTO candidates VALUES ('p', 'c', NULL, ?, ?, NULL)", (owner, time.time() + claimed))
    assert db.claim("p", "c") == "claimed" and db.broken is None


def test_a_claim_stored_as_another_type_is_stale(tmp_path: Path) -> None:
    db = TuningDB(tmp_path / "t.sqlite")
    db.claim("p", "other")
    with sqlite3.connect(db.path) as raw:
        raw.execute("INSERT INTO candidates VALUES ('p', 'blob', NULL, ?, ?, NULL)", (b"\xff:1", time.time()))
        raw.execute("INSERT INTO candidates VALUES ('p', 'text', NULL, ?, 'yesterday', NULL)",
                    (f"{socket.gethostname()}:1",))
    assert db.claim("p", "blob") == "claimed" and db.claim("p", "text") == "claimed"
    with sqlite3.connect(db.path) as raw:  # a live process's fresh claim still stands
        raw.execute("INSERT INTO candidates VALUES ('p', 'live', NULL, ?, ?, NULL)",
                    (f"{socket.gethostname()}:1", time.time()))
    assert db.claim("p", "live") == "busy"


# --------------------------------------------------------- row 3: reads never take the lock


def test_reads_return_at_once_while_another_process_holds_the_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "t.sqlite"
    db = TuningDB(path)
    db.store("k", {"choices": WINNER, "time": 1.0, "memory": 1}, info(0))
    db.record("p0", "c", RECORD)
    db.close()
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE'); c.execute(\"UPDATE meta SET value = value WHERE name = 'format'\")\n"
        "print('locked', flush=True); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        start = time.monotonic()
        fresh = TuningDB(path)  # a new process's first use: connecting must not write either
        assert fresh.lookup("k")["time"] == 1.0
        assert fresh.find("u", "{}", "d") is not None and len(fresh.winners()) == 1
        assert list(fresh.finished("p0")) == ["c"] and fresh.counts()["winners"] == 1
        assert time.monotonic() - start < 5 and fresh.broken is None
    finally:
        holder.kill()
        holder.wait()


# ------------------------------------------------------------ row 4: clear matches a prefix


def test_clear_matches_key_prefixes_and_refuses_an_empty_key(tmp_path: Path) -> None:
    db = TuningDB(tmp_path / "t.sqlite")
    for i, k in enumerate(("abc1", "abd2", "x_y", "x%z")):
        db.store(k, {"choices": WINNER, "time": 1.0, "memory": 1}, info(i))
    with pytest.raises(lift.LiftError, match="non-empty"):
        db.clear("")
    assert db.clear("_") == 0 and db.clear("%") == 0 and db.clear("a_") == 0 and db.counts()["winners"] == 4
    assert db.clear("x_") == 1 and db.clear("x%") == 1 and db.clear("ab") == 2 and db.counts()["winners"] == 0


@pytest.mark.parametrize("key", ["", "_", "%", "%%"])
def test_cli_db_clear_never_empties_the_database_by_pattern(tmp_path: Path, key: str,
                                                           capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "t.sqlite"
    db = TuningDB(path)
    for i in range(3):
        db.store(f"k{i}", {"choices": WINNER, "time": 1.0, "memory": 1}, info(i))
    assert main(["db", "clear", key, "--db", str(path)]) == 2
    assert TuningDB(path).counts()["winners"] == 3 and capsys.readouterr().err.startswith("lift: ")


# ----------------------------------------------------- row 5: a JSON export given as --db


def test_a_json_export_given_as_the_database_is_left_alone(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = TuningDB(tmp_path / "t.sqlite")
    db.store("k", {"choices": WINNER, "time": 1.0, "memory": 1}, info(0))
    export = tmp_path / "export.json"
    assert main(["db", "export", str(export), "--db", str(db.path)]) == 0
    before = export.read_bytes()
    capsys.readouterr()
    for action in ("list", "clear", "export", "show"):
        assert main(["db", action, "--db", str(export)]) == 1
        err = capsys.readouterr().err
        assert "not a SQLite database" in err and "db import" in err and len(err.strip().splitlines()) == 1
    _, said = quiet(lambda: TuningDB(export).winners())
    assert any("not a SQLite database" in s for s in said)
    assert export.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir() if "export" in p.name) \
        == ["export.json"]


# -------------------------------------------------- row 6: an import with one bad row


def test_an_import_with_a_bad_row_stores_the_good_rows_and_names_the_bad(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture) -> None:
    src = TuningDB(tmp_path / "a.sqlite")
    for i in range(3):
        src.store(f"k{i}", {"choices": WINNER, "time": 1.0, "memory": 1}, info(i))
        src.record(f"p{i}", "c", RECORD)
    data = src.export()
    data["winners"][1]["info"]["sizes"] = {"N": 4}  # an object where the column holds text
    data["candidates"][0]["record"] = {"ok": "yes"}
    path = tmp_path / "export.json"
    path.write_text(json.dumps(data))
    skipped: list[str] = []
    n, _ = quiet(lambda: TuningDB(tmp_path / "b.sqlite").import_json(data, skipped=skipped))
    b = TuningDB(tmp_path / "b.sqlite")
    assert n == 4 and len(b.winners()) == 2 and b.counts()["candidates"] == 2 and b.broken is None
    assert [s.split(" (")[0] for s in skipped] == ["winner 1", "candidate 0"] and "sizes" in skipped[0]
    assert quiet(lambda: TuningDB(tmp_path / "b.sqlite").import_json(data))[0] == 0  # nothing new: 0 stored
    assert main(["db", "import", str(path), "--db", str(tmp_path / "c.sqlite")]) == 1
    out, err = capsys.readouterr()
    assert "imported 4 rows" in out and "winner 1" in err and "candidate 0" in err
    assert TuningDB(tmp_path / "c.sqlite").counts()["winners"] == 2
