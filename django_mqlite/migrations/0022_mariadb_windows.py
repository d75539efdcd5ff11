"""MariaDB: the unique keys' windows as 0018 and 0019 define them, where
MariaDB has no partial index. Runs on MariaDB only; on SQLite and PostgreSQL it does
nothing.

Django skips a unique constraint with a condition on MariaDB (models.W036), so after
0018 and 0019:

- ``mqlite_msg_unique`` still stood on 0017's ``live_unique_key``, which left out the
  ``waiting`` state 0018 added to the live window: a waiting message did not hold its
  key. The column is made again with the live states of ``engine/lines.LIVE_SQL``;
- ``mqlite_msg_pending`` did not exist at all: two messages could hold one pending key.
  ``pending_unique_key`` is the pending key while the row is in the pending window
  (``engine/unique.py``'s predicate, term for term) and NULL otherwise, with a unique
  index on (queue, it) and a plain index on (queue, pending_key) for reading the holder;
- ``mqlite_msg_ttl``, which 0017 led with the state, was made again by 0018 without it;
  it leads with the state again.
"""

from django.db import migrations

LIVE = "('active', 'locked', 'deferred', 'scheduled', 'waiting')"
OLD_LIVE = "('active', 'locked', 'deferred', 'scheduled')"
PENDING = (
    "delivery_count = 0 AND pending_key IS NOT NULL AND snooze_count = 0 "
    "AND state IN ('active', 'scheduled')"
)


def _live(states: str) -> str:
    return f"ADD COLUMN live_unique_key varchar(200) AS (IF(state IN {states}, unique_key, NULL)) VIRTUAL"


CREATE = [
    "ALTER TABLE mqlite_message DROP INDEX mqlite_msg_unique, DROP COLUMN live_unique_key",
    "ALTER TABLE mqlite_message "
    f"{_live(LIVE)}, "
    "ADD UNIQUE INDEX mqlite_msg_unique (queue_id, live_unique_key), "
    "ADD COLUMN pending_unique_key varchar(200) "
    f"AS (IF({PENDING}, pending_key, NULL)) VIRTUAL, "
    "ADD UNIQUE INDEX mqlite_msg_pending (queue_id, pending_unique_key), "
    "ADD INDEX mqlite_msg_pending_key (queue_id, pending_key), "
    "DROP INDEX mqlite_msg_ttl, ADD INDEX mqlite_msg_ttl (state, expires_at)",
]
DROP = [
    "ALTER TABLE mqlite_message "
    "DROP INDEX mqlite_msg_ttl, ADD INDEX mqlite_msg_ttl (expires_at), "
    "DROP INDEX mqlite_msg_pending_key, DROP INDEX mqlite_msg_pending, "
    "DROP COLUMN pending_unique_key, "
    "DROP INDEX mqlite_msg_unique, DROP COLUMN live_unique_key",
    f"ALTER TABLE mqlite_message {_live(OLD_LIVE)}, "
    "ADD UNIQUE INDEX mqlite_msg_unique (queue_id, live_unique_key)",
]


def _is_mariadb(schema_editor):  # type: ignore[no-untyped-def]
    conn = schema_editor.connection
    return conn.vendor == "mysql" and conn.mysql_is_mariadb


def create(apps, schema_editor):  # type: ignore[no-untyped-def]
    if _is_mariadb(schema_editor):
        for sql in CREATE:
            schema_editor.execute(sql, params=None)


def drop(apps, schema_editor):  # type: ignore[no-untyped-def]
    if _is_mariadb(schema_editor):
        for sql in DROP:
            schema_editor.execute(sql, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("django_mqlite", "0021_schedules"),
    ]

    # DDL on MariaDB commits as it goes: no transaction around it.
    atomic = False
    operations = [migrations.RunPython(create, drop, atomic=False)]
