"""System checks: unsupported vendors refused, SQLite settings warned about."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from django_mqlite import checks


def databases(**default: Any) -> dict[str, Any]:
    return {**settings.DATABASES, "queue": default}


@pytest.mark.parametrize(
    "engine", ["django.db.backends.mysql", "django.db.backends.oracle", "mssql"]
)
def test_unsupported_vendor_is_an_error_with_a_hint(engine: str) -> None:
    with override_settings(DATABASES=databases(ENGINE=engine), MQLITE={"DATABASE": "queue"}):
        (msg,) = checks.check_database()
    assert msg.id == "django_mqlite.E001"
    assert msg.hint and "PostgreSQL" in msg.hint


def test_unknown_alias_is_an_error() -> None:
    with override_settings(MQLITE={"DATABASE": "nowhere"}):
        (msg,) = checks.check_database()
    assert msg.id == "django_mqlite.E003"


def test_sqlite_without_immediate_transactions_warns() -> None:
    conf = {"ENGINE": "django.db.backends.sqlite3", "NAME": "x.sqlite3"}
    with override_settings(DATABASES=databases(**conf), MQLITE={"DATABASE": "queue"}):
        (msg,) = checks.check_database()
    assert msg.id == "django_mqlite.W001"
    assert msg.hint and "IMMEDIATE" in msg.hint


def test_old_sqlite_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checks.sqlite3, "sqlite_version_info", (3, 31, 1))
    monkeypatch.setattr(checks.sqlite3, "sqlite_version", "3.31.1")
    conf = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": "x.sqlite3",
        "OPTIONS": {"transaction_mode": "IMMEDIATE"},
    }
    with override_settings(DATABASES=databases(**conf), MQLITE={"DATABASE": "queue"}):
        ids = [m.id for m in checks.check_database()]
    assert ids == ["django_mqlite.E002"]


def test_supported_settings_pass() -> None:
    assert checks.check_database() == []


@pytest.mark.django_db
def test_wal_check(vendor: str) -> None:
    out = checks.check_sqlite_wal(databases=["default"])
    assert out == []  # the test settings use WAL on SQLite; nothing to say on PostgreSQL


def test_rollback_journal_warns(tmp_path: Any) -> None:
    """Run the checks in a fresh process against a SQLite file in rollback-journal mode."""
    import json
    import subprocess
    import sys

    path = tmp_path / "rollback.sqlite3"
    code = f"""
import json, django
from django.conf import settings
settings.configure(
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "django_mqlite"],
    DATABASES={{"default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": {str(path)!r},
                "OPTIONS": {{"transaction_mode": "IMMEDIATE"}}}}}},
)
django.setup()
from django.core import checks
print(json.dumps([m.id for m in checks.run_checks(databases=["default"])
                  if m.id.startswith("django_mqlite")]))
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["django_mqlite.W002"]
