"""Device choice that verifies: the probe, its verdicts on disk, skipping, and the clear word.

The failing device is simulated: `lift.devices.usable.attempt` is replaced by one that fails the
way PoCL 3.0 from PyPI fails on an AMD Zen 5 (its LLVM 14 does not know the CPU), and a second,
broken device is a stand-in object next to the real PoCL device. No test assumes which platform
index the PyPI PoCL has: with the distribution's PoCL installed too it is often platform 1, and
`another_pocl_first` puts a stand-in for that one at index 0 (issue 26 item 10).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import lift
from lift import devices, runtime
from lift.devices import live, usable
from lift.devices.usable import Verdict
from lift.errors import DeviceError, DeviceSkipped
from tests.programs import dot_program

ROOT = Path(__file__).resolve().parents[1]
LOG = ("error: unknown target CPU 'generic'\n"
       "note: valid target CPU values are: nocona, core2, penryn, ..., znver1, znver2, znver3, x86-64\n")
ZEN5 = Verdict(False, "cannot build a one-line kernel: error: unknown target CPU 'generic'", LOG)
REMEDY_WORDS = ("pocl-opencl-icd", "intel-opencl-rt", "PYOPENCL_CTX")


@pytest.fixture(autouse=True)
def fresh_verdicts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test probes afresh: no verdict in memory, an empty folder on disk."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    monkeypatch.setattr(usable, "_VERDICTS", {})
    monkeypatch.setattr(live, "_WARNED", set())


def wipe() -> None:
    """Forget every verdict, in memory and on disk."""
    shutil.rmtree(usable.verdict_dir(), ignore_errors=True)
    usable.forget()


def real_device():
    """The attached device the default choice takes (a working one)."""
    return live.find()


def real_ctx() -> str:
    """The `PYOPENCL_CTX` value of that device."""
    return next(i.ctx for i in devices.list() if i.default)


@dataclass
class _Platform:
    name: str = "Portable Computing Language"
    version: str = "OpenCL 3.0 PoCL 3.0-rc2  Linux, Release, RELOC, LLVM 14.0.6, SLEEF, DISTRO"


@dataclass
class OtherPlatform:
    """Stands for Debian's PoCL 3.1 (LLVM 15), listed before the PyPI one when both are installed."""

    name: str = "Portable Computing Language"
    version: str = "OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, LLVM 15.0.6, SLEEF, DISTRO"

    def get_devices(self) -> list:
        return [BrokenDevice(name="pthread-haswell-AMD EPYC", platform=self, driver_version="3.1+debian",  # type: ignore[arg-type]
                             int_ptr=7)]


def another_pocl_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Platform 0 is another PoCL; the attached ones follow."""
    real = live._platforms
    monkeypatch.setattr(live, "_platforms", lambda: [OtherPlatform(), *real()])


@dataclass
class BrokenDevice:
    """Stands for a device the loader lists but whose compiler cannot build (PyPI PoCL on Zen 5)."""

    name: str = "pthread-generic"
    platform: _Platform = field(default_factory=_Platform)
    version: str = "OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-generic"
    driver_version: str = "3.0-rc2"
    type: int = 2  # CL_DEVICE_TYPE_CPU
    int_ptr: int = 1


def fail_everywhere(monkeypatch: pytest.MonkeyPatch) -> list:
    calls: list = []
    monkeypatch.setattr(usable, "attempt", lambda d: calls.append(d) or ZEN5)
    return calls


def fail_broken_only(monkeypatch: pytest.MonkeyPatch) -> list:
    real_attempt, calls = usable.attempt, []

    def attempt(d):
        calls.append(d)
        return ZEN5 if isinstance(d, BrokenDevice) else real_attempt(d)

    monkeypatch.setattr(usable, "attempt", attempt)
    return calls


def llvm_versions(name: str | None = None) -> set[str]:
    """"LLVM x.y.z" of every platform lift.devices sees (with a device called `name`), in any order."""
    out = set()
    for p in live._platforms():
        if name is None or any(d.name.strip() == name for d in live._platform_devices(p)):
            found = re.search(r"LLVM \d[\d.]*\d", p.version)
            out |= {found.group()} if found else set()
    return out


def assert_clear_word(err: DeviceError) -> None:
    text = str(err)
    assert "unknown target CPU 'generic'" in text and "does not know this CPU" in text
    named = re.search(r"device '([^']+)'", text)  # the LLVM of the device named, whichever platform it is on
    assert any(v in text for v in llvm_versions(named.group(1) if named else None)), text
    assert all(w in text for w in REMEDY_WORDS), text
    assert "code-generation bug" not in text


# ------------------------------------------------------------------------------ probe


@pytest.mark.device
def test_probe_builds_and_runs_a_kernel_and_remembers_the_verdict_on_disk(monkeypatch, tmp_path) -> None:
    d = real_device()
    wipe()
    v = usable.verdict(d)
    assert v.usable and v.reason == usable.USABLE and not v.cached
    stored = tmp_path / "liftcl" / "devices" / f"{v.key}.json"
    assert stored.exists()
    calls = fail_everywhere(monkeypatch)  # a later probe would fail: the verdicts are not re-probed
    assert usable.verdict(d) is v  # this process's memory
    usable.forget()
    again = usable.verdict(d)
    assert again.usable and again.cached and calls == []  # read from disk
    assert not usable.verdict(d, fresh=True).usable and len(calls) == 1


@pytest.mark.device
def test_verdict_key_names_driver_versions_cpu_and_pocl_settings(monkeypatch) -> None:
    d = real_device()
    key = usable.verdict_key(d)
    assert key == usable.verdict_key(d)
    monkeypatch.setenv("POCL_WORK_GROUP_METHOD", "loopvec")
    assert usable.verdict_key(d) != key
    other = BrokenDevice(driver_version="3.1")
    assert usable.verdict_key(other) != usable.verdict_key(BrokenDevice())
    assert "family" in usable.host_cpu() or usable.host_cpu()


@pytest.mark.device
def test_a_probe_that_raises_is_an_unusable_verdict(monkeypatch) -> None:
    def boom(d):
        raise ValueError("driver said no")

    d = real_device()
    monkeypatch.setattr(usable, "_attempt", boom)
    v = usable.verdict(d, fresh=True)
    assert not v.usable and v.reason == "the probe failed: ValueError: driver said no"


def test_first_log_line_is_the_error() -> None:
    assert usable.first_log_line(LOG) == "error: unknown target CPU 'generic'"
    assert usable.first_log_line("\n  warning: x\nsecond\n") == "warning: x"
    assert ZEN5.first_line == "error: unknown target CPU 'generic'"


# ----------------------------------------------------------------------- default choice


@pytest.mark.device
def test_default_skips_a_device_that_cannot_build_and_runs_on_the_next(monkeypatch) -> None:
    real = real_device()
    monkeypatch.setattr(live, "_all_devices", lambda: [BrokenDevice(), real])
    calls = fail_broken_only(monkeypatch)
    x = np.random.default_rng(0).random(1000, dtype=np.float32)
    y = np.random.default_rng(1).random(1000, dtype=np.float32)
    with pytest.warns(DeviceSkipped, match="pthread-generic.*unknown target CPU 'generic'") as got:
        k = lift.compile(dot_program())
        assert np.allclose(k(x, y), np.dot(x.astype(np.float64), y), rtol=1e-4)
        lift.compile(dot_program())  # warned once per device and process
    skipped = [w.message for w in got if isinstance(w.message, DeviceSkipped)]
    assert len(skipped) == 1 and skipped[0].device == "pthread-generic"
    assert k.device.name == real.name.strip()
    assert sum(isinstance(d, BrokenDevice) for d in calls) == 1  # probed once per process


@pytest.mark.device
def test_no_usable_device_is_a_device_error_naming_the_remedies(monkeypatch) -> None:
    fail_everywhere(monkeypatch)
    x = np.ones(64, dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeviceSkipped)
        with pytest.raises(DeviceError) as e:
            lift.compile(dot_program())(x, x)
    assert "no usable OpenCL device" in str(e.value)
    assert_clear_word(e.value)


def test_gpus_come_before_cpu_runtimes_and_pocl_before_other_cpus(monkeypatch) -> None:
    gpu = BrokenDevice(name="gpu", type=4, int_ptr=2)
    intel = BrokenDevice(name="intel", platform=_Platform(name="Intel(R) OpenCL"), int_ptr=3)
    pocl = BrokenDevice(name="pocl", int_ptr=4)
    assert [d.name for d in live._preference([intel, pocl, gpu])] == ["gpu", "pocl", "intel"]


# -------------------------------------------------------------------- given as asked


@pytest.mark.device
def test_pyopencl_ctx_is_honoured_and_a_broken_choice_says_so(monkeypatch) -> None:
    ctx = real_ctx()
    monkeypatch.setenv("PYOPENCL_CTX", ctx)
    assert devices.current().name == real_device().name.strip()
    wipe()
    fail_everywhere(monkeypatch)
    with pytest.raises(DeviceError, match=f"chosen by PYOPENCL_CTX='{ctx}'.*cannot build programs") as e:
        devices.find()
    assert_clear_word(e.value)


@pytest.mark.device
@pytest.mark.parametrize("order", ["attached", "another PoCL first"])
def test_a_device_given_that_cannot_build_is_an_error_not_a_fallback(monkeypatch, order) -> None:
    d = real_device()
    if order != "attached":
        another_pocl_first(monkeypatch)
    wipe()
    fail_everywhere(monkeypatch)
    for given in (d, "pocl-cpu", "pthread", devices.profile("pocl-cpu")):
        with pytest.raises(DeviceError, match="cannot build programs") as e:
            devices.find(given)
        assert_clear_word(e.value)
    with pytest.raises(DeviceError, match="given as device="):
        lift.compile(dot_program(), device=d)


def test_build_failure_hint_tells_a_broken_compiler_from_a_codegen_bug() -> None:
    dev = devices.profile("pocl-cpu")
    src = "kernel void k(global float* x) { x[0] = 1.0f; }"
    broken = runtime.build_error(dev, src, LOG)
    assert "unknown target CPU" in str(broken) and "code-generation bug" not in str(broken)
    assert all(w in broken.hint for w in REMEDY_WORDS)
    bug = runtime.build_error(dev, src, "error: <source>:1:5: use of undeclared identifier 'q'")
    assert "code-generation bug" in bug.hint


# ------------------------------------------------------------------------------- list


@pytest.mark.device
def test_list_shows_every_device_usable_or_not_and_why(monkeypatch) -> None:
    infos = devices.list()
    assert infos and all(isinstance(i, devices.DeviceInfo) for i in infos)
    assert sum(i.default for i in infos) == 1
    first = next(i for i in infos if i.default)
    assert first.usable and first.reason == usable.USABLE and first.name == real_device().name.strip()
    assert first.profile is not None and first.profile.live and first.profile.name == first.name
    fail_everywhere(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeviceSkipped)
        broken = devices.list(fresh=True)
    assert [i.name for i in broken] == [i.name for i in infos]
    assert not any(i.usable or i.default for i in broken)
    assert all("unknown target CPU" in i.reason and "does not know this CPU" in i.explanation for i in broken)


# ------------------------------------------------------------------------ fresh machine


@pytest.mark.device
def test_only_the_pypi_pocl_visible_runs_dot_or_names_the_remedy(tmp_path: Path) -> None:
    """With OCL_ICD_VENDORS at an empty folder the loader sees only the PyPI PoCL: dot runs
    correctly on it, or (on a CPU its LLVM does not know) the DeviceError names the remedies."""
    vendors = tmp_path / "vendors"
    vendors.mkdir()
    code = ("import numpy as np, lift; from tests.programs import dot_program\n"
            "x = np.arange(256, dtype=np.float32) / 256\n"
            "try:\n    print('RAN', float(lift.compile(dot_program())(x, x)))\n"
            "except lift.DeviceError as e:\n    print('ERROR', e)\n")
    env = dict(os.environ, OCL_ICD_VENDORS=str(vendors), XDG_CACHE_HOME=str(tmp_path))
    env.pop("PYOPENCL_CTX", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    pypi = [i for i in devices.list() if "3.0-rc2" in i.platform_version]
    if out.stdout.startswith("RAN"):
        x = np.arange(256, dtype=np.float64) / 256
        assert abs(float(out.stdout.split()[1]) - x @ x) < 1e-3
        assert not pypi or pypi[0].usable
    else:
        assert out.stdout.startswith("ERROR no usable OpenCL device"), out.stdout + out.stderr
        assert all(w in out.stdout for w in REMEDY_WORDS) and "code-generation bug" not in out.stdout
        assert pypi and not pypi[0].usable


@pytest.mark.device
def test_ci_device_check(monkeypatch, capsys) -> None:
    """`.ci/device_check.py`: 0 when the default device works, 1 (with the remedies) when none does."""
    import runpy

    check = runpy.run_path(str(ROOT / ".ci" / "device_check.py"))["main"]
    assert check() == 0
    assert "usable" in capsys.readouterr().out
    wipe()
    fail_everywhere(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeviceSkipped)
        assert check() == 1
    out = capsys.readouterr().out
    assert "unknown target CPU" in out and "pocl-opencl-icd" in out
