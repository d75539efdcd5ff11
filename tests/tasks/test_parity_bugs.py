"""Behaviour Django's own Tasks tests expect of a backend: the result enqueue() returns is
the stored one; run_after survives a round trip; a task calling sys.exit() or raising
KeyboardInterrupt fails its attempt instead of wedging the worker."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.tasks.compat import TaskResultStatus
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


def run_bounded(run_worker: Callable[..., Any]) -> None:
    """Run a burst worker; fail (instead of hanging the suite) if it does not exit."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            run_worker()
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "the burst worker never exited (a wedged delivery)"
    assert not errors, errors


def test_run_after_survives_get_result(clock: mq.clock.FrozenClock) -> None:
    later = (clock.now() + dt.timedelta(minutes=5)).replace(microsecond=0)
    result = tasks.add.using(run_after=later).enqueue(1, 2)
    again = tasks.add.get_backend().get_result(result.id)
    assert again.task.run_after == later
    assert again.task == result.task


def test_enqueue_returns_what_get_result_reads() -> None:
    result = tasks.add.enqueue(1, 2)
    stored = tasks.add.get_backend().get_result(result.id)
    assert result.enqueued_at == stored.enqueued_at
    assert result == stored
    before = result.enqueued_at
    result.refresh()
    assert result.enqueued_at == before


def test_a_skipped_unique_enqueue_reports_the_original_enqueue_time(
    clock: mq.clock.FrozenClock,
) -> None:
    backend = tasks.add.get_backend()
    first = tasks.add.using(unique_key="once-a").enqueue(1, 2)
    clock.advance(5)
    again = tasks.add.using(unique_key="once-a").enqueue(1, 2)
    assert again.id == first.id
    assert again.enqueued_at == first.enqueued_at == backend.get_result(first.id).enqueued_at


def test_sys_exit_in_a_task_fails_the_attempt(run_worker: Callable[..., Any]) -> None:
    result = tasks.calls_sys_exit.enqueue(3)
    run_bounded(run_worker)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.attempts == 2  # retried once (max_attempts=2), then FAILED
    assert [e.exception_class_path for e in result.errors] == ["builtins.SystemExit"] * 2
    assert mq.stats("tasks").counts["locked"] == 0


def test_keyboard_interrupt_in_a_task_fails_the_attempt(run_worker: Callable[..., Any]) -> None:
    result = tasks.raises_keyboard_interrupt.enqueue()
    run_bounded(run_worker)
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.errors[0].exception_class_path == "builtins.KeyboardInterrupt"


def test_worker_keeps_going_after_a_task_exits(run_worker: Callable[..., Any]) -> None:
    bad = tasks.raises_keyboard_interrupt.enqueue()
    good = [tasks.add.enqueue(i, i) for i in range(5)]
    run_bounded(lambda: run_worker(concurrency=1))
    bad.refresh()
    assert bad.status == TaskResultStatus.FAILED
    for r in good:
        r.refresh()
        assert r.status == TaskResultStatus.SUCCESSFUL
