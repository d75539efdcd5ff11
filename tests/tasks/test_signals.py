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
