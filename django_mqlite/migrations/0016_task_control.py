"""Task control: a cancel requested of a running message, its progress and its
checkpoint (``engine.running``); the permission of the admin's cancel action.

Nullable columns without a default: a plain ``ADD COLUMN`` on every vendor (SQLite's
schema editor rebuilds a table only for a column that is NOT NULL or has a default).
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("django_mqlite", "0015_snooze"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="cancel_requested_at",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="message",
            name="checkpoint",
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="message",
            name="progress",
            field=models.JSONField(blank=True, null=True),
        ),
        # The admin's cancel action (``admin.actions.cancel_selected``).
        migrations.AlterModelOptions(
            name="deadletter",
            options={
                "permissions": [
                    ("redrive_message", "Can redrive dead-lettered messages"),
                    ("purge_message", "Can purge dead-lettered messages"),
                    ("cancel_message", "Can cancel messages, running ones included"),
                ],
                "verbose_name": "dead letter",
            },
        ),
    ]
