from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('django_mqlite', '0002_task_attempts_periodic'),
    ]

    operations = [
        migrations.AddField(
            model_name='queue',
            name='forward_dead_letters_to',
            field=models.CharField(blank=True, max_length=80, null=True),
        ),
        migrations.CreateModel(
            name='SQSQueue',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=80, unique=True)),
                ('attributes', models.JSONField(default=dict)),
                ('tags', models.JSONField(default=dict)),
                ('move_tasks', models.JSONField(default=list)),
                ('created_at', models.BigIntegerField()),
                ('modified_at', models.BigIntegerField()),
            ],
            options={
                'db_table': 'mqlite_sqs_queue',
                'verbose_name': 'SQS queue',
            },
        ),
    ]
