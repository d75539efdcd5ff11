"""Helpers for tests that start real ``manage.py runworker`` / ``runreaper`` processes.

The child uses the very test database this pytest process created (its NAME travels in
``MQLITE_TEST_DB_NAME``) and records what its consumers see in a JSON-lines file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.db import connection, connections

from tests.settings import SECOND

ROOT = Path(__file__).resolve().parents[2]
MANAGE = ROOT / "tests" / "workerproject" / "manage.py"


def wait_for(
    predicate: Callable[[], Any], timeout: float = 20.0, every: float = 0.05, what: str = ""
) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout}s: {what or 'condition'}")
        time.sleep(every)


class Workers:
    """Starts child processes of the worker test project and cleans them up."""

    def __init__(self, tmp: Path) -> None:
        self.log = tmp / "events.jsonl"
        self.log.touch()
        self.procs: list[subprocess.Popen[str]] = []

    def env(self, overrides: dict[str, Any] | None) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "tests.workerproject.settings",
            "MQLITE_TEST_DB": os.environ.get("MQLITE_TEST_DB", "sqlite"),
            "MQLITE_TEST_DB_NAME": str(connection.settings_dict["NAME"]),
            "MQLITE_TEST_DB2_NAME": str(connections[SECOND].settings_dict["NAME"]),
            "MQLITE_TEST_LOG": str(self.log),
            "MQLITE_TEST_OVERRIDES": json.dumps(overrides or {}),
        }

    def start(
        self, *args: str, command: str = "runworker", overrides: dict[str, Any] | None = None
    ) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, str(MANAGE), command, *args],
            cwd=ROOT,
            env=self.env(overrides),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def events(self, event: str | None = None, **match: Any) -> list[dict[str, Any]]:
        out = []
        for line in self.log.read_text().splitlines():
            e = json.loads(line)
            if (event is None or e["event"] == event) and all(
                e.get(k) == v for k, v in match.items()
            ):
                out.append(e)
        return out

    def finish(self, proc: subprocess.Popen[str], timeout: float = 30.0) -> tuple[int, str, str]:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err

    def stop(self, proc: subprocess.Popen[str], timeout: float = 30.0) -> tuple[int, str, str]:
        proc.send_signal(signal.SIGTERM)
        return self.finish(proc, timeout)

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
