"""Shared test setup: Hypothesis profiles, registered once.

    dev   (default) quick, for the edit-test loop
    ci    more examples, no deadline (CI machines are shared and noisy)
    deep  long runs for the `slow` marker; select with HYPOTHESIS_PROFILE=deep
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings

# A finished run signs a checkpoint with the key at $LEDGERMEM_CHECKPOINT_KEY (ledger.checkpoint): tests, and
# the processes they start, use a throwaway key, never one in the tester's home.
_KEY_DIR = tempfile.mkdtemp(prefix="ledgermem-checkpoint-key-")
atexit.register(shutil.rmtree, _KEY_DIR, True)
os.environ["LEDGERMEM_CHECKPOINT_KEY"] = str(Path(_KEY_DIR) / "checkpoint.key")
os.environ.pop("LEDGERMEM_CHECKPOINT_OUT", None)

settings.register_profile("dev", max_examples=30, deadline=None)
settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
