from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("django_mqlite", "0006_operator_controls"),
    ]

    operations = [
        migrations.AlterModelOptions(
            name="queue",
            options={
                "ordering": ["name"],
                "permissions": [
                    ("send_queue", "Can send messages to queues"),
                    ("consume_queue", "Can receive and settle messages of queues"),
                    ("manage_queue", "Can create, change and delete queues, redrive and purge"),
                    ("pause_queue", "Can pause and resume queues"),
                ],
            },
        ),
    ]
