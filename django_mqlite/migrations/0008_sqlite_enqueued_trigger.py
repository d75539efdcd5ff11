"""SQLite counts each queue's ``enqueued`` total itself: a trigger on every insert into
``mqlite_message`` adds one to the queue's totals row, in the inserting statement. A
single send is then one statement there too (SQLite has no data-modifying CTE to carry
the counter, as PostgreSQL's send does). Nothing on PostgreSQL."""

from django.db import migrations

# The totals as of this migration (engine/types.py TOTAL_NAMES): a new total added
# later must have a database default or be written here by a later migration.
OTHERS = (
    "delivered, completed, abandoned, reclaimed, retried, exhausted, rejected, expired, "
    "dead_lettered, redriven, purged"
)

CREATE = (
    "CREATE TRIGGER IF NOT EXISTS mqlite_count_enqueued AFTER INSERT ON mqlite_message "
    "BEGIN "
    f"INSERT INTO mqlite_totals (queue_id, shard, enqueued, {OTHERS}) "
    "VALUES (NEW.queue_id, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) "
    "ON CONFLICT (queue_id, shard) DO UPDATE SET enqueued = enqueued + 1; "
    "END"
)
DROP = "DROP TRIGGER IF EXISTS mqlite_count_enqueued"


def create(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [
        ("django_mqlite", "0007_api_permissions"),
    ]

    operations = [migrations.RunPython(create, drop)]
