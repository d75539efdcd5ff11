"""``testing.drain``: the worker's steps in the calling thread, inside the test's
transaction (pytest-django's default ``django_db``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.tasks.compat import TaskResultStatus, task_finished, task_started
from django_mqlite.testing import drain, sent
from tests.testing.tasks import fails_with_backoff
from tests.workerproject.recorder.tasks import add, always_fails, async_mul, flaky

pytestmark = pytest.mark.django_db

EMPTY = {"completed": 0, "retried": 0, "dead_lettered": 0, "errors": []}


def test_drain_runs_consumers_and_completes(register: Any) -> None:
    mq.create_queue("orders")
    seen: list[Any] = []
    register("orders", lambda msg: seen.append(msg.json()))
    mq.send_batch("orders", [mq.OutMessage({"n": i}) for i in range(3)])
    assert drain("orders") == {**EMPTY, "completed": 3}
    assert seen == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert mq.peek("orders") == []
    assert mq.stats("orders").totals["completed"] == 3
    assert drain("orders") == EMPTY


def test_drain_runs_async_consumers_in_the_test_transaction(register: Any) -> None:
    mq.create_queue("in")
    mq.create_queue("out")

    async def forward(msg: mq.Received) -> None:
        await mq.asend("out", msg.json())

    register("in", forward)
    mq.send("in", {"n": 1})
    assert drain("in") == {**EMPTY, "completed": 1}
    assert [p.json() for p in mq.peek("out")] == [{"n": 1}]


def test_a_failing_async_consumer_is_retried_and_reported(
    register: Any, clock: mq.clock.FrozenClock
) -> None:
    mq.create_queue("in", max_delivery_count=2)

    async def fail(msg: mq.Received) -> None:
        raise KeyError(msg.delivery_count)

    register("in", fail)
    mq.send("in", b"x")
    first = drain("in")
    assert (first["retried"], [type(e) for e in first["errors"]]) == (1, [KeyError])
    clock.advance(300)
    assert drain("in")["dead_lettered"] == 1


def test_max_messages_stops_early(register: Any) -> None:
    mq.create_queue("orders")
    register("orders", lambda msg: None)
    mq.send_batch("orders", [mq.OutMessage(i) for i in range(5)])
    assert drain("orders", max_messages=2)["completed"] == 2
    assert len(mq.peek("orders")) == 3
    with pytest.raises(mq.InvalidArgumentError):
        drain("orders", max_messages=-1)


def test_retries_are_reached_by_advancing_the_clock(
    register: Any, clock: mq.clock.FrozenClock
) -> None:
    mq.create_queue("orders", max_delivery_count=3)

    def handle(msg: mq.Received) -> None:
        if msg.delivery_count < 3:
            raise ValueError(f"attempt {msg.delivery_count}")

    register("orders", handle)
    seq = mq.send("orders", {"order": 42})
    first = drain("orders")
    assert (first["completed"], first["retried"], first["dead_lettered"]) == (0, 1, 0)
    assert [str(e) for e in first["errors"]] == ["attempt 1"]
    [waiting] = mq.peek("orders")
    assert (waiting.state, waiting.seq) == ("scheduled", seq)
    assert drain("orders") == EMPTY  # the retry is in the future
    clock.advance(60)  # past the backoff (capped at 300 s, first one ~1 s)
    assert drain("orders")["retried"] == 1
    clock.advance(60)
    assert drain("orders") == {**EMPTY, "completed": 1}
    assert mq.stats("orders").totals["retried"] == 2


def test_reject_and_exhaustion_dead_letter(register: Any) -> None:
    mq.create_queue("orders", max_delivery_count=1)

    def handle(msg: mq.Received) -> None:
        if msg.text() == "reject":
            raise mq.Reject("bad-order", "no such customer")
        raise RuntimeError("always")

    register("orders", handle)
    mq.send("orders", "reject")
    mq.send("orders", "fail")
    result = drain("orders")
    assert (result["completed"], result["retried"], result["dead_lettered"]) == (0, 0, 2)
    assert [type(e) for e in result["errors"]] == [mq.Reject, RuntimeError]
    reasons = [p.dead_letter_reason for p in mq.peek("orders", state="dead_lettered")]
    assert reasons == ["bad-order", "MaxDeliveryCountExceeded"]
    [_, exhausted] = mq.peek("orders", state="dead_lettered")
    assert "RuntimeError: always" in (exhausted.last_error or "")


def test_drain_forwards_dead_letters_as_the_worker_does(register: Any) -> None:
    """The last failed attempt is dead-lettered by the worker's own abandon verb, which
    forwards it; the count comes from the verb's answer, not from re-reading the row."""
    mq.create_queue("orders.dlq")
    mq.create_queue("orders", max_delivery_count=1, forward_dead_letters_to="orders.dlq")

    def handle(msg: mq.Received) -> None:
        if msg.text() == "reject":
            raise mq.Reject("bad-order")
        raise RuntimeError("always")

    register("orders", handle)
    mq.send("orders", "reject")
    mq.send("orders", "fail")
    result = drain("orders")
    assert (result["completed"], result["retried"], result["dead_lettered"]) == (0, 0, 2)
    assert mq.peek("orders") == []
    assert sorted(p.text() for p in sent("orders.dlq")) == ["fail", "reject"]


def test_drain_counts_what_the_verbs_answered(register: Any, monkeypatch: Any) -> None:
    """drain never peeks at a handled message to guess what became of it."""
    from django_mqlite import testing

    mq.create_queue("orders")
    register("orders", lambda msg: None)
    mq.send("orders", "x")
    monkeypatch.setattr(testing, "peek", None)  # a re-read would now fail
    assert drain("orders") == {**EMPTY, "completed": 1}


def test_a_handler_that_settles_itself_is_left_alone(register: Any) -> None:
    mq.create_queue("orders")
    register("orders", lambda msg: msg.defer() if msg.text() == "later" else msg.complete())
    mq.send("orders", "now")
    mq.send("orders", "later")
    assert drain("orders") == {**EMPTY, "completed": 1}
    assert [p.state for p in mq.peek("orders")] == ["deferred"]


def test_drain_runs_tasks_with_their_results_and_signals() -> None:
    started: list[Any] = []
    finished: list[Any] = []

    def on_started(sender: Any, task_result: Any, **kwargs: Any) -> None:
        started.append(task_result.status)

    def on_finished(sender: Any, task_result: Any, **kwargs: Any) -> None:
        finished.append(task_result.status)

    task_started.connect(on_started)
    task_finished.connect(on_finished)
    try:
        r1 = add.enqueue(2, 3)
        r2 = async_mul.enqueue(4, 5)
        result = drain("tasks")
    finally:
        task_started.disconnect(on_started)
        task_finished.disconnect(on_finished)
    assert result == {**EMPTY, "completed": 2}
    r1.refresh()
    r2.refresh()
    assert (r1.status, r1.return_value) == (TaskResultStatus.SUCCESSFUL, 5)
    assert (r2.status, r2.return_value) == (TaskResultStatus.SUCCESSFUL, 20)
    assert started == [TaskResultStatus.RUNNING] * 2
    assert finished == [TaskResultStatus.SUCCESSFUL] * 2


def test_drain_retries_and_dead_letters_tasks(clock: mq.clock.FrozenClock) -> None:
    ok = flaky.enqueue(succeed_on=2)  # backoff 0: the retry is due at once
    dead = always_fails.enqueue(7)  # three attempts
    result = drain("tasks")
    assert (result["completed"], result["retried"], result["dead_lettered"]) == (1, 3, 1)
    names = [type(e).__name__ for e in result["errors"]]
    assert names == ["RuntimeError", "ValueError", "ValueError", "ValueError"]
    ok.refresh()
    dead.refresh()
    assert ok.status == TaskResultStatus.SUCCESSFUL and ok.return_value == 2
    assert dead.status == TaskResultStatus.FAILED


def test_task_retries_in_the_future_wait_for_the_clock(clock: mq.clock.FrozenClock) -> None:
    r = fails_with_backoff.enqueue(9)
    first = drain("tasks")
    assert (first["retried"], first["dead_lettered"]) == (1, 0)
    assert isinstance(first["errors"][0], LookupError)
    assert drain("tasks") == EMPTY
    clock.advance(30)
    assert drain("tasks")["dead_lettered"] == 1
    r.refresh()
    assert r.status == TaskResultStatus.FAILED
    assert [e.exception_class_path for e in r.errors] == ["builtins.LookupError"] * 2


def test_drain_without_queues_runs_every_registered_queue(register: Any) -> None:
    mq.create_queue("orders")
    register("orders", lambda msg: None)
    register("nowhere", lambda msg: None)  # no such queue: skipped when none is named
    mq.send("orders", b"x")
    add.enqueue(1, 1)
    assert drain()["completed"] == 2
    with pytest.raises(mq.QueueNotFoundError):
        drain("nowhere")


@override_settings(MQLITE={"RETRY_BACKOFF_BASE": 0, "RETRY_BACKOFF_CAP": 0})
def test_drain_with_no_backoff_runs_retries_at_once(register: Any) -> None:
    mq.create_queue("orders", max_delivery_count=2)
    register("orders", lambda msg: 1 / 0)
    mq.send("orders", b"x")
    result = drain("orders")
    assert (result["retried"], result["dead_lettered"]) == (1, 1)
    assert [type(e) for e in result["errors"]] == [ZeroDivisionError] * 2
