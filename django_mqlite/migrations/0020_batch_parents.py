"""Batches: a child of an ``mq.batch`` that something depends on gets a node of its own
whose ``parent_id`` is the batch (the node's end is counted there), and finished batches
are deleted after ``MQLITE["BATCH_RETENTION"]`` (``engine/maintenance.py``), seeking them
by ``finished_at``. A nullable column without a default (a plain ``ADD COLUMN`` on every
vendor) and two partial indexes that start nearly empty."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_mqlite", "0019_unique_pending"),
    ]

    operations = [
        migrations.AddField(
            model_name="batch",
            name="parent_id",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name="batch",
            index=models.Index(
                condition=models.Q(("parent_id__isnull", False)),
                fields=["parent_id"],
                name="mqlite_batch_parent",
            ),
        ),
        migrations.AddIndex(
            model_name="batch",
            index=models.Index(
                condition=models.Q(("finished_at__isnull", False)),
                fields=["finished_at"],
                name="mqlite_batch_finished",
            ),
        ),
    ]
