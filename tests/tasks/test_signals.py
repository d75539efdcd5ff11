"""task_enqueued, task_started and task_finished fire as Django documents them;
task_finished for a failure is sent from inside the except block."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from django_mqlite.tasks.compat import task_enqueued, task_finished, task_started
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def seen() -> Iterator[list[tuple[str, str, str, bool]]]:
    events: list[tuple[str, str, str, bool]] = []

    def recorder(name: str) -> Callable[..., None]:
        def receive(sender: Any, task_result: Any, **kwargs: Any) -> None:
            in_except = sys.exc_info()[0] is not None
            events.append((name, task_result.id, str(task_result.status), in_except))

        return receive

    handlers = [
        (s, recorder(n))
        for s, n in [
            (task_enqueued, "enqueued"),
            (task_started, "started"),
            (task_finished, "finished"),
        ]
    ]
    for signal, handler in handlers:
        signal.connect(handler, weak=False)
    yield events
    for signal, handler in handlers:
        signal.disconnect(handler)


def test_signals(seen: list[Any], run_worker: Callable[..., Any]) -> None:
    ok = tasks.add.enqueue(1, 1)
    bad = tasks.always_fails.enqueue(1)
    run_worker(concurrency=1)
    mine = [e for e in seen if e[1] == ok.id]
    assert mine == [
        ("enqueued", ok.id, "READY", False),
        ("started", ok.id, "RUNNING", False),
        ("finished", ok.id, "SUCCESSFUL", False),
    ]
    theirs = [e for e in seen if e[1] == bad.id]
    assert [e[0] for e in theirs] == ["enqueued", "started", "started", "started", "finished"]
    assert theirs[-1] == ("finished", bad.id, "FAILED", True)


def test_the_finished_result_is_the_started_one_finished(run_worker: Callable[..., Any]) -> None:
    """task_finished's result of a success is made from task_started's (``succeeded``):
    every field as it was, but the status, the finish time and the value, as the result
    read back says; the started one is left RUNNING, and no list is shared."""
    got: dict[str, Any] = {}

    def on_started(sender: Any, task_result: Any, **kwargs: Any) -> None:
        got["started"] = task_result

    def on_finished(sender: Any, task_result: Any, **kwargs: Any) -> None:
        got["finished"] = task_result

    task_started.connect(on_started, weak=False)
    task_finished.connect(on_finished, weak=False)
    try:
        enqueued = tasks.add.enqueue(2, 3)
        run_worker(concurrency=1)
    finally:
        task_started.disconnect(on_started)
        task_finished.disconnect(on_finished)
    started, finished = got["started"], got["finished"]
    assert finished is not started and type(finished) is type(started)
    assert str(started.status) == "RUNNING" and started.finished_at is None
    assert str(finished.status) == "SUCCESSFUL" and finished.return_value == 5
    assert finished.finished_at is not None and finished.finished_at >= finished.started_at
    same = (
        "id",
        "task",
        "args",
        "kwargs",
        "backend",
        "enqueued_at",
        "started_at",
        "last_attempted_at",
        "errors",
        "worker_ids",
        "progress",
    )
    assert {f: getattr(finished, f) for f in same} == {f: getattr(started, f) for f in same}
    assert finished.worker_ids is not started.worker_ids
    assert finished.errors is not started.errors
    read = tasks.add.get_result(enqueued.id)
    for f in ("id", "args", "kwargs", "backend", "enqueued_at", "started_at", "worker_ids"):
        assert getattr(finished, f) == getattr(read, f), f
    assert read.status == finished.status and read.return_value == finished.return_value
