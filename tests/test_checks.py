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


@pytest.mark.parametrize("engine", ["django.db.backends.oracle", "mssql"])
def test_unsupported_vendor_is_an_error_with_a_hint(engine: str) -> None:
    with override_settings(DATABASES=databases(ENGINE=engine), MQLITE={"DATABASE": "queue"}):
        (msg,) = checks.check_database()
    assert msg.id == "django_mqlite.E001"
    assert msg.hint and "PostgreSQL" in msg.hint and "MariaDB 10.6+" in msg.hint


class Server:
    """What check_mariadb asks of a connection on Django's MySQL backend."""

    def __init__(self, mariadb: bool, version: tuple[int, ...]) -> None:
        self.mysql_is_mariadb = mariadb
        self.mysql_version = version


def mariadb_check(monkeypatch: pytest.MonkeyPatch, server: Server, **mqlite: Any) -> list[Any]:
    monkeypatch.setattr(checks, "connections", {"queue": server})
    mysql = databases(ENGINE="django.db.backends.mysql")
    with override_settings(DATABASES=mysql, MQLITE={"DATABASE": "queue", **mqlite}):
        assert checks.check_database() == []  # only the server can say: check_mariadb
        return checks.check_mariadb(databases=["queue"])


def test_mariadb_10_6_is_accepted_with_no_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert mariadb_check(monkeypatch, Server(True, (10, 6, 0))) == []
    assert mariadb_check(monkeypatch, Server(True, (11, 4, 2))) == []


def test_mysql_is_refused_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    (msg,) = mariadb_check(monkeypatch, Server(False, (8, 4, 0)))
    assert msg.id == "django_mqlite.E012"
    assert "is MySQL" in msg.msg and "MySQL 8 cannot be installed" in msg.msg
    assert msg.hint and "MariaDB 10.6+" in msg.hint


def test_mariadb_before_10_6_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    (msg,) = mariadb_check(monkeypatch, Server(True, (10, 5, 19)))
    assert msg.id == "django_mqlite.E012"
    assert "MariaDB 10.5.19 is too old" in msg.msg


def test_the_old_switch_is_ignored_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """A project that still sets MQLITE["EXPERIMENTAL_MARIADB"] starts as before (no
    error, MySQL still refused) and is told to remove it, not that the key is unknown."""
    for value in (True, False):
        assert (
            mariadb_check(monkeypatch, Server(True, (10, 11, 6)), EXPERIMENTAL_MARIADB=value) == []
        )
        (msg,) = mariadb_check(monkeypatch, Server(False, (8, 0, 36)), EXPERIMENTAL_MARIADB=value)
        assert msg.id == "django_mqlite.E012"
        with override_settings(MQLITE={"EXPERIMENTAL_MARIADB": value}):
            (msg,) = checks.check_setting_keys()
        assert msg.id == "django_mqlite.W004"
        assert "obsolete and ignored" in msg.msg and "MariaDB 10.6+ is a supported" in msg.msg
        assert msg.hint == "Remove 'EXPERIMENTAL_MARIADB' from MQLITE."


def test_the_mariadb_check_asks_only_databases_it_may_touch() -> None:
    mysql = databases(ENGINE="django.db.backends.mysql")
    with override_settings(DATABASES=mysql, MQLITE={"DATABASE": "queue"}):
        assert checks.check_mariadb(databases=[]) == []  # no connection to "queue" made


@pytest.mark.django_db
def test_the_database_under_test_passes_the_mariadb_check() -> None:
    """On MariaDB (MQLITE_TEST_DB=mariadb) the server is asked; elsewhere nothing is."""
    assert checks.check_mariadb(databases=["default"]) == []


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
def test_wal_check() -> None:
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


def test_unknown_setting_key_warns_with_a_suggestion() -> None:
    with override_settings(MQLITE={"RECIEPT_TTL": 10, "QUEUES": {}}):
        (msg,) = checks.check_setting_keys()
    assert msg.id == "django_mqlite.W003"
    assert msg.hint == "Did you mean 'RECEIPT_TTL'?"


def test_mqlite_must_be_a_dict() -> None:
    with override_settings(MQLITE=["QUEUES"]):
        (msg,) = checks.check_setting_keys()
    assert msg.id == "django_mqlite.E005"


def test_every_setting_and_command_flag_is_documented() -> None:
    from django.core.management import load_command_class

    from django_mqlite.conf import DEFAULTS

    docs = Path(__file__).resolve().parent.parent / "docs"
    config = (docs / "configuration.md").read_text()
    assert [k for k in DEFAULTS if f"`{k}`" not in config] == []
    commands = (docs / "workers.md").read_text() + (docs / "cli.md").read_text()
    missing = []
    for name in ("runworker", "runreaper", "mqlite"):
        parser = load_command_class("django_mqlite", name).create_parser("manage.py", name)
        actions = list(parser._actions)
        for action in parser._actions:
            for choice in getattr(action, "choices", None) or {}:
                sub = action.choices[choice]
                if hasattr(sub, "_actions"):
                    actions += sub._actions
        for action in actions:
            for flag in action.option_strings:
                if flag.startswith("--") and flag not in BASE_FLAGS and flag not in commands:
                    missing.append(f"{name} {flag}")
    assert sorted(set(missing)) == []


# Django's own options of every management command.
BASE_FLAGS = {
    "--help",
    "--version",
    "--verbosity",
    "--settings",
    "--pythonpath",
    "--traceback",
    "--no-color",
    "--force-color",
    "--skip-checks",
}
