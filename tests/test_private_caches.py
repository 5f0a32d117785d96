"""Issue 39 row 10: what liftcl creates for itself (the build cache, the device-verdict cache, the
tuning database and their folders) is private, 0700 folders and 0600 files, and a cached binary or
verdict another user owns is never loaded (whoever can write it can recompute its checksum)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from lift.devices import usable
from lift.explore import TuningDB
from lift.runtime import read_entry, write_entry

needs_root = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                                reason="giving a file to another user needs root")
OTHER_UID = 54321


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    old = os.umask(0o022)  # what most users have: 0755 folders and 0644 files unless asked otherwise
    try:
        yield
    finally:
        os.umask(old)


def test_build_cache_folders_and_entries_are_private(tmp_path: Path) -> None:
    entry = tmp_path / "cache" / "liftcl" / "ab" / "abcd.bin"
    assert write_entry(entry, b"binary", "abcd")
    assert [mode(p) for p in (tmp_path / "cache", tmp_path / "cache" / "liftcl", entry.parent)] == [0o700] * 3
    assert mode(entry) == 0o600 and read_entry(entry, "abcd") == b"binary"
    assert mode(tmp_path) == stat.S_IMODE(tmp_path.stat().st_mode)  # a folder already there is left alone


@pytest.mark.parametrize("where", ["xdg", "env"])
def test_the_tuning_database_and_its_folder_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        where: str) -> None:
    if where == "xdg":
        monkeypatch.delenv("LIFTCL_TUNING_DB", raising=False)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        path, folders = tmp_path / "xdg" / "liftcl" / "tuning.sqlite", [tmp_path / "xdg", tmp_path / "xdg" / "liftcl"]
    else:
        path = tmp_path / "dbs" / "mine.sqlite"
        monkeypatch.setenv("LIFTCL_TUNING_DB", str(path))
        folders = [tmp_path / "dbs"]
    db = TuningDB()
    assert db.path == path
    db.record("p", "c", {"choices": {"structural": {}, "joint": {}, "vectorise": {}, "default": True}, "ok": True,
                         "time": 1.0, "memory": 1})
    assert db.broken is None and [mode(f) for f in folders] == [0o700] * len(folders)
    assert mode(path) == 0o600 and all(mode(p) == 0o600 for p in path.parent.glob("*.sqlite-*"))


def test_the_device_verdict_folder_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    usable._write(usable.Verdict(True, usable.USABLE, "", "k"))
    assert [mode(p) for p in (tmp_path / "xdg", tmp_path / "xdg" / "liftcl", usable.verdict_dir())] == [0o700] * 3
    assert mode(usable.verdict_dir() / "k.json") == 0o600 and usable._read("k") is not None


@needs_root
def test_a_cache_entry_another_user_owns_is_not_loaded(tmp_path: Path) -> None:
    entry = tmp_path / "ab" / "abcd.bin"
    assert write_entry(entry, b"binary", "abcd") and read_entry(entry, "abcd") == b"binary"
    os.chown(entry, OTHER_UID, OTHER_UID)
    assert read_entry(entry, "abcd") is None and read_entry(entry) is None


@needs_root
def test_a_verdict_another_user_owns_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    usable._write(usable.Verdict(True, usable.USABLE, "", "k"))
    assert usable._read("k") is not None
    os.chown(usable.verdict_dir() / "k.json", OTHER_UID, OTHER_UID)
    assert usable._read("k") is None
