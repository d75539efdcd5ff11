"""Snooze: the snoozes asked of a message, and a queue's cap on the free ones.

Written as plain ``ADD COLUMN`` with a database default on every vendor: SQLite's schema
editor would rebuild ``mqlite_message`` for a column with a default, copying every row
and dropping the ``mqlite_count_enqueued`` trigger of 0008 on the way. The state side is
the model's fields, so ``makemigrations`` sees nothing to do.
"""

from django.db import migrations, models

ADD = [
    "ALTER TABLE mqlite_message ADD COLUMN snooze_count integer DEFAULT 0 NOT NULL",
    "ALTER TABLE mqlite_queue ADD COLUMN max_snoozes integer DEFAULT 100 NOT NULL",
]
DROP = [
    "ALTER TABLE mqlite_queue DROP COLUMN max_snoozes",
    "ALTER TABLE mqlite_message DROP COLUMN snooze_count",
]


class Migration(migrations.Migration):
    dependencies = [
        ("django_mqlite", "0014_unique_keys"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(sql=add, reverse_sql=drop)
                for add, drop in zip(ADD, reversed(DROP), strict=True)
            ],
            state_operations=[
                migrations.AddField(
                    model_name="message",
                    name="snooze_count",
                    field=models.IntegerField(db_default=0, default=0),
                ),
                migrations.AddField(
                    model_name="queue",
                    name="max_snoozes",
                    field=models.IntegerField(db_default=100, default=100),
                ),
            ],
        ),
    ]
