"""OpenCL runtimes installed from PyPI made visible to the ICD loader (lift/devices/icd.py):
the ICD folder's contents on fake environments, and, where `pip install -e ".[intel]"` put
Intel's CPU runtime into this environment, that a fresh process lists it as usable and runs a
program on it correctly without OCL_ICD_VENDORS or LD_LIBRARY_PATH set by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lift.devices import icd

ROOT = Path(__file__).resolve().parents[1]


def _fake_prefix(tmp_path: Path) -> Path:
    (tmp_path / "env" / "lib").mkdir(parents=True)
    (tmp_path / "env" / "lib" / "libintelocl.so").write_bytes(b"")
    return tmp_path / "env"


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "liftcl" / "icd"


def test_nothing_installed_changes_nothing(tmp_path: Path, cache: Path) -> None:
    env = {"OCL_ICD_VENDORS": "/somewhere"}
    assert icd.register(tmp_path, env) is None and env == {"OCL_ICD_VENDORS": "/somewhere"}
    assert not cache.exists()


def test_the_runtime_joins_the_vendors_the_loader_would_read(tmp_path: Path, cache: Path) -> None:
    prefix = _fake_prefix(tmp_path)
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    (vendors / "nvidia.icd").write_text("libnvidia-opencl.so.1\n")
    (vendors / "intel-cpu.icd").write_text("/opt/intel/libintelocl.so\n")  # a name liftcl would use
    (vendors / "README").write_text("not an icd")
    env = {"OCL_ICD_VENDORS": str(vendors)}
    folder = icd.register(prefix, env)
    assert folder is not None and env["OCL_ICD_VENDORS"] == str(folder) and folder.parent == cache
    got = {p.name: p.read_text().strip() for p in folder.iterdir()}
    assert got == {"nvidia.icd": "libnvidia-opencl.so.1", "intel-cpu.icd": "/opt/intel/libintelocl.so",
                   "liftcl-intel-cpu.icd": str(prefix / "lib" / "libintelocl.so")}
    again = dict(env)
    assert icd.register(prefix, again) is None and again == env  # a child process: registered already


def test_without_ocl_icd_vendors_the_system_folder_is_kept(tmp_path: Path, cache: Path, monkeypatch) -> None:
    system = tmp_path / "etc-vendors"
    system.mkdir()
    (system / "pocl.icd").write_text("libpocl.so.2\n")
    monkeypatch.setattr(icd, "SYSTEM_VENDORS", system)
    env: dict[str, str] = {}
    folder = icd.register(_fake_prefix(tmp_path), env)
    assert folder is not None and sorted(p.name for p in folder.iterdir()) == ["intel-cpu.icd", "pocl.icd"]
    assert icd.icd_folder(icd.loader_entries(str(folder)), cache) == folder  # content-named: the same folder


def test_one_icd_file_as_ocl_icd_vendors(tmp_path: Path, cache: Path) -> None:
    one = tmp_path / "only.icd"
    one.write_text("libOther.so\n")
    env = {"OCL_ICD_VENDORS": str(one)}
    folder = icd.register(_fake_prefix(tmp_path), env)
    assert folder is not None and {p.name for p in folder.iterdir()} == {"only.icd", "intel-cpu.icd"}


def test_an_unwritable_cache_leaves_the_loader_alone(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file: no folder can be made under it
    env: dict[str, str] = {}
    assert icd.register(_fake_prefix(tmp_path), env) is None and env == {}


INTEL = icd.installed()


@pytest.mark.device
@pytest.mark.skipif(not INTEL, reason="Intel's CPU runtime is not installed here (pip install -e \".[intel]\")")
def test_intel_cpu_runtime_is_found_and_runs_dot(tmp_path: Path) -> None:
    code = ("import json, numpy as np, lift\nfrom tests.programs import dot_program\n"
            "infos = lift.devices.list()\n"
            "intel = [i for i in infos if i.platform.startswith('Intel(R) OpenCL') and i.kind == 'cpu']\n"
            "x = np.arange(1024, dtype=np.float32) / 1024\n"
            "got = float(lift.compile(dot_program(), device=intel[0].profile)(x, x)) if intel else None\n"
            "print(json.dumps({'intel': [(i.ctx, i.usable, i.reason) for i in intel], 'dot': got}))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OCL_ICD_VENDORS", "LD_LIBRARY_PATH", "PYOPENCL_CTX")}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["intel"] and all(usable for _, usable, _ in result["intel"]), result
    x = [k / 1024 for k in range(1024)]
    assert result["dot"] == pytest.approx(sum(v * v for v in x), rel=1e-4)
