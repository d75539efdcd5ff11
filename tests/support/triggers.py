"""The counting triggers installed in the database under test (migrations 0008 and
0017), read from each vendor's catalogue."""

from __future__ import annotations

from django.db import connection

NAMES = {"mqlite_count_enqueued", "mqlite_count_deferred"}


def triggers() -> set[str]:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        elif connection.vendor == "mysql":
            cursor.execute(
                "SELECT trigger_name FROM information_schema.triggers "
                "WHERE trigger_schema = DATABASE()"
            )
        else:
            cursor.execute("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")
        return {r[0] for r in cursor.fetchall()} & NAMES
