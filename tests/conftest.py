"""Test configuration: deterministic hypothesis profiles and shared fixtures."""

from __future__ import annotations

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
