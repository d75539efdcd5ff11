"""Django Tasks in chains: ``step(task, *args, **kwargs)`` makes a call of a task a step
of a chain (``mq.Step``), with the signed envelope ``enqueue`` would send; ``.then``
adds the next one, and ``.send()`` enqueues the first::

    from django_mqlite.tasks.chains import step

    seq = step(fetch, url).then(step(parse)).then(step(store, table="pages")).send()
    fetch.get_result(str(seq))

Each later task is called with the previous task's return value as its first
positional argument, before the arguments given to ``step``: the engine enqueues it in
the transaction of the previous task's completion and asks this module
(``TaskSteps``, installed when the app is ready) for the envelope with that argument,
signed again for its queue.
"""

from __future__ import annotations

import json
from typing import Any

from ..engine import chain_steps
from ..engine.chain import Step, task_step
from ..exceptions import InvalidArgumentError
from .compat import Task, task_backends
from .signing import seal


def step(task: Task, *args: Any, **kwargs: Any) -> Step:
    """A call of ``task`` (a task of a django-mqlite backend) as a chain step. The
    envelope is built and signed now (arguments that are not JSON raise ``TypeError``
    now, with nothing written), and the task's queue is created if this is its first
    use."""
    from .backend import MQLiteBackend

    backend = task_backends[task.backend]
    if not isinstance(backend, MQLiteBackend):
        raise InvalidArgumentError(
            f"task {task.module_path} runs on backend {task.backend!r}, not a django-mqlite one"
        )
    body, options = backend.message(task, args, kwargs)
    if options["scheduled_at"] is None:
        options.pop("scheduled_at")
    backend.ensure_queue(task.queue_name)
    return task_step(task.queue_name, body, backend.database_for(task.queue_name), **options)


class TaskSteps:
    """The engine's question for a task step (``chain_steps.TaskSteps``)."""

    def with_result(self, body: bytes, result: Any, *, properties: Any, priority: int) -> bytes:
        envelope = json.loads(body)
        envelope.pop("signature", None)
        envelope["args"] = [result, *envelope["args"]]
        seal(envelope, timeout=(properties or {}).get("timeout"), priority=priority)
        return json.dumps(envelope).encode("utf-8")


def install() -> None:
    chain_steps.task_steps = TaskSteps()
