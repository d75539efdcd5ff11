"""A module outside every installed app: a message naming one of its tasks must never
make a worker import it. Importing it leaves a mark (``IMPORTED``) beside the module."""

from __future__ import annotations

try:
    from django.tasks import task
except ImportError:
    from django_tasks import task

from tests.workerproject.recorder.tasks import RAN

RAN.append("outside_apps imported")


@task(queue_name="tasks")
def job(tag: str) -> str:
    RAN.append(tag)
    return tag
