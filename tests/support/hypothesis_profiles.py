"""The Hypothesis profiles, as a pytest plugin (loaded by ``tests/conftest.py``): the one place that
sets how many examples the property and fuzz tests generate.

``ci`` (``make test`` and CI) gives every test the most examples any of them had; ``dev``
(``make test-fast``) a quick look while editing. Choose with ``--hypothesis-profile=NAME`` or
``HYPOTHESIS_PROFILE``; without either it is ``ci`` when ``CI`` is set, else ``dev``. Both are
reproducible: examples come from a fixed seed and no example database, so a failure seen once is
seen on every run and every machine.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

from live_services import env_flag

COMMON = {
    "derandomize": True,
    "database": None,
    "deadline": None,  # a shared, loaded machine: timing is no property of these tests
    # The fuzz tests keep their (function-scoped) database world across examples on purpose.
    "suppress_health_check": [
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
}
settings.register_profile("ci", max_examples=400, **COMMON)
settings.register_profile("dev", max_examples=25, **COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if env_flag("CI") else "dev"))
