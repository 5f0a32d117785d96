"""Fuzzing the tuning database's contents (issue 39): hostile rows, JSON, claims, schema versions, and
locked, read-only or foreign files, driven through `TuningDB` and `lift db`.

    python tests/fuzz_db.py --minutes 10 [--seed 1] [--timeout 60] [--show 5]

Each case builds a database of good winners and candidates through the public API, then adds what
a hand edit, another version or another user could leave there, straight through SQLite: rows whose
JSON is deeply nested, cut, of the wrong types or not text at all, claims with odd owners and dates
(in the future, not numbers), a changed or missing schema version; or it puts a JSON export, a text
file, an empty file or a folder where the database should be; or it holds the write lock from
another connection while reading, or makes the file read-only. Then it reads everything back
(`winners`, `lookup`, `find`, `finished`, `claim`, `counts`, `export`), runs `lift db list / show /
export / import / clear`, imports the export with hostile rows appended into a fresh database, and
clears by random key prefixes. Rows:

- ok: every promise held; *unusable* (ok too): the schema version or the file is not ours, and the
  database said so (warned, the CLI exited 1) without touching the file;
- raw crash: an exception that is not a `LiftError` (the CLI: a traceback instead of an exit status);
- hang: no result within `--timeout` (a read waiting for the write lock counts once it takes 5 s);
- lost rows: a good winner or candidate not read back, not exported, not imported, or removed by a
  clear whose prefix it does not start with, or a file of the user's changed;
- wrong count: `import_json` or `clear` said a number other than what they stored or removed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fuzz_runner import main as fuzz_main
from fuzz_runner import run

ROWS = ("ok", "unusable", "raw crash", "hang", "lost rows", "wrong count")
OK_ROWS = ("ok", "unusable")
SLOW_READ_S = 5.0


class Bad(Exception):
    """A broken promise: its row and what happened."""

    def __init__(self, row: str, detail: str) -> None:
        super().__init__(detail)
        self.row = row


# ------------------------------------------------------------------------ strategies


def json_texts() -> Any:
    """What a JSON column may hold: nested past json's limit, cut, of the wrong shape, not text."""
    from hypothesis import strategies as st

    small = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                         lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                         max_leaves=8)
    deep = st.builds(lambda n, o: "[" * n + "1" + "]" * n if o == "[" else '{"a":' * n + "1" + "}" * n,
                     st.sampled_from([500, 5000, 200_000]), st.sampled_from(["[", "{"]))
    return st.one_of(
        deep, small.map(json.dumps), st.text(max_size=20), st.binary(max_size=20),
        st.integers(min_value=-(2**63), max_value=2**63 - 1), st.floats(), st.none(),
        st.sampled_from(['{"choices": ', "NaN", "1e999", "-Infinity", '{"ok": true}', '{"choices": {"joint": 5}}',
                         '{"choices": {}, "time": "fast"}', '{"choices": {}, "time": 1e999, "memory": -1}',
                         "[" * 20 + "]" * 20, "\ud800", '{"a": "\\ud800"}']))


def claim_owners() -> Any:
    import socket

    from hypothesis import strategies as st

    host = socket.gethostname()
    return st.one_of(
        st.sampled_from([f"{host}:99999999999999999999", f"{host}:²", f"{host}:", f"{host}:-1", f"{host}:0",
                         f"{host}:1", f"{host}:{os.getpid()}", "elsewhere:1", ":1", "", "no colon", f"{host}:٣"]),
        st.text(max_size=12), st.binary(max_size=8), st.integers(-(2**63), 2**63 - 1), st.none())


def claim_dates() -> Any:
    from hypothesis import strategies as st

    now = time.time()
    return st.one_of(st.sampled_from([now, now - 1e6, now + 1e6, now + 30, float("nan"), float("inf"),
                                      -float("inf"), 0.0]),
                     st.floats(), st.text(max_size=6), st.binary(max_size=4), st.none(),
                     st.integers(-(2**63), 2**63 - 1))


@dataclass(frozen=True)
class Scenario:
    good_winners: int
    good_candidates: int
    hostile: tuple[tuple[str, str, Any, Any], ...]  # (table, key, json-ish value, another)
    claims: tuple[tuple[Any, Any], ...]  # (owner, claimed)
    meta: str | None  # "version", "format", "drop", "extra" or None
    file: str | None  # "readonly", "locked", "export", "text", "empty", "dir" or None
    prefixes: tuple[str, ...]
    imported: tuple[Any, ...]  # hostile rows appended to an export before importing it


def scenarios() -> Any:
    from hypothesis import strategies as st

    keys = st.text(alphabet="0123456789abcdefgoodh_%*?[]\\' \n\0é", max_size=6)
    hostile = st.tuples(st.sampled_from(["winner-entry", "winner-info", "candidate", "winner-columns"]),
                        keys, json_texts(), json_texts())
    imported = st.one_of(json_texts().map(lambda t: ("text", t)),
                         st.tuples(st.just("winner"), st.dictionaries(
                             st.sampled_from(["key", "info", "entry", "stored"]),
                             st.one_of(json_texts(), st.dictionaries(st.sampled_from(
                                 ["sizes", "mkey", "device", "user_program", "version", "objective"]), json_texts(),
                                 max_size=3)), max_size=4)),
                         st.tuples(st.just("candidate"), st.dictionaries(st.sampled_from(["mkey", "record"]),
                                                                         json_texts(), max_size=2)))
    return st.builds(
        Scenario, st.integers(1, 3), st.integers(0, 3), st.lists(hostile, max_size=5).map(tuple),
        st.lists(st.tuples(claim_owners(), claim_dates()), max_size=4).map(tuple),
        st.sampled_from([None] * 6 + ["version", "format", "drop", "extra"]),
        st.sampled_from([None] * 6 + ["readonly", "locked", "locked", "export", "text", "empty", "dir"]),
        st.lists(keys, max_size=3).map(tuple), st.lists(imported, max_size=4).map(tuple))


# ------------------------------------------------------------------------------ judge

WINNER_CHOICES: dict[str, Any] = {}


def judge(s: Scenario) -> tuple[str, str]:
    """Run a scenario in a fresh folder; its row and what happened."""
    with tempfile.TemporaryDirectory(prefix="fuzz-db-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _judge(s, Path(tmp))
        except Bad as bad:
            return bad.row, str(bad)
        except Exception as err:  # noqa: BLE001 - a LiftError never reaches here: each call checks its own
            import traceback

            where = traceback.extract_tb(err.__traceback__)[-1]
            return "raw crash", f"{type(err).__name__}: {str(err)[:300]} at {where.filename}:{where.lineno}"


def _judge(s: Scenario, tmp: Path) -> tuple[str, str]:
    import lift
    from lift.explore import TuningDB
    from lift.explore.dbkeys import liftcl_version

    path = tmp / "tuning.sqlite"
    good = TuningDB(path)
    winners, cands = {}, {}
    choices = lift.Choices(mapping={"m0": 30}).to_json()
    for i in range(s.good_winners):
        key = f"good{i}"
        winners[key] = 1.0 + i
        good.store(key, {"choices": choices, "time": 1.0 + i, "memory": 1},
                   {"objective": "time", "mkey": f"m{i}", "user_program": "u", "sizes": "{}", "device": "d",
                    "version": liftcl_version()})
    for i in range(s.good_candidates):
        rec = {"choices": {"structural": {}, "joint": {"m0": 10 + i}, "vectorise": {}, "default": False},
               "ok": True, "reason": "", "time": 1.0 + i, "memory": 64, "checked": True}
        good.record("m0", f"c{i}", rec)
        cands[f"c{i}"] = 1.0 + i
    good.close()
    _hostile(path, s)
    if s.file in ("export", "text", "empty", "dir"):
        return _foreign(s, tmp)
    unusable = s.meta in ("version", "format")
    lock = _Locker(path) if s.file == "locked" else None
    if s.file == "readonly":
        os.chmod(path, 0o444)
    try:
        db = TuningDB(path)
        start = time.monotonic()
        found = _call(db.winners)
        got = {w["key"]: w["entry"].get("time") for w in found}
        if time.monotonic() - start > SLOW_READ_S:
            raise Bad("hang", f"reading took {time.monotonic() - start:.1f} s while another connection held the lock")
        if unusable:
            if db.broken is None:
                raise Bad("lost rows", f"a database of another schema ({s.meta}) was read as ours: {got}")
            _still_there(path, winners)
            return "unusable", f"schema {s.meta}: {db.broken[:80]}"
        for key, t in winners.items():
            if got.get(key) != t or (_call(lambda k=key: db.lookup(k)) or {}).get("time") != t:
                raise Bad("lost rows", f"winner {key} not read back ({got.get(key)!r}); broken: {db.broken}")
        finished = _call(lambda: db.finished("m0"))
        if any(finished.get(c, {}).get("time") != t for c, t in cands.items()):
            raise Bad("lost rows", f"candidates {sorted(cands)} read back as {sorted(finished)}")
        if _call(lambda: db.find("u", "{}", "d")) is None:
            raise Bad("lost rows", "find() found none of the good winners")
        _call(db.counts)
        data = _call(db.export)
        if lock is not None:  # writes wait for the lock (up to SQLite's busy timeout): the reads did not
            lock.release()
            lock = None
        for k in range(len(s.claims)):
            _claim(db, k)
        _cli(["db", "list", "--db", str(path)], (0,))
        for p in s.prefixes[:1]:
            _cli(["db", "show", p, "--db", str(path)], (0, 1, 2))
        _import(s, tmp, data, winners, cands)
        _clear(s, path, set(got) | set(winners))
        return "ok", f"{len(winners)} winners, {len(cands)} candidates, {len(s.hostile)} hostile rows"
    finally:
        if lock is not None:
            lock.release()
        with contextlib.suppress(OSError):
            os.chmod(path, 0o644)


def _hostile(path: Path, s: Scenario) -> None:
    """The scenario's rows, claims and schema changes, written straight through SQLite."""

    with contextlib.closing(sqlite3.connect(path)) as raw, raw:
        for k, row in enumerate(s.hostile):
            # NaN is NULL to SQLite (a NOT NULL column refuses it); Python cannot write a lone surrogate
            with contextlib.suppress(sqlite3.IntegrityError, UnicodeEncodeError):
                _one_hostile(raw, k, *row)
        # text that is not UTF-8, as a C tool can leave it: bytes cast to TEXT
        raw.execute("UPDATE winners SET info = CAST(info AS TEXT) WHERE typeof(info) = 'blob'")
        raw.execute("UPDATE winners SET entry = CAST(entry AS TEXT) WHERE typeof(entry) = 'blob'")
        raw.execute("UPDATE candidates SET record = CAST(record AS TEXT) WHERE typeof(record) = 'blob'")
        for k, (owner, claimed) in enumerate(s.claims):
            raw.execute("INSERT OR REPLACE INTO candidates VALUES ('m0', ?, NULL, ?, ?, NULL)",
                        (f"claim{k}", owner, claimed))
        raw.execute("UPDATE candidates SET owner = CAST(owner AS TEXT) WHERE typeof(owner) = 'blob' "
                    "AND cand >= 'claim2'")
        if s.meta == "version":
            raw.execute("UPDATE meta SET value = '999' WHERE name = 'version'")
        elif s.meta == "format":
            raw.execute("UPDATE meta SET value = 'someone else' WHERE name = 'format'")
        elif s.meta == "drop":  # an old file without its meta rows: they are written again
            raw.execute("DELETE FROM meta")
        elif s.meta == "extra":
            raw.execute("INSERT OR REPLACE INTO meta VALUES ('note', ?)", ("[" * 1000,))


def _one_hostile(raw: sqlite3.Connection, k: int, table: str, key: str, a: Any, b: Any) -> None:
    from lift.explore.dbkeys import liftcl_version

    hkey = f"h{k}{key}"
    if table == "candidate":
        raw.execute("INSERT OR REPLACE INTO candidates VALUES ('m0', ?, ?, 'x', 0, ?)", (hkey, a, time.time()))
    elif table == "winner-columns":  # the indexed columns themselves of the wrong type
        raw.execute("INSERT OR REPLACE INTO winners VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (hkey, a, "{}", "{}", b if isinstance(b, (int, float)) else time.time() + 10, "u", a,
                     "d", liftcl_version(), "time"))
    else:  # newer than the good winners, matching find()'s query: it must skip them
        entry, info = (a, json.dumps({"objective": "time"})) if table == "winner-entry" else \
            (json.dumps({"choices": {}, "time": 1.0, "memory": 1}), a)
        raw.execute("INSERT OR REPLACE INTO winners VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (hkey, "m0", info if info is not None else "null", entry if entry is not None else "null",
                     time.time() + 10, "u", "{}", "d", liftcl_version(), b if isinstance(b, str) else "time"))


def _foreign(s: Scenario, tmp: Path) -> tuple[str, str]:
    """A file that is not the database where it should be: left alone, the CLI says so (exit 1)."""
    from lift.explore import TuningDB

    path = tmp / "other"
    if s.file == "dir":
        path.mkdir()
        (path / "keep").write_text("mine")
    elif s.file == "empty":
        path.write_bytes(b"")
    elif s.file == "text":
        path.write_text("my notes, " * 50)
    else:
        export = _call(TuningDB(tmp / "tuning.sqlite").export)
        path.write_text(json.dumps(export))
    before = _snapshot(path)
    db = TuningDB(path)
    _call(db.winners)
    _call(lambda: db.lookup("good0"))
    expect = (0,) if s.file == "empty" else (1,)
    for action in ("list", "clear", "export"):
        _cli(["db", action, "--db", str(path)], expect)
    if s.file != "empty" and _snapshot(path) != before:
        raise Bad("lost rows", f"the user's {s.file} file at --db was changed")
    if [p.name for p in tmp.iterdir() if ".corrupt-" in p.name]:
        raise Bad("lost rows", f"the user's {s.file} file was moved aside as a corrupt database")
    return ("ok" if s.file == "empty" else "unusable"), f"{s.file} as the database"


def _snapshot(path: Path) -> Any:
    if path.is_dir():
        return sorted((p.name, p.read_bytes()) for p in path.iterdir())
    return path.read_bytes()


def _still_there(path: Path, winners: dict[str, float]) -> None:
    with contextlib.closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as raw:
        keys = {k for (k,) in raw.execute("SELECT key FROM winners")}
    if not set(winners) <= keys:
        raise Bad("lost rows", f"the rows of a database of another schema were removed: {sorted(keys)}")


def _claim(db: Any, k: int) -> None:
    out = _call(lambda: db.claim("m0", f"claim{k}"))
    if out not in ("claimed", "busy", "finished"):
        raise Bad("raw crash", f"claim() returned {out!r}")


def _import(s: Scenario, tmp: Path, data: dict, winners: dict[str, float], cands: dict[str, float]) -> None:
    """The export with hostile rows appended, imported into a fresh database (API, then CLI)."""
    from lift.explore import TuningDB

    data = json.loads(json.dumps(data))
    for kind, row in s.imported:
        if isinstance(row, dict) and str(row.get("key", "")).startswith("good"):
            row = {**row, "key": "h" + str(row["key"])}  # a better winner of a good key replaces it: not a loss
        target = data["winners"] if kind == "winner" else data["candidates"]
        target.append(row if kind != "text" else _loads(row))
    fresh = TuningDB(tmp / "imported.sqlite")
    skipped: list[str] = []
    n = _call(lambda: fresh.import_json(data, skipped=skipped))
    counts = _call(fresh.counts)
    keys = [str(w["key"]) for w in data["winners"] if isinstance(w, dict) and "key" in w]
    held = counts.get("winners", 0) + counts.get("candidates", 0)
    if not held <= n <= held + len(keys) - len(set(keys)):  # a winner stored twice under one key is held once
        raise Bad("wrong count", f"import said {n} rows, the database holds {counts}")
    if any((_call(lambda k=k: fresh.lookup(k)) or {}).get("time") != t for k, t in winners.items()):
        raise Bad("lost rows", f"a good winner was not imported (skipped: {skipped[:3]})")
    if len(_call(lambda: fresh.finished("m0"))) < len(cands):
        raise Bad("lost rows", f"a good candidate was not imported (skipped: {skipped[:3]})")
    export = tmp / "export.json"
    export.write_text(json.dumps(data, default=str))
    _cli(["db", "import", str(export), "--db", str(tmp / "cli.sqlite")], (0, 1))


def _loads(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return text


def _clear(s: Scenario, path: Path, keys: set[str]) -> None:
    """Clear by each prefix: exactly the winners whose key starts with it go."""
    import lift
    from lift.explore import TuningDB

    db = TuningDB(path)
    present = {w["key"] for w in _call(db.winners)} | _raw_keys(path)
    for p in s.prefixes:
        if not p:
            try:
                db.clear(p)
            except lift.LiftError:
                continue
            raise Bad("lost rows", "clear('') was not refused")
        n = _call(lambda p=p: db.clear(p))
        gone = {k for k in present if isinstance(k, str) and k.startswith(p)}
        left = _raw_keys(path)
        if n != len(gone) or left != present - gone:
            raise Bad("lost rows" if left < present - gone else "wrong count",
                      f"clear({p!r}) said {n}, removed {sorted(present - left)[:5]}, expected {sorted(gone)[:5]}")
        present = left


def _raw_keys(path: Path) -> set[str]:
    with contextlib.closing(sqlite3.connect(path)) as raw:
        return {k for (k,) in raw.execute("SELECT key FROM winners") if isinstance(k, str)}


def _call(fn: Any) -> Any:
    """`fn()`; a LiftError is allowed (a refusal), anything else propagates as a raw crash."""
    import lift

    try:
        return fn()
    except lift.LiftError as err:  # the database warns and goes on: it raises nothing
        raise Bad("raw crash", f"the database raised {type(err).__name__}: {str(err)[:200]}") from None


def _cli(argv: list[str], statuses: tuple[int, ...]) -> None:
    from lift.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    if status not in statuses:
        raise Bad("raw crash", f"lift {' '.join(argv)[:80]} exited {status}: {err.getvalue()[:200]}")
    if "Traceback" in err.getvalue():
        raise Bad("raw crash", f"lift {' '.join(argv)[:80]} printed a traceback")


class _Locker:
    """Another connection holding the write lock (BEGIN IMMEDIATE) until released."""

    def __init__(self, path: Path) -> None:
        self.done, ready = threading.Event(), threading.Event()

        def hold() -> None:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            conn.execute("BEGIN IMMEDIATE")
            ready.set()
            self.done.wait(120)
            conn.execute("ROLLBACK")
            conn.close()

        self.thread = threading.Thread(target=hold, daemon=True)
        self.thread.start()
        ready.wait(10)

    def release(self) -> None:
        self.done.set()
        self.thread.join(10)


# ----------------------------------------------------------------------------- worker


def _worker(conn: Any, seed: int) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as hseed

    @settings(max_examples=10**9, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(s=scenarios())
    def one(s: Scenario) -> None:
        conn.send(("start", repr(s)[:2000]))
        conn.send(("done",) + judge(s))

    hseed(seed)(one)()


def fuzz(seconds: float, *, seed: int = 1, timeout: float = 60.0, log: Any = None, show: int = 20,
         limit: int | None = None) -> Any:
    """Judge scenarios for `seconds` (or `limit` of them); the count per row."""
    return run(_worker, seconds, seed=seed, timeout=timeout, limit=limit, log=log, show=show, ok_rows=OK_ROWS)


def main(argv: list[str] | None = None) -> int:
    return fuzz_main(argv, __doc__, fuzz, ROWS, OK_ROWS, 60.0, "a case")


if __name__ == "__main__":
    sys.exit(main())
