"""A busy database (SQLite's write lock held past the busy timeout) is a 503 to retry,
with a stable code and ``Retry-After``; any other database error stays a 500 (a bug)."""

from __future__ import annotations

from django.db import OperationalError

from django_mqlite.api.exceptions import describe, exception_handler


def test_a_busy_database_is_a_503_to_retry() -> None:
    assert describe(OperationalError("database is locked"))[:2] == (503, "database_busy")  # type: ignore[index]
    response = exception_handler(OperationalError("database is locked"), {})
    assert response is not None and response.status_code == 503
    assert response["Retry-After"] == "1" and response.data["code"] == "database_busy"


def test_other_database_errors_stay_bugs() -> None:
    assert describe(OperationalError("no such table: mqlite_message")) is None
    assert exception_handler(OperationalError("disk I/O error"), {}) is None
