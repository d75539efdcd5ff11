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
# The reliability suite's consumers and producer (``tests/reliability/``), only when it
# asks: every other test's worker serves "every queue with a consumer".
if os.environ.get("MQLITE_TEST_RELIABILITY"):
    INSTALLED_APPS.append("tests.workerproject.reliability")
# ``async def`` consumers (``tests/aio/``), only when a test asks.
if os.environ.get("MQLITE_TEST_ASYNC"):
    INSTALLED_APPS.append("tests.workerproject.aio_consumers")
MQLITE = {**MQLITE, **json.loads(os.environ.get("MQLITE_TEST_OVERRIDES") or "{}")}

# The database-fault tests shorten SQLite's busy timeout so lock pressure surfaces as
# "database is locked" errors in the worker instead of long waits.
if os.environ.get("MQLITE_TEST_SQLITE_TIMEOUT") and DATABASES["default"]["ENGINE"].endswith(  # noqa: F405
    "sqlite3"
):
    DATABASES["default"]["OPTIONS"]["timeout"] = float(os.environ["MQLITE_TEST_SQLITE_TIMEOUT"])  # noqa: F405
