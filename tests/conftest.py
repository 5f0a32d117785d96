"""Test configuration: deterministic hypothesis profiles and shared fixtures."""

from __future__ import annotations

import os
import tempfile

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
