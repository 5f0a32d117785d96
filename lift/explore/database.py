"""The persistent tuning database: SQLite in WAL mode, `<liftcl cache>/tuning.sqlite`.

    db = TuningDB()                    # or TuningDB(path); $LIFTCL_TUNING_DB names another file
    db.lookup(key) -> dict | None;     db.store(key, entry, info)
    db.finished(mkey) -> {candidate: record};  db.claim(mkey, candidate);  db.record(mkey, candidate, record)

Two tables. `candidates` holds every finished candidate of a tuning problem (its choices, ok or why
rejected, time, memory), keyed by the *measurement key* (`measure_key`: the program's canonical
hash, the argument shapes and dtypes, the device key and the liftcl version, what a measurement
depends on) and the candidate's key (`lift.explore.points.key`, the canonical JSON of the search
point's older form, kept so that rows stored before stay found). `tune` writes each candidate as it
finishes and reads those already there instead of measuring them again, so a stopped tune resumes
where it stopped and tunes of one problem running at once share their work: a candidate being
measured is *claimed* (a row without a result, naming its process), and another tune skips it until
its result is there; a claim whose process is gone, or older than `CLAIM_S`, is taken over, and so
is one the database holds in a form no tune writes (an owner that is not `host:pid`, a date that is
no number or lies in the future). `winners` holds the best candidate per *tuning key* (`tuning_key`:
the measurement key and the objective) with its Pareto front; a winner replaces a stored one only
when it is better for the objective (or `replace=True`, `tune(refresh=True)`).

Rows that cannot be decoded (a hand edit, another schema, a foreign tool's rows, JSON nested past
what `json` reads, text that is not UTF-8) are ignored with a `TuningDatabaseWarning`; a database
that cannot be opened or written (a directory, a read-only file, a file that is not SQLite: left as
it is) warns once and the caller goes on without it. Reading never writes: only a new database gets
its format rows, so a lookup never waits for another process's write lock. A corrupt database file
(SQLite's checks fail) is found once per process, moved aside with a warning naming where it went
(`repaired`), and a fresh one takes its place (`dbrepair`). `export()` / `import_json()` copy it to
and from JSON. Choices are stored as JSON through `encode_choices` / `stored_key` only.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sqlite3
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from lift.errors import LiftValueError, LiftWarning
from lift.files import private_file, private_folder
from lift.runtime import default_cache_dir

from . import dbrepair
from .dbkeys import VERSION, check_entry, check_record, liftcl_version, rank, stored_key

CLAIM_S = 600.0  # a claim older than this is taken over even if its process seems alive
CLOCK_SKEW_S = 60.0  # a claim dated further in the future than this is taken over
PID_MAX = 1 << 22  # Linux's largest pid_max: a larger "pid" in a claim is no process
FORMAT = "liftcl-tuning-db"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS candidates (
    mkey TEXT NOT NULL, cand TEXT NOT NULL, record TEXT, owner TEXT, claimed REAL, stored REAL,
    PRIMARY KEY (mkey, cand));
CREATE TABLE IF NOT EXISTS winners (
    key TEXT PRIMARY KEY, mkey TEXT, info TEXT NOT NULL, entry TEXT NOT NULL, stored REAL,
    user_program TEXT, sizes TEXT, device TEXT, version TEXT, objective TEXT);
CREATE INDEX IF NOT EXISTS winners_by_program ON winners (user_program, device);
"""


class TuningDatabaseWarning(LiftWarning):
    """The tuning database could not be read or written, or holds rows that are ignored."""


# ----------------------------------------------------------------------- database


def default_path() -> Path:
    """`$LIFTCL_TUNING_DB`, else `<liftcl cache>/tuning.sqlite`."""
    if os.environ.get("LIFTCL_TUNING_DB"):
        return Path(os.environ["LIFTCL_TUNING_DB"])
    return default_cache_dir() / "tuning.sqlite"


class TuningDB:
    """The tuning database (see the module docstring); every method is safe to call from
    several processes at once, and none raises on a broken database (it warns instead)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.broken: str | None = None  # why the database is unusable (warned once)
        self.repaired: Path | None = None  # where this object moved a corrupt database file
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

    # ---------------------------------------------------------- connection

    def _connect(self) -> sqlite3.Connection:
        if self._conn is None or self._pid != os.getpid():
            foreign = dbrepair.foreign(self.path)
            if foreign is not None:  # a user's file given as the database: left alone
                raise sqlite3.DatabaseError(foreign)
            private_folder(self.path.parent)
            why = dbrepair.corruption(self.path)
            if why is not None:
                self._repair(why)
            private_file(self.path)
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            conn.text_factory = _text  # a row of text that is not UTF-8 is a malformed row, not a broken database
            conn.execute("PRAGMA busy_timeout = 60000")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.executescript(_SCHEMA)  # IF NOT EXISTS: no write lock when the tables are there
            found = _meta(conn)
            if not found:  # a new database: only then written (a reader never waits for a writer's lock)
                found = _write_meta(conn)
            if found.get("format") != FORMAT or found.get("version") != str(VERSION):
                conn.close()
                raise sqlite3.DatabaseError(f"not a liftcl tuning database of version {VERSION} ({found})")
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    @contextmanager
    def _use(self, what: str, write: bool = False) -> Iterator[sqlite3.Connection | None]:
        """A connection (inside one IMMEDIATE transaction when `write`), or None when the database
        is unusable; a failure warns once and marks the database broken."""
        conn = None
        if self.broken is None:
            try:
                conn = self._connect()
                if write:
                    conn.execute("BEGIN IMMEDIATE")
            except (sqlite3.Error, OSError) as err:
                self._fail(err, what)
                conn = None
        if conn is None:
            yield None
            return
        try:
            yield conn
            if write:
                conn.execute("COMMIT")
        except (sqlite3.Error, OSError) as err:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            why = dbrepair.corruption(self.path, again=True) if dbrepair.is_corruption(err) else None
            if why is None:
                self._fail(err, what)
                return
            self.close()  # found by a query, not by the first check: repair, the next use opens a fresh file
            try:
                self._repair(why)
            except sqlite3.Error as still:
                self._fail(still, what)

    def _repair(self, why: str) -> None:
        """Move the corrupt file aside (warning where it went) so a fresh database replaces it;
        raises when it cannot be moved (the database is then unusable)."""
        moved = dbrepair.move_aside(self.path)
        if moved is not None:
            self.repaired = moved
            warnings.warn(TuningDatabaseWarning(
                f"the tuning database {self.path} is corrupt ({why}); moved it to {moved} and started a fresh "
                "one (tuned winners and measurements in the old file are not used)"), stacklevel=6)
        elif dbrepair.corruption(self.path, again=True) is not None:
            raise sqlite3.DatabaseError(f"corrupt ({why}) and cannot be moved aside")

    def _fail(self, err: BaseException, what: str) -> None:
        self.broken = f"{type(err).__name__}: {err}"
        warnings.warn(TuningDatabaseWarning(f"the tuning database {self.path} cannot be {what} "
                                            f"({self.broken}); going on without it"), stacklevel=5)

    def close(self) -> None:
        """Close this process's connection (reopened on the next use)."""
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._conn = None

    def exists(self) -> bool:
        """Whether the database file exists."""
        return self.path.is_file()

    # ------------------------------------------------------------- winners

    def lookup(self, key: str) -> dict[str, Any] | None:
        """The stored winner entry for `key`, or None (a malformed one warns and is ignored)."""
        row = None
        with self._use("read") as conn:
            row = conn.execute("SELECT entry FROM winners WHERE key = ?", (key,)).fetchone() if conn else None
        if row is None:
            return None
        return _decode(row[0], check_entry, f"winner {key[:12]}")

    def store(self, key: str, entry: Mapping[str, Any], info: Mapping[str, Any] | None = None, *,
              replace: bool = False) -> bool:
        """Store the winner `entry` for `key` unless a better one for its objective is there
        (`replace`: store it anyway); `info` describes the problem. True when stored."""
        info = dict(info or {})
        objective = str(info.get("objective", "time"))
        columns = [_column(info, name) for name in ("mkey", "user_program", "sizes", "device", "version")]
        text = json.dumps({**entry, "stored": time.time()}, sort_keys=True, default=_jsonable)
        with self._use("written", write=True) as conn:
            if conn is None:
                return False
            row = conn.execute("SELECT entry FROM winners WHERE key = ?", (key,)).fetchone()
            old = _decode(row[0], check_entry, f"winner {key[:12]}") if row else None
            if old is not None and not replace and rank(old, objective) <= rank(entry, objective):
                return False
            mkey, user_program, sizes, device, version = columns
            conn.execute("INSERT OR REPLACE INTO winners VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (key, mkey, json.dumps(info, sort_keys=True, default=_jsonable), text,
                          time.time(), user_program, sizes, device, version, objective))
            return True
        return False

    def winners(self) -> list[dict[str, Any]]:
        """Every decodable winner: {"key", "info", "entry", "stored"}, newest first."""
        rows: list[Any] = []
        with self._use("read") as conn:
            rows = conn.execute("SELECT key, info, entry, stored FROM winners ORDER BY stored DESC").fetchall() \
                if conn else []
        out = []
        for key, info, entry, stored in rows:
            e = _decode(entry, check_entry, f"winner {str(key)[:12]}")
            i = _decode(info, lambda d: dict(d) if isinstance(d, Mapping) else _bad("info"), f"winner {key}")
            if e is not None and i is not None:
                out.append({"key": key, "info": i, "entry": e, "stored": stored})
        return out

    def find(self, user_program: str, sizes: str, device: str) -> tuple[dict, dict] | None:
        """The newest (info, entry) winner for a program as the user wrote it, its size bindings
        and a device, at this liftcl version; objective "time" first, then "pareto"."""
        rows: list[Any] = []
        with self._use("read") as conn:
            rows = conn.execute(
                "SELECT info, entry FROM winners WHERE user_program = ? AND sizes = ? AND device = ? AND "
                "version = ? AND objective IN ('time', 'pareto') ORDER BY objective = 'time' DESC, stored DESC",
                (user_program, sizes, device, liftcl_version())).fetchall() if conn else []
        for info, entry in rows:
            i, e = _decode(info, dict, "winner info"), _decode(entry, check_entry, "winner")
            if i is not None and e is not None:
                return i, e
        return None

    def at_sizes(self, user_program: str, device: str) -> list[tuple[str, dict, dict]]:
        """Every (sizes, info, entry) winner stored for a program as the user wrote it on a device at
        this liftcl version, whatever its size bindings (`lift.explore.transfer` picks the nearest);
        objective "time" first, then "pareto", newest first."""
        rows: list[Any] = []
        with self._use("read") as conn:
            rows = conn.execute(
                "SELECT sizes, info, entry FROM winners WHERE user_program = ? AND device = ? AND version = ? "
                "AND objective IN ('time', 'pareto') ORDER BY objective = 'time' DESC, stored DESC",
                (user_program, device, liftcl_version())).fetchall() if conn else []
        out = []
        for sizes, info, entry in rows:
            i, e = _decode(info, dict, "winner info"), _decode(entry, check_entry, "winner")
            if i is not None and e is not None and isinstance(sizes, str):
                out.append((sizes, i, e))
        return out

    # ---------------------------------------------------------- candidates

    def finished(self, mkey: str) -> dict[str, dict[str, Any]]:
        """The finished candidates of a problem: {candidate key: record JSON}."""
        rows: list[Any] = []
        with self._use("read") as conn:
            rows = conn.execute("SELECT cand, record FROM candidates WHERE mkey = ? AND record IS NOT NULL",
                                (mkey,)).fetchall() if conn else []
        out = {}
        for cand, rec in rows:
            d = _decode(rec, check_record, f"candidate {str(cand)[:60]}")
            if d is not None:
                out[cand] = d
        return out

    def claim(self, mkey: str, cand: str) -> str:
        """Claim a candidate before measuring it: "claimed" (measure it), "finished" (its result is
        in the database) or "busy" (another live process measures it)."""
        owner = _owner()
        with self._use("written", write=True) as conn:
            if conn is None:
                return "claimed"
            row = conn.execute("SELECT record, owner, claimed FROM candidates WHERE mkey = ? AND cand = ?",
                               (mkey, cand)).fetchone()
            if row is not None and row[0] is not None and _decode(row[0], check_record, "candidate") is not None:
                return "finished"
            if row is not None and row[0] is None and row[1] != owner and _alive(row[1], row[2]):
                return "busy"
            conn.execute("INSERT OR REPLACE INTO candidates VALUES (?, ?, NULL, ?, ?, NULL)",
                         (mkey, cand, owner, time.time()))
            return "claimed"
        return "claimed"

    def record(self, mkey: str, cand: str, record: Mapping[str, Any], *, replace: bool = False) -> bool:
        """Store a finished candidate's measurement (the first result stored for it stays, unless
        `replace`); True when stored."""
        text = json.dumps(record, sort_keys=True, default=_jsonable)
        keep = "" if replace else " WHERE record IS NULL"
        with self._use("written", write=True) as conn:
            if conn is not None:
                return conn.execute("INSERT INTO candidates VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (mkey, cand) DO "
                                    "UPDATE SET record = excluded.record, stored = excluded.stored" + keep,
                                    (str(mkey), str(cand), text, _owner(), time.time(), time.time())).rowcount > 0
        return False

    # ------------------------------------------------------- whole database

    def export(self) -> dict[str, Any]:
        """Every decodable winner and finished candidate, as JSON-ready data."""
        rows: list[Any] = []
        with self._use("read") as conn:
            rows = conn.execute("SELECT mkey, cand, record, stored FROM candidates WHERE record IS NOT NULL "
                                "ORDER BY mkey, stored").fetchall() if conn else []
        cands = [{"mkey": m, "record": d, "stored": s} for m, c, r, s in rows
                 if (d := _decode(r, check_record, f"candidate {str(c)[:60]}")) is not None]
        return {"format": FORMAT, "version": VERSION, "winners": self.winners(), "candidates": cands}

    def import_json(self, data: Any, *, skipped: list[str] | None = None) -> int:
        """Merge exported data (see `export`); returns the rows stored (a winner no better than the
        one there is not). Foreign data raises ValueError; each malformed row is skipped with a
        warning and named in `skipped` (when given), and the rows after it are still taken."""
        if not isinstance(data, Mapping) or data.get("format") != FORMAT or data.get("version") != VERSION:
            raise ValueError(f"not a {FORMAT} export of version {VERSION}")
        skipped = [] if skipped is None else skipped
        taken = 0
        for i, w in enumerate(_rows(data, "winners", skipped)):
            try:
                entry, info = check_entry(w["entry"]), w["info"]
                if not isinstance(info, Mapping):
                    raise ValueError("info is not an object")
                for name in ("mkey", "user_program", "sizes", "device", "version"):
                    _column(info, name)
                taken += self.store(str(w["key"]), {k: v for k, v in entry.items() if k != "stored"}, dict(info))
            except (KeyError, TypeError, ValueError, RecursionError) as err:
                skipped.append(f"winner {i} ({_why(err)})")
                _ignored(f"an imported winner, number {i} ({_why(err)})")
        for i, c in enumerate(_rows(data, "candidates", skipped)):
            try:
                rec = check_record(c["record"])
                taken += self.record(str(c["mkey"]), stored_key(rec["choices"]), rec)
            except (KeyError, TypeError, ValueError, RecursionError) as err:
                skipped.append(f"candidate {i} ({_why(err)})")
                _ignored(f"an imported candidate, number {i} ({_why(err)})")
        return taken

    def clear(self, key: str | None = None) -> int:
        """Remove the winners whose key starts with `key` (as `lift db show` matches keys) and their
        problems' candidates, or everything (`key` None); returns the winners removed. An empty
        `key` is refused (LiftValueError): it would match every winner."""
        if key is not None and (not isinstance(key, str) or not key):
            raise LiftValueError(f"a key to clear is a non-empty prefix of a winner's key, not {key!r}", got=key,
                                 hint="clear() with no key removes everything")
        with self._use("written", write=True) as conn:
            if conn is None:
                return 0
            if key is None:
                n = conn.execute("DELETE FROM winners").rowcount
                conn.execute("DELETE FROM candidates")
                return n
            rows = [(k, m) for k, m in conn.execute("SELECT key, mkey FROM winners").fetchall()
                    if isinstance(k, str) and k.startswith(key)]  # a prefix, not a LIKE pattern (`_`, `%`)
            for k, m in rows:
                conn.execute("DELETE FROM winners WHERE key = ?", (k,))
                if not conn.execute("SELECT 1 FROM winners WHERE mkey = ?", (m,)).fetchone():
                    conn.execute("DELETE FROM candidates WHERE mkey = ?", (m,))
            return len(rows)
        return 0

    def counts(self) -> dict[str, int]:
        """Rows per table: winners, finished candidates, claims in flight."""
        with self._use("read") as conn:
            if conn is None:
                return {}
            return {"winners": conn.execute("SELECT COUNT(*) FROM winners").fetchone()[0],
                    "candidates": conn.execute("SELECT COUNT(*) FROM candidates WHERE record IS NOT NULL")
                    .fetchone()[0],
                    "claims": conn.execute("SELECT COUNT(*) FROM candidates WHERE record IS NULL").fetchone()[0]}
        return {}


def _decode(text: Any, check: Any, what: str) -> Any:
    try:
        return check(json.loads(text))
    except (TypeError, ValueError) as err:
        _ignored(f"{what} ({str(err)[:200]})")
    except RecursionError:  # 200,000 `[`: json's nesting limit, or a check's
        _ignored(f"{what} (nested too deeply)")
    return None


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _meta(conn: sqlite3.Connection) -> dict[Any, Any]:
    return dict(conn.execute("SELECT name, value FROM meta").fetchall())


def _write_meta(conn: sqlite3.Connection) -> dict[Any, Any]:
    """Name the format and version of a database that has none yet, without waiting: when another
    process holds the write lock it is writing them too (taken as written)."""
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        conn.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?), ('version', ?)", (FORMAT, str(VERSION)))
    except sqlite3.OperationalError as err:
        if getattr(err, "sqlite_errorname", "") not in ("SQLITE_BUSY", "SQLITE_LOCKED") and "locked" not in str(err):
            raise
        return {"format": FORMAT, "version": str(VERSION)}
    finally:
        conn.execute("PRAGMA busy_timeout = 60000")
    return _meta(conn)


def _column(info: Mapping[str, Any], name: str) -> str | None:
    """A winner's indexed column (`info[name]`): text or absent; ValueError otherwise."""
    v = info.get(name)
    if v is not None and not isinstance(v, str):
        raise ValueError(f"info.{name} is {type(v).__name__}, not text")
    return v


def _rows(data: Mapping[str, Any], table: str, skipped: list[str]) -> list[Any]:
    rows = data.get(table, [])
    if isinstance(rows, list):
        return rows
    skipped.append(f"{table} (not a list)")
    _ignored(f"the imported {table} (not a list)")
    return []


def _why(err: BaseException) -> str:
    if isinstance(err, RecursionError):
        return "nested too deeply"
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return f"{type(err).__name__}: {text[:200]}" if isinstance(err, KeyError) else text[:200]


def _bad(what: str) -> Any:
    raise ValueError(f"{what} is not an object")


def _ignored(what: str) -> None:
    warnings.warn(TuningDatabaseWarning(f"ignoring a malformed row of the tuning database: {what}"), stacklevel=3)


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive(owner: Any, claimed: Any) -> bool:
    """Whether a claim still stands: dated in the last `CLAIM_S` seconds (not in the future, beyond
    `CLOCK_SKEW_S`), and its process alive (on this host). A claim the database holds in any other
    form (an owner that is not `host:pid`, a pid that is no process number, a date that is no
    number) is stale: it is taken over, never raised."""
    if isinstance(claimed, bool) or not isinstance(claimed, (int, float)) or not math.isfinite(claimed):
        return False
    now = time.time()
    if now - claimed > CLAIM_S or claimed - now > CLOCK_SKEW_S:
        return False
    if not isinstance(owner, str):
        return False
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return bool(host)  # another host's process: alive until the claim is old
    if not (pid.isascii() and pid.isdigit() and 0 < len(pid) <= 10 and 0 < int(pid) <= PID_MAX):
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):
        return True
    return True


def _jsonable(v: Any) -> Any:
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    return str(v)
