"""A corrupt tuning database is found once per process and moved aside; a fresh one replaces it.

    why = corruption(path)          # None: the file is sound (or absent, or not ours to judge)
    moved = move_aside(path)        # tuning.sqlite -> tuning.sqlite.corrupt-20261127T181500-1234

`TuningDB` asks `corruption` when it first opens a file in a process (SQLite's `quick_check`,
cheap: one pass over the b-trees), and again when a query reports SQLite's "database disk
image is malformed" or "file is not a database". A file that is corrupt and is a liftcl tuning
database (SQLite's header, or liftcl's format name inside) is renamed beside itself with its
`-wal` file, under a lock on its folder shared by every process, so `lift db list`, `lift db clear`, `lift tune`
and `lift.compile` all see the same fresh database afterwards, and nothing is deleted. A file
that is neither (a user's text file given as `--db`, a JSON export naming the format) is left
alone (`foreign` says why): the database is unusable.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from pathlib import Path

SQLITE_HEADER = b"SQLite format 3\x00"
FORMAT_MARK = b"liftcl-tuning-db"
_SOUND: set[tuple[int, int]] = set()  # (st_dev, st_ino) of files checked sound in this process


def is_corruption(err: BaseException) -> bool:
    """Whether a SQLite error says the file's content is damaged (not busy, locked or read-only)."""
    name = getattr(err, "sqlite_errorname", "")
    return isinstance(err, sqlite3.DatabaseError) and (
        name in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or "malformed" in str(err) or "not a database" in str(err))


def corruption(path: Path, *, again: bool = False) -> str | None:
    """Why the database file at `path` is corrupt, or None when it is sound, absent, empty, already
    checked in this process (unless `again`), or not a liftcl tuning database at all."""
    try:
        st = path.stat()
    except OSError:
        return None
    if st.st_size == 0 or (not again and (st.st_dev, st.st_ino) in _SOUND):
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=60)
        try:
            rows = conn.execute("PRAGMA quick_check").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as err:
        if not is_corruption(err):
            return None  # busy, locked, unreadable: not a verdict on the content
        return f"{err}" if _ours(path) else None
    found = [str(r[0]) for r in rows if r and r[0] != "ok"]
    if found:
        return "; ".join(found[:3]) + (f" (and {len(found) - 3} more problems)" if len(found) > 3 else "")
    _SOUND.add((st.st_dev, st.st_ino))
    return None


def _ours(path: Path) -> bool:
    """SQLite's header, or liftcl's format name somewhere in a binary file (a damaged header). A
    text file that names the format (a JSON export given as the database) is not a database."""
    try:
        with path.open("rb") as f:
            if f.read(len(SQLITE_HEADER)) == SQLITE_HEADER:
                return True
            f.seek(0)
            marked = binary = False
            while chunk := f.read(1 << 20):
                marked = marked or FORMAT_MARK in chunk
                binary = binary or b"\0" in chunk  # SQLite's pages are full of zero bytes; text has none
                if marked and binary:
                    return True
    except OSError:
        return False
    return False


def foreign(path: Path) -> str | None:
    """Why the file at `path` is not a database to open, repair or replace (a user's text file, a
    JSON export, given as the database); None when it is absent, empty, a SQLite file or a damaged
    one of ours."""
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return None
        with path.open("rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return None
    if head.startswith(SQLITE_HEADER) or _ours(path):
        return None
    looks = " (it looks like a `lift db export`: `lift db import` reads it)" \
        if head.lstrip().startswith(b"{") and FORMAT_MARK in head else ""
    return f"{path} is not a SQLite database, left as it is{looks}"


def move_aside(path: Path) -> Path | None:
    """Rename the corrupt database (and its -wal file) beside itself, under an exclusive lock, unless
    another process did it first (the file there is then checked again). The new name, or None when
    nothing was moved (another process repaired it, or the folder is not writable)."""
    try:
        lock = os.open(path.parent, os.O_RDONLY)  # the folder: every process agrees, no lock file left
    except OSError:
        lock = -1
    try:
        if lock >= 0:
            fcntl.flock(lock, fcntl.LOCK_EX)
        if corruption(path, again=True) is None:
            return None  # repaired by another process meanwhile (or gone)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{os.getpid()}")
        try:
            os.replace(path, target)
        except OSError:
            return None
        for suffix in ("-wal", "-shm"):
            side = Path(f"{path}{suffix}")
            try:
                if suffix == "-wal":
                    os.replace(side, Path(f"{target}{suffix}"))
                else:
                    side.unlink()
            except OSError:
                pass
        return target
    finally:
        if lock >= 0:
            os.close(lock)
