"""Test configuration: deterministic hypothesis profiles and shared fixtures."""

from __future__ import annotations

import os
import tempfile

import device_facts
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "slow",
    derandomize=False,
    deadline=None,
    max_examples=1000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("default")  # `pytest --hypothesis-profile=slow` selects the other

# Tests never read or write the user's tuning database (lift.compile consults it).
os.environ.setdefault("LIFTCL_TUNING_DB", os.path.join(tempfile.mkdtemp(prefix="liftcl-test-db-"), "tuning.sqlite"))

_LIVE: list = []  # [(Device | None, why none)]: the attached device, looked up once per process


def _live_device():
    if not _LIVE:
        import lift.devices
        from lift.errors import LiftError

        try:
            _LIVE.append((lift.devices.current(), ""))
        except LiftError as e:
            _LIVE.append((None, str(e).splitlines()[0]))
    return _LIVE[0]


def pytest_runtest_setup(item):
    """Skip a test whose device markers (tests/device_facts.py) do not hold for the attached device."""
    marks = {m.name for m in item.iter_markers()} & set(device_facts.MARKERS)
    if marks:
        reason = device_facts.skip_reason(marks, *_live_device())
        if reason:
            pytest.skip(reason)


@pytest.fixture
def live_device():
    """The `lift.devices.Device` of the attached device (skips when there is none)."""
    dev, why = _live_device()
    if dev is None:
        pytest.skip(f"no usable OpenCL device: {why}")
    return dev


@pytest.fixture
def races_show(live_device) -> bool:
    """Whether a missing barrier gives a wrong result on the attached device (device_facts.races_visible):
    a test asserts the race only where it shows, and the intact program's result everywhere."""
    return device_facts.races_visible(live_device) is None


@pytest.fixture(autouse=True)
def _warm_tune_worker(request):
    """Start the tuner's worker process (lift.explore.worker) before a tuning test, so that
    the one-off process start (~1-3 s on a loaded machine) is not charged to a short budget."""
    if request.node.get_closest_marker("device") and "tune" in request.node.name:
        import numpy as np

        from lift.explore import worker

        try:
            import lift

            w = worker.shared(lift.devices.current(), (np.zeros(1, np.float32),))
            w.call(("ping",), timeout=60)
        except Exception:  # noqa: BLE001 - no device: the test says so itself
            pass
    yield


def pytest_report_header(config):
    """The OpenCL device the tests run on and, for each device skipped, why."""
    import warnings

    import lift.devices
    from lift.errors import DeviceSkipped, LiftError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeviceSkipped)
        try:
            infos = lift.devices.list()
        except LiftError as e:
            return [f"OpenCL: {str(e).splitlines()[0]}"]
    return [f"OpenCL {i.ctx}: {i.name} ({i.platform}): {'default, ' if i.default else ''}"
            f"{'usable' if i.usable else 'UNUSABLE'}: {i.reason}" for i in infos]


@pytest.fixture(scope="session", autouse=True)
def device_chosen_once():
    """Choose the default device once per test process, before any test, so that the one
    `DeviceSkipped` warning for a broken device (reported in the header) does not land inside a
    test that turns warnings into errors."""
    import warnings

    import lift.devices
    from lift.errors import DeviceSkipped, LiftError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeviceSkipped)
        try:
            lift.devices.current()
        except LiftError:
            pass
    yield
