"""Triggers that keep the ``enqueued`` totals, so that a send is one short statement.

SQLite: a trigger on every insert into ``mqlite_message`` adds one to the queue's totals
row inside the inserting statement (SQLite has no data-modifying CTE to carry the
counter, as PostgreSQL's send does).

PostgreSQL: the first send to a queue in a transaction adds to its totals row itself;
later sends to that queue in the same transaction only add to a transaction-local
setting (``mqlite.enqueued_<queue id>``, rolled back with a savepoint or the
transaction), and a deferred constraint trigger on the totals row adds that setting's
value once, at commit (or at ``SET CONSTRAINTS mqlite_count_deferred IMMEDIATE``, which
a reader of the totals inside the transaction runs first). One row update per queue and
transaction instead of one per send.
"""

from django.db import migrations

# The totals as of this migration (engine/types.py TOTAL_NAMES): a new total added
# later must have a database default or be written here by a later migration.
OTHERS = (
    "delivered, completed, abandoned, reclaimed, retried, exhausted, rejected, expired, "
    "dead_lettered, redriven, purged"
)

SQLITE_CREATE = (
    "CREATE TRIGGER IF NOT EXISTS mqlite_count_enqueued AFTER INSERT ON mqlite_message "
    "BEGIN "
    f"INSERT INTO mqlite_totals (queue_id, shard, enqueued, {OTHERS}) "
    "VALUES (NEW.queue_id, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) "
    "ON CONFLICT (queue_id, shard) DO UPDATE SET enqueued = enqueued + 1; "
    "END"
)
SQLITE_DROP = "DROP TRIGGER IF EXISTS mqlite_count_enqueued"

POSTGRES_CREATE = [
    """
CREATE OR REPLACE FUNCTION mqlite_count_deferred() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    setting text := 'mqlite.enqueued_' || NEW.queue_id;
    pending bigint := NULLIF(current_setting(setting, true), '')::bigint;
BEGIN
    IF pending > 0 THEN
        PERFORM set_config(setting, '0', true);
        UPDATE mqlite_totals SET enqueued = enqueued + pending WHERE id = NEW.id;
    END IF;
    RETURN NULL;
END
$$
""",
    """
CREATE CONSTRAINT TRIGGER mqlite_count_deferred
AFTER INSERT OR UPDATE OF enqueued ON mqlite_totals
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW EXECUTE FUNCTION mqlite_count_deferred()
""",
]
POSTGRES_DROP = [
    "DROP TRIGGER IF EXISTS mqlite_count_deferred ON mqlite_totals",
    "DROP FUNCTION IF EXISTS mqlite_count_deferred()",
]


def _run(schema_editor, by_vendor):  # type: ignore[no-untyped-def]
    for sql in by_vendor.get(schema_editor.connection.vendor, []):
        schema_editor.execute(sql)


def create(apps, schema_editor):  # type: ignore[no-untyped-def]
    _run(schema_editor, {"sqlite": [SQLITE_CREATE], "postgresql": POSTGRES_CREATE})


def drop(apps, schema_editor):  # type: ignore[no-untyped-def]
    _run(schema_editor, {"sqlite": [SQLITE_DROP], "postgresql": POSTGRES_DROP})


class Migration(migrations.Migration):
    dependencies = [
        ("django_mqlite", "0007_api_permissions"),
    ]

    operations = [migrations.RunPython(create, drop)]
