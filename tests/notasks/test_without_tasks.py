"""A project without a Tasks framework (Django 5.2 without the ``django-tasks`` backport,
no ``TASKS`` naming django-mqlite's backend): every surface sends and ``manage.py check``
passes. The surfaces ask whether a queue is a Tasks queue on every remote send; that
question must be answered from the settings, importing no framework that is not there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import django
import pytest
from django.db import connection, connections

from tests.settings import SECOND
from tests.support.procs import ROOT

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", SECOND])


def run_child(**extra: str) -> dict[str, Any]:
    env = {
        **os.environ,
        **extra,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "tests.notasks.settings",
        "MQLITE_TEST_DB": os.environ.get("MQLITE_TEST_DB", "sqlite"),
        "MQLITE_TEST_DB_NAME": str(connection.settings_dict["NAME"]),
        "MQLITE_TEST_DB2_NAME": str(connections[SECOND].settings_dict["NAME"]),
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.notasks.child"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_every_surface_sends_and_check_passes_without_a_tasks_framework() -> None:
    got = run_child()
    failed = {k: v for k, v in got.items() if isinstance(v, dict) and not v["ok"]}
    assert not failed, json.dumps(failed, indent=1)
    assert "no issues" in got["check"]["value"]
    assert "declared" in got["declared"]["value"]
    assert got["http"]["value"] == [201, 201, 201]  # "jobs" is no Tasks queue here
    assert got["sqs"]["value"] == [200, 200, 2, 200]
    assert got["loaded"] == [] or got["django"] >= "6"


@pytest.mark.skipif(
    django.VERSION >= (6, 1),
    reason="Django 6.1+ ships django.tasks: its framework cannot be missing",
)
def test_a_tasks_queue_stays_closed_when_its_framework_cannot_load() -> None:
    """TASKS names our backend for "jobs" but no framework is there: the check says so
    (E021), the other queues take sends, and "jobs" refuses remote sends as configured."""
    got = run_child(MQLITE_NOTASKS_NAMED="1")
    failed = {k: v for k, v in got.items() if isinstance(v, dict) and not v["ok"]}
    assert not failed, json.dumps(failed, indent=1)
    if got["django"] < "6":
        assert "django_mqlite.E021" in got["check"]["value"]
    assert got["http"]["value"] == [201, 201, 403]
    assert got["sqs"]["value"] == [200, 200, 2, 403]
