"""SQLite: ``mqlite_receipt`` keyed by a plain ``INTEGER PRIMARY KEY``, not
``AUTOINCREMENT``. Runs on SQLite only; on PostgreSQL and MariaDB it does nothing.

An ``AUTOINCREMENT`` key records the largest id it gave in ``sqlite_sequence``, a page
every insert rewrites: one of the pages of every settlement (its receipt). A receipt's id
is referred to by nothing and never read as an order (receipts are found by seq and lock
token, and expire by ``expires_at``), so an id may be given again after the largest row
is gone. The table is made again with the same columns and indexes, keeping its rows.
"""

from django.db import migrations

TABLE = "mqlite_receipt"
WITH = '"id" integer NOT NULL PRIMARY KEY AUTOINCREMENT'
WITHOUT = '"id" integer NOT NULL PRIMARY KEY'


def _remake(schema_editor, old: str, new: str) -> None:  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as c:
        c.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = %s", [TABLE])
        (create,) = c.fetchone()
        if old not in create:  # made without it, or already remade
            return
        c.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = %s "
            "AND sql IS NOT NULL",
            [TABLE],
        )
        indexes = [sql for (sql,) in c.fetchall()]
    remade = f"{TABLE}__remade"
    schema_editor.execute(create.replace(f'"{TABLE}"', f'"{remade}"', 1).replace(old, new))
    schema_editor.execute(f'INSERT INTO "{remade}" SELECT * FROM "{TABLE}"')
    schema_editor.execute(f'DROP TABLE "{TABLE}"')
    schema_editor.execute(f'ALTER TABLE "{remade}" RENAME TO "{TABLE}"')
    for sql in indexes:
        schema_editor.execute(sql)


def forwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    _remake(schema_editor, WITH, WITHOUT)


def backwards(apps, schema_editor):  # type: ignore[no-untyped-def]
    _remake(schema_editor, WITHOUT, WITH)


class Migration(migrations.Migration):
    dependencies = [
        ("django_mqlite", "0022_mariadb_windows"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
