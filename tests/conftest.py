"""Shared test setup: Hypothesis profiles, registered once.

    dev   (default) quick, for the edit-test loop
    ci    more examples, no deadline (CI machines are shared and noisy)
    deep  long runs for the `slow` marker; select with HYPOTHESIS_PROFILE=deep
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
