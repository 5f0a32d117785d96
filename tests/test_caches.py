"""Issue 26 item 6: unwritable caches. With `$XDG_CACHE_HOME` unwritable PoCL listed no device and
pyopencl's invoker cache raised a raw sqlite3 error; with PoCL's cache alone unwritable the device
was "unusable". Now each falls back (a temporary PoCL cache, no pyopencl cache) with one warning,
and `lift.compile` and `lift tune` work. An unwritable folder is simulated by a path under a regular
file (the tests run as root, for whom permission bits do not stop a write)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from lift.devices import caches, usable
from programs import DOT_PROGRAM_FILE

ROOT = Path(__file__).resolve().parents[1]
RUN = textwrap.dedent("""\
    import warnings, numpy as np, lift
    from tests.programs import dot_program
    warnings.simplefilter("always")
    x = np.arange(300, dtype=np.float32) / 300
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        k = lift.compile(dot_program())
        r1 = k(x, x)
        r2 = k(x.astype(np.float32), x[::-1].copy())  # a second call, the same argument types
    said = [str(w.message) for w in got if type(w.message).__name__ == "CacheUnwritable"]
    print("RESULT", abs(float(r1) - float(x @ x)) < 1e-3, abs(float(r2) - float(x @ x[::-1])) < 1e-3, len(said))
    for s in said:
        print("WARNING", s)
    """)


def unwritable(tmp_path: Path) -> Path:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    return blocker / "cache"


def run(env: dict[str, str], code: str = RUN) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("POCL_CACHE_DIR", "PYOPENCL_NO_CACHE")}
    return subprocess.run([sys.executable, "-c", code], env={**full, **env}, cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.device
def test_unwritable_xdg_cache_home_falls_back_with_one_warning(tmp_path: Path) -> None:
    out = run({"XDG_CACHE_HOME": str(unwritable(tmp_path))})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "RESULT True True 1" in out.stdout, out.stdout + out.stderr[-3000:]
    said = out.stdout.split("WARNING", 1)[1]
    assert "PoCL's kernel cache" in said and "pyopencl's cache" in said and "temporary folder" in said


@pytest.mark.device
def test_unwritable_pocl_cache_alone_falls_back(tmp_path: Path) -> None:
    out = run({"POCL_CACHE_DIR": str(unwritable(tmp_path)), "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "RESULT True True 1" in out.stdout, out.stdout + out.stderr[-3000:]
    assert "PoCL's kernel cache" in out.stdout and "pyopencl's cache" not in out.stdout


@pytest.mark.device
def test_lift_tune_works_with_unwritable_caches(tmp_path: Path) -> None:
    prog = tmp_path / "dotprog.py"
    prog.write_text(DOT_PROGRAM_FILE)
    env = {k: v for k, v in os.environ.items() if k not in ("POCL_CACHE_DIR", "PYOPENCL_NO_CACHE",
                                                            "LIFTCL_TUNING_DB")}
    out = subprocess.run([sys.executable, "-m", "lift", "tune", str(prog), "--budget", "3", "--quiet"],
                         env={**env, "XDG_CACHE_HOME": str(unwritable(tmp_path))}, cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "best:" in out.stdout and "no candidate" not in out.stderr
    assert out.stderr.count("CacheUnwritable") == 1, out.stderr[-3000:]


def test_prepare_checks_by_writing_and_leaves_writable_caches_alone(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("POCL_CACHE_DIR", raising=False)
    monkeypatch.delenv("PYOPENCL_NO_CACHE", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", caches.CacheUnwritable)
        caches.prepare(again=True)
    assert "POCL_CACHE_DIR" not in os.environ and "PYOPENCL_NO_CACHE" not in os.environ
    assert caches.pocl_cache_dir() == tmp_path / "xdg" / "pocl" / "kcache"
    assert caches.unwritable(tmp_path / "fine") is None and caches.unwritable(unwritable(tmp_path))


def test_a_probe_that_raised_is_not_remembered_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A probe failing with an exception (an unwritable pytools folder raised FileExistsError in it)
    said how the host was then: stored, it made the device unusable after the folder was fixed."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(usable, "_VERDICTS", {})
    monkeypatch.setattr(usable, "verdict_key", lambda d: "k")

    def boom(d: object) -> usable.Verdict:
        raise FileExistsError("pytools")

    monkeypatch.setattr(usable, "_attempt", boom)
    v = usable.verdict(object())
    assert not v.usable and v.reason.startswith(usable.PROBE_FAILED)
    assert not list(tmp_path.rglob("*.json"))
    usable.forget()
    monkeypatch.setattr(usable, "_attempt", lambda d: usable.Verdict(True, usable.USABLE))
    assert usable.verdict(object()).usable and list(tmp_path.rglob("k.json"))
