"""Settings of the tiny project that worker process tests start with ``manage.py``.

``MQLITE_TEST_OVERRIDES`` (JSON) is merged into ``MQLITE`` so a test can shorten the
heartbeat, staleness and backoff for its child processes.
"""

from __future__ import annotations

import json
import os

from tests.settings import *  # noqa: F403
from tests.settings import INSTALLED_APPS, MQLITE

INSTALLED_APPS = [*INSTALLED_APPS, "tests.workerproject.recorder"]
MQLITE = {**MQLITE, **json.loads(os.environ.get("MQLITE_TEST_OVERRIDES") or "{}")}
