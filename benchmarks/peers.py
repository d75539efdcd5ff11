"""The peer we compare with: django-tasks-db (the database backend of Django Tasks), and
the hook for our own Tasks backend, which lives on another branch until it is merged."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any


def has_tasks_db() -> bool:
    return importlib.util.find_spec("django_tasks_db") is not None


def has_mqlite_backend() -> bool:
    """Whether this checkout's ``django_mqlite`` has the Tasks backend. The module must
    sit beside the package's ``__init__``: an editable install of another checkout can
    otherwise supply a module this one lacks, and the run would mix two versions."""
    import django_mqlite

    spec = importlib.util.find_spec("django_mqlite.backends")
    here = Path(django_mqlite.__file__).resolve().parent
    return spec is not None and spec.origin is not None and Path(spec.origin).parent == here


TASKS_DB_MISSING = "django-tasks-db is not installed (pip install -e '.[bench]')"
MQLITE_BACKEND_MISSING = "backend not installed: django_mqlite.backends is not importable yet"


def enqueue_tasks(n: int, per_transaction: int = 1, backend: str = "default") -> None:
    """Enqueue ``n`` no-op tasks (``default`` is django-tasks-db), ``per_transaction`` per
    commit."""
    from django.db import transaction

    from .benchproject.noop.tasks import noop_task as task

    noop_task = task if backend == "default" else task.using(backend=backend)

    for start in range(0, n, per_transaction):
        k = min(per_transaction, n - start)
        if k == 1:
            noop_task.enqueue()
            continue
        with transaction.atomic():
            for _ in range(k):
                noop_task.enqueue()


def tasks_pending() -> int:
    from django_tasks_db.models import DBTaskResult

    return int(DBTaskResult.objects.ready().count())


def db_worker_args() -> list[str]:
    # --batch: exit once nothing is ready (like runworker --burst); no random start delay.
    return ["db_worker", "--batch", "--no-startup-delay", "--interval", "0.01"]


def claim_one_task() -> Any:
    """What one db_worker iteration does to claim: lock the next ready row, mark it."""
    from django_tasks_db.models import DBTaskResult
    from django_tasks_db.utils import exclusive_transaction

    with exclusive_transaction():
        task = DBTaskResult.objects.ready().get_locked()
        if task is not None:
            task.claim("bench")
    return task


def bulk_tasks(n: int) -> None:
    """A backlog of ``n`` ready no-op tasks: the rows ``enqueue()`` writes (the fields of
    django-tasks-db's ``_task_to_db_task``), saved with ``bulk_create``."""
    from django.utils import timezone
    from django_tasks_db.models import DBTaskResult, get_date_max

    from .benchproject.noop.tasks import noop_task

    for start in range(0, n, 2000):
        now = timezone.now()
        DBTaskResult.objects.bulk_create(
            DBTaskResult(
                args_kwargs={"args": [], "kwargs": {}},
                priority=noop_task.priority,
                task_path=noop_task.module_path,
                queue_name=noop_task.queue_name,
                run_after=noop_task.run_after or get_date_max(),
                backend_name="default",
                enqueued_at=now,
            )
            for _ in range(min(2000, n - start))
        )


# django-ox (Python 3.12+): measured beside django-tasks-db when it is installed.
OX_MISSING = "django-ox is not installed (it needs Python 3.12+: pip install django-ox)"


def has_ox() -> bool:
    return importlib.util.find_spec("django_ox") is not None


def ox_worker_args() -> list[str]:
    """``ox_worker`` as django-ox's README starts it (``TASKS`` entry with only its
    ``BACKEND``, ``django_ox`` in ``INSTALLED_APPS``, ``python manage.py ox_worker``),
    plus ``--batch``: exit once a poll pass finds nothing to claim and none of its
    tasks is in flight (like ``runworker --burst``). ``--backend`` only names the bench
    project's alias for it, whose ``default`` alias is django-tasks-db. Everything else
    is the default: one process, ``--concurrency 1``, ``--interval 1.0``, verbosity 1
    (a log line per task on stderr, which ``Context.manage`` sends to a file)."""
    return ["ox_worker", "--backend", "ox", "--batch"]


def ox_pending() -> int:
    """Tasks not yet finished: READY (deferred retries included) and RUNNING. WAITING
    rows are never claimed by ox_worker (only packages built on django-ox write them),
    and the no-op tasks here never fail, so nothing else can be left."""
    from django_ox.models import OxTask

    waiting = [OxTask.Status.READY, OxTask.Status.RUNNING]
    return int(OxTask.objects.filter(status__in=waiting).count())
