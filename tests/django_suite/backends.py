"""Stand-ins for Django's ImmediateBackend and DummyBackend in Django's own Tasks tests,
built on MQLiteBackend so those tests exercise ours (see ``adapt.py``).

Both are the real backend: enqueue writes a message row, results are read back from it.
``RunNowBackend`` then drains the task's queue with a burst worker in this process (the
same code path as ``runworker``) before returning, which is the one thing a queued backend
must do before a result exists; ``KeepBackend`` never runs anything, like DummyBackend.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.tasks.backend import MQLiteBackend
from django_mqlite.tasks.compat import Task, TaskResult
from django_mqlite.tasks.runner import give_up, run_task, timeout_for
from django_mqlite.worker import Worker


class RunNowBackend(MQLiteBackend):
    """Enqueue, run the task's queue dry with a burst worker, return the stored result."""

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:
        result = super().enqueue(task, args, kwargs)
        registry = Registry()
        registry.register(
            task.queue_name,
            run_task,
            timeout_for=timeout_for,
            give_up=give_up,
            queue_options=self.queue_options,
        )
        Worker(
            burst=True,
            install_signals=False,
            reaper=False,
            registry=registry,
            queues=[task.queue_name],
        ).run()
        return self.get_result(result.id)


class KeepBackend(MQLiteBackend):
    """Enqueue only. ``results`` lists what was enqueued (read back from the rows) and
    ``clear()`` removes it, as DummyBackend's do."""

    @property
    def results(self) -> list[TaskResult]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return self._results()
        # Called from an async test: Django allows no queries here, so read in a thread.
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(self._results).result()

    def _results(self) -> list[TaskResult]:
        found = []
        for name in mq.list_queues():
            for peeked in mq.peek(name.name, limit=1000):
                if (peeked.subject or "").startswith("task:"):
                    found.append(self.get_result(str(peeked.seq)))
        return found

    def clear(self) -> None:
        for name in mq.list_queues():
            mq.delete_queue(name.name, force=True)
