"""Schedules stored in the database (``engine/schedules.py``), beside those declared in
``MQLITE["PERIODIC"]``; their cursors stay in ``mqlite_periodic``. On MariaDB the table
takes the binary no-pad collation of the other tables (``0017_mariadb``), so names
compare exactly."""

from django.db import migrations, models


def _collate(apps, schema_editor):  # type: ignore[no-untyped-def]
    conn = schema_editor.connection
    if conn.vendor == "mysql" and conn.mysql_is_mariadb:
        schema_editor.execute(
            "ALTER TABLE mqlite_schedule CONVERT TO CHARACTER SET utf8mb4 "
            "COLLATE utf8mb4_nopad_bin",
            params=None,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("django_mqlite", "0020_batch_parents"),
    ]

    operations = [
        migrations.CreateModel(
            name="Schedule",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=80, unique=True)),
                ("cron", models.CharField(max_length=200)),
                ("timezone", models.CharField(max_length=64)),
                ("task", models.CharField(blank=True, max_length=255, null=True)),
                ("args", models.JSONField(blank=True, default=list)),
                ("kwargs", models.JSONField(blank=True, default=dict)),
                ("queue", models.CharField(blank=True, max_length=80, null=True)),
                ("body", models.JSONField(blank=True, null=True)),
                ("paused", models.BooleanField(default=False)),
                (
                    "overlap",
                    models.CharField(
                        choices=[("allow", "allow"), ("skip", "skip while the last run is live")],
                        default="allow",
                        max_length=8,
                    ),
                ),
                (
                    "jitter_s",
                    models.PositiveIntegerField(default=0, verbose_name="jitter (seconds)"),
                ),
                ("version", models.BigIntegerField(default=1)),
                ("created_at", models.BigIntegerField()),
                ("modified_at", models.BigIntegerField()),
            ],
            options={
                "db_table": "mqlite_schedule",
                "ordering": ["name"],
                "permissions": [("operate_schedule", "Can pause, resume and run schedules")],
            },
        ),
        # DDL on MariaDB commits as it goes: not inside a transaction (which Django refuses).
        migrations.RunPython(_collate, migrations.RunPython.noop, atomic=False),
    ]
