"""PoCL's worker threads pinned to cores (lift.devices.affinity): set where the user has not said
otherwise and every CPU is the process's; never against the user's setting or a CPU set."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lift.devices import affinity


def test_pin_sets_the_variable_when_unset_and_every_cpu_is_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(affinity.VARIABLE, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert affinity.pin() is True and os.environ[affinity.VARIABLE] == "1"


def test_pin_keeps_the_users_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(affinity.VARIABLE, "0")
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert affinity.pin() is False and os.environ[affinity.VARIABLE] == "0"


def test_pin_leaves_a_restricted_cpu_set_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """PoCL pins worker i to CPU i: with CPUs 2 and 3 only (a container's cpuset) that would fail."""
    monkeypatch.delenv(affinity.VARIABLE, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2, 3}, raising=False)
    assert affinity.pin() is False and affinity.VARIABLE not in os.environ


def test_pin_without_an_affinity_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(affinity.VARIABLE, raising=False)
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    assert affinity.pin() is False and affinity.VARIABLE not in os.environ


@pytest.mark.device
@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity API here")
def test_a_fresh_process_that_compiles_has_pinned_workers() -> None:
    """Set before PoCL loads, by the first use of the OpenCL stack (lift.devices.caches.prepare)."""
    code = ("import os, lift, numpy as np\n"
            "p = lift.compile(lift.fun([lift.Array(lift.Float, 8)], lambda a: lift.map(lambda x: x) << a))\n"
            "assert (p(np.ones(8, np.float32)) == 1).all()\n"
            "print(os.environ.get('POCL_AFFINITY'))\n")
    env = {k: v for k, v in os.environ.items() if k != affinity.VARIABLE}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    whole = os.sched_getaffinity(0) == set(range(os.cpu_count() or 0))
    assert out.stdout.split()[-1] == ("1" if whole else "None"), out.stdout
