"""Unique keys held while pending (``send(..., unique_while="pending")``): the
``pending_key`` column and its partial unique index, whose predicate ``engine/unique.py``
repeats term for term.

A nullable column without a default: a plain ``ADD COLUMN`` on every vendor (SQLite's
schema editor rebuilds a table only for a column that is NOT NULL or has a default), and
the index starts empty.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_mqlite", "0018_chains_dependencies"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="pending_key",
            field=models.CharField(blank=True, max_length=200, null=True),
        ),
        migrations.AddConstraint(
            model_name="message",
            constraint=models.UniqueConstraint(
                condition=models.Q(
                    ("delivery_count", 0),
                    ("pending_key__isnull", False),
                    ("snooze_count", 0),
                    ("state__in", ["active", "scheduled"]),
                ),
                fields=("queue", "pending_key"),
                name="mqlite_msg_pending",
            ),
        ),
    ]
