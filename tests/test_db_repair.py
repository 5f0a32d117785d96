"""Issue 26 items 4 and 9: a corrupt tuning database is found once, moved aside with a clear
message and replaced by a fresh one, and every reader agrees on it (`TuningDB`, `lift db
list / clear / export`, `lift.compile`'s lookup); `lift db export FILE` and the CLI's other
writes of a user's file replace it only with a complete new file."""

from __future__ import annotations

import json
import sqlite3
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

import lift
from lift import Array, Float, fun, map, reduce, zip
from lift.cli import main
from lift.explore import TuningDatabaseWarning, TuningDB, dbrepair, reuse
from lift.files import replacing, write_atomic
from tests.programs import mult

WINNER = lift.Choices(mapping={"m0": 30}).to_json()
RECORD = {"choices": {"structural": {}, "joint": {"m0": 30}, "vectorise": {}, "default": False}, "ok": True,
          "reason": "", "time": 1.0, "memory": 64, "checked": True}


def concrete():
    return fun([Array(Float, 64), Array(Float, 64)], lambda x, y: reduce(lift.add, 0.0) << map(mult) << zip(x, y))


def filled(path: Path, n: int = 200, user_program: str = "u", device: str = "d") -> Path:
    """A sound database of `n` winners and candidates, checkpointed into the main file."""
    db = TuningDB(path)
    for i in range(n):
        db.record(f"p{i}", "c1", RECORD)
        db.store(f"k{i}", {"choices": WINNER, "time": 1.0 + i, "memory": 1},
                 {"objective": "time", "mkey": f"p{i}", "user_program": user_program, "sizes": "{}",
                  "device": device, "version": lift.explore.dbkeys.liftcl_version()})
    db.close()
    with sqlite3.connect(path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def garbage_mid_file(b: bytes) -> bytes:
    half = len(b) // 2
    return b[:half] + b"\x5a" * 4096 + b[half + 4096:]


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "garbage mid-file": garbage_mid_file,
    "truncated": lambda b: b[: len(b) // 3],
    "zeroed header": lambda b: b"\0" * 100 + b[100:],
}


def damaged(path: Path, how: str) -> bytes:
    bad = DAMAGE[how](path.read_bytes())
    path.write_bytes(bad)
    return bad


def caught(fn: Callable[[], object]) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in got if issubclass(w.category, TuningDatabaseWarning)]


@pytest.mark.parametrize("how", list(DAMAGE))
def test_a_corrupt_database_is_moved_aside_once_and_a_fresh_one_started(tmp_path: Path, how: str) -> None:
    path = filled(tmp_path / "tuning.sqlite")
    bad = damaged(path, how)
    db = TuningDB(path)
    rows, said = caught(db.winners)
    assert rows == [] and len(said) == 1 and "is corrupt" in said[0] and "moved it to" in said[0], said
    assert db.repaired is not None and db.repaired.read_bytes() == bad  # nothing lost: the bytes moved
    assert not db.broken and db.store("k", {"choices": WINNER, "time": 1.0, "memory": 1}, {"objective": "time"})
    again, said = caught(lambda: TuningDB(path).winners())
    assert [w["key"] for w in again] == ["k"] and said == []  # found once: the fresh file is sound
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA quick_check").fetchall() == [("ok",)]


def test_a_readable_winner_in_a_corrupt_file_is_not_served(tmp_path: Path) -> None:
    """Garbage mid-file: the winners table still reads, so `lift tune` (lookup) served the stored
    winner while `lift.compile` (find) warned "malformed"; both now see one fresh database."""
    path = damaged(filled(tmp_path / "tuning.sqlite"), "garbage mid-file") and tmp_path / "tuning.sqlite"
    found, said = caught(lambda: TuningDB(path).lookup("k0"))
    assert found is None and len(said) == 1 and "is corrupt" in said[0]
    assert TuningDB(path).find("u", "{}", "d") is None


def test_compile_lookup_repairs_the_same_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LIFTCL_TUNING_DB", str(tmp_path / "tuning.sqlite"))
    dev = lift.devices.profile("pocl-cpu")
    path = filled(tmp_path / "tuning.sqlite", user_program=lift.explore.program_hash(concrete()), device=dev.key)
    damaged(path, "garbage mid-file")
    prog, said = caught(lambda: reuse.tuned_program(concrete(), dev))
    assert prog is None and len(said) == 1 and "moved it to" in said[0], said
    assert list(tmp_path.glob("tuning.sqlite.corrupt-*"))


def test_cli_db_commands_agree_on_a_corrupt_database(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    db = str(filled(tmp_path / "tuning.sqlite"))
    damaged(Path(db), "truncated")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert main(["db", "list", "--db", db]) == 0
        out = capsys.readouterr().out
        assert "0 tuned problems" in out
        assert main(["db", "clear", "--db", db]) == 0
    moved = [p for p in tmp_path.glob("tuning.sqlite.corrupt-*") if not p.name.endswith("-wal")]
    assert len(moved) == 1  # moved once, by the first command
    with sqlite3.connect(db) as raw:
        assert raw.execute("PRAGMA quick_check").fetchall() == [("ok",)]


def test_db_export_on_a_corrupt_database_leaves_the_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Issue 26 item 4: a good 35 KB export was replaced by an 84-byte one, exit 1."""
    good, out = filled(tmp_path / "good.sqlite"), tmp_path / "export.json"
    assert main(["db", "export", str(out), "--db", str(good)]) == 0
    before = out.read_bytes()
    assert len(json.loads(before)["winners"]) == 200
    bad = damaged(filled(tmp_path / "bad.sqlite"), "garbage mid-file")
    assert bad
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert main(["db", "export", str(out), "--db", str(tmp_path / "bad.sqlite")]) == 1
    assert "nothing exported" in capsys.readouterr().err and out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".export")] == []


def test_a_failed_write_leaves_the_users_file_whole(tmp_path: Path) -> None:
    target = tmp_path / "result.json"
    write_atomic(target, "old\n")
    target.chmod(0o640)
    with pytest.raises(RuntimeError), replacing(target) as tmp:
        tmp.write_text("half of the new")
        raise RuntimeError("the writer failed")
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n" and target.stat().st_mode & 0o777 == 0o640


def test_a_file_that_is_not_ours_is_never_moved(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not sqlite at all, " * 100)
    assert dbrepair.corruption(notes) is None
    _, said = caught(lambda: TuningDB(notes).winners())
    assert notes.read_text().startswith("not sqlite") and any("cannot be read" in s for s in said)


def test_tune_plot_replaces_the_picture_whole(tmp_path: Path) -> None:
    """`lift tune --plot FILE` writes through a temporary file too: a failing save leaves FILE."""
    pytest.importorskip("matplotlib")
    from types import SimpleNamespace as Ns

    from lift.explore.plot import plot_front

    rec = Ns(ok=True, time=1e-3, memory=2**20, candidate=Ns(mapping=None))  # the default lowering (points.py)
    result = Ns(history=[rec], pareto=[rec], best_record=rec)
    for name in ("front.png", "front"):  # no suffix: matplotlib's default format
        assert plot_front(result, tmp_path / name).read_bytes().startswith(b"\x89PNG")
    kept = tmp_path / "front.xyz"
    kept.write_text("an older picture")
    with pytest.raises(ValueError):
        plot_front(result, kept)  # no such format
    assert kept.read_text() == "an older picture"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["front", "front.png", "front.xyz"]
