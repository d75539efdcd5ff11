"""A task's result read back from its row (``tasks/results.py``: ``load_result``,
``refresh``, ``arefresh``, ``wait``), each rule at its boundary: which row an id names
and on which database, what each state reads as, and what a refresh keeps."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.backends import MQLiteBackend
from django_mqlite.engine import settle, waiting
from django_mqlite.engine.clock import from_ms
from django_mqlite.models import Message
from django_mqlite.tasks import results
from django_mqlite.tasks.compat import TaskResultDoesNotExist, TaskResultStatus, task_backends
from django_mqlite.tasks.results import load_result
from tests.settings import SECOND
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(databases=["default", SECOND])

DEAD = "django_mqlite.tasks.results.TaskDeadLetteredError"


def _row(result: Any) -> Any:
    return Message.objects.filter(seq=int(result.id))


def _body(result: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(bytes(_row(result).get().body))
    return body


def test_an_id_names_a_task_message_of_the_backend_s_queues(backend: Any) -> None:
    result = tasks.add.enqueue(1, 2)
    assert load_result(backend, result.id) is not None
    assert load_result(MQLiteBackend("wide", {"QUEUES": []}), result.id) is not None
    narrow = MQLiteBackend("narrow", {"QUEUES": ["tasks-other"]})
    assert load_result(narrow, result.id) is None
    plain = mq.send("tasks", {"task": tasks.add.module_path, "args": [1, 2]}, subject="job")
    assert load_result(backend, str(plain)) is None
    assert load_result(backend, f"{result.id}@nowhere") is None  # no such database
    assert load_result(backend, f"{result.id}@default") is not None
    # The alias is all that follows the first "@": none of these names a database.
    assert load_result(backend, f"{result.id}@default@x") is None
    assert load_result(backend, f"{result.id}@x@default") is None
    assert load_result(backend, "x") is None


def test_an_id_is_read_on_the_backend_s_database(backend: Any, settings: Any) -> None:
    result = tasks.add.enqueue(1, 2)
    far = MQLiteBackend("far", {"QUEUES": [], "OPTIONS": {"database": SECOND}})
    assert load_result(far, result.id) is None
    settings.MQLITE = {**settings.MQLITE, "DATABASE": SECOND}  # the queue database
    assert load_result(backend, result.id) is None
    near = MQLiteBackend("near", {"QUEUES": [], "OPTIONS": {"database": "default"}})
    assert load_result(near, result.id) is not None


def test_a_task_on_a_queue_of_another_database_has_an_id_that_says_so(settings: Any) -> None:
    settings.MQLITE = {**settings.MQLITE, "QUEUES": {"tasks-other": {"database": SECOND}}}
    call_command("migrate", database=SECOND, verbosity=0)
    result = tasks.returns_set.enqueue()
    seq, _, alias = result.id.partition("@")
    assert alias == SECOND
    assert tasks.returns_set.get_result(result.id).status == TaskResultStatus.READY
    with pytest.raises(TaskResultDoesNotExist):
        tasks.returns_set.get_result(seq)


def test_a_body_that_is_no_task_reads_as_no_result(backend: Any) -> None:
    result = tasks.add.enqueue(1, 2)
    body = _body(result)
    _row(result).update(body=b"{not json")
    assert load_result(backend, result.id) is None
    _row(result).update(body=json.dumps({**body, "task": "nowhere.add"}).encode())
    assert load_result(backend, result.id) is None
    _row(result).update(body=json.dumps({k: v for k, v in body.items() if k != "task"}).encode())
    assert load_result(backend, result.id) is None


def test_a_body_without_backend_arguments_or_keywords_reads_with_defaults() -> None:
    result = tasks.add.enqueue(1, 2)
    named = tasks.add.enqueue(3, 4)
    body = {k: v for k, v in _body(result).items() if k not in ("backend", "args", "kwargs")}
    _row(result).update(body=json.dumps(body).encode(), priority=7)
    config = {"BACKEND": "django_mqlite.backends.MQLiteBackend", "QUEUES": ["tasks"]}
    with override_settings(TASKS={"default": config, "other": config}):
        other = task_backends["other"]
        read = load_result(other, result.id)
        assert read is not None
        assert read.task.backend == "other"
        assert read.args == [] and read.kwargs == {}
        assert read.task.priority == 7 and read.task.queue_name == "tasks"
        # A body that names its backend keeps it, whichever backend reads it.
        with_backend = load_result(other, named.id)
        assert with_backend is not None and with_backend.task.backend == "default"
        assert with_backend.args == [3, 4]
        keywords = load_result(other, tasks.add.enqueue(a=5, b=6).id)
        assert keywords is not None and keywords.kwargs == {"a": 5, "b": 6}


@pytest.mark.parametrize(
    ("state", "status"),
    [
        ("active", TaskResultStatus.READY),
        ("scheduled", TaskResultStatus.READY),
        ("waiting", TaskResultStatus.READY),
        ("deferred", TaskResultStatus.READY),
        ("completed", TaskResultStatus.SUCCESSFUL),
        ("dead_lettered", TaskResultStatus.FAILED),
    ],
)
def test_each_state_reads_as_its_status(backend: Any, state: str, status: Any) -> None:
    result = tasks.add.enqueue(1, 2)
    # Both end times set, as on a redriven dead letter that then completed: each final
    # state reads its own, a waiting one none.
    _row(result).update(
        state=state,
        completed_at=5_000,
        dead_lettered_at=6_000,
        dead_letter_reason="TTLExpired",
        result=3,
        progress={"step": 2},
    )
    read = tasks.add.get_result(result.id)
    assert read.id == result.id
    assert read.status == status
    assert read.progress == {"step": 2}
    assert read.enqueued_at == result.enqueued_at
    finished = {"completed": from_ms(5_000), "dead_lettered": from_ms(6_000)}
    assert read.finished_at == finished.get(state)
    if status == TaskResultStatus.SUCCESSFUL:
        assert read.return_value == 3 and read.errors == []
    elif status == TaskResultStatus.FAILED:
        assert [(e.exception_class_path, e.traceback) for e in read.errors] == [
            (DEAD, "TTLExpired")
        ]
    else:
        assert read.errors == []


@pytest.mark.parametrize("worker_id", [42, None])
def test_a_running_task_reads_its_running_attempt(worker_id: int | None) -> None:
    with mq.clock.frozen() as clock:
        result = tasks.add.enqueue(1, 2)
        clock.advance(3)
        mq.receive("tasks", worker_id=worker_id)
        earlier = {"worker": "9", "started_at": 100, "error": {"class": "x.E", "traceback": "t"}}
        _row(result).update(attempts=[earlier])
        read = tasks.add.get_result(result.id)
        assert read.status == TaskResultStatus.RUNNING
        assert read.worker_ids == ["9", "" if worker_id is None else "42"]
        assert read.started_at == from_ms(100)
        assert read.last_attempted_at == clock.now()
        assert [e.exception_class_path for e in read.errors] == ["x.E"]
        assert read.finished_at is None


def test_a_failure_its_attempts_explain_reads_with_their_errors_only() -> None:
    result = tasks.add.enqueue(1, 2)
    failed = {"worker": "1", "started_at": 100, "error": {"class": "x.E", "traceback": "t"}}
    _row(result).update(state="dead_lettered", dead_letter_reason="TaskFailed", attempts=[failed])
    read = tasks.add.get_result(result.id)
    assert [(e.exception_class_path, e.traceback) for e in read.errors] == [("x.E", "t")]
    assert read.worker_ids == ["1"]


def _finish(result: Any, value: Any) -> None:
    (msg,) = mq.receive("tasks", worker_id=8)
    assert msg.seq == int(result.id)
    attempt = {"worker": "8", "started_at": 100, "error": None}
    settle.complete_with_result("tasks", msg.seq, msg.lock_token, value, attempt=attempt)


def test_refresh_reloads_all_but_the_call(backend: Any) -> None:
    result = tasks.add.enqueue(1, 2)
    # A result whose call fields differ from what the row would give: refresh keeps them.
    other_task = tasks.add.using(priority=5)
    mine = dataclasses.replace(
        result, task=other_task, id=f"000{result.id}", args=[9], kwargs={"k": 1}, backend="x"
    )
    mine.refresh()  # a READY result refreshes too (its value slot is set, to None)
    assert mine.status == TaskResultStatus.READY
    _row(result).update(progress={"p": 1})
    _finish(result, 3)
    mine.refresh()
    assert mine.task is other_task and mine.id == f"000{result.id}"
    assert mine.args == [9] and mine.kwargs == {"k": 1} and mine.backend == "x"
    assert mine.status == TaskResultStatus.SUCCESSFUL and mine.return_value == 3
    assert mine.worker_ids == ["8"] and mine.started_at == from_ms(100)
    assert mine.finished_at is not None and mine.progress == {"p": 1}


def test_arefresh_reads_on_the_caller_s_connection() -> None:
    """Inside this test's transaction: only the caller's own connection sees the row."""
    result = tasks.add.enqueue(1, 2)
    _finish(result, 3)
    async_to_sync(result.arefresh)()
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 3


class _Waits:
    """``waiting.wait`` replaced: each call recorded, its answers given in turn."""

    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.calls: list[tuple[str, int, float, str | None]] = []

    def __call__(self, queue: str, seq: int, timeout: float, *, using: str | None) -> Any:
        self.calls.append((queue, seq, timeout, using))
        return self.answers.pop(0)


def test_wait_without_a_timeout_waits_round_after_round(monkeypatch: Any) -> None:
    result = tasks.add.enqueue(1, 2)
    _finish(result, 3)
    waits = _Waits(None, None, "completed")
    monkeypatch.setattr(waiting, "wait", waits)
    assert result.wait() is result
    assert waits.calls == [("tasks", int(result.id), results.WAIT_CHUNK_S, None)] * 3
    assert result.status == TaskResultStatus.SUCCESSFUL and result.return_value == 3


def test_wait_with_a_timeout_waits_once_and_says_so(monkeypatch: Any) -> None:
    result = tasks.add.enqueue(1, 2)
    waits = _Waits(None, None)
    monkeypatch.setattr(waiting, "wait", waits)
    mq.receive("tasks", worker_id=4)
    with pytest.raises(TimeoutError) as raised:
        result.wait(2.5)
    assert str(raised.value) == f"task {result.id} has not finished after 2.5s"
    assert waits.calls == [("tasks", int(result.id), 2.5, None)]
    assert result.status == TaskResultStatus.RUNNING  # refreshed before it raised
    with pytest.raises(TimeoutError, match="after 0s"):
        result.wait(0)


def test_wait_waits_on_the_queue_s_database(settings: Any, monkeypatch: Any) -> None:
    settings.MQLITE = {**settings.MQLITE, "QUEUES": {"tasks-other": {"database": SECOND}}}
    call_command("migrate", database=SECOND, verbosity=0)
    result = tasks.returns_set.enqueue()
    seq = int(result.id.partition("@")[0])
    waits = _Waits(None, None, "removed")
    monkeypatch.setattr(waiting, "wait", waits)
    with pytest.raises(TimeoutError):
        result.wait(1)
    with pytest.raises(TimeoutError):  # woken, and still not finished
        result.wait()
    assert waits.calls == [
        ("tasks-other", seq, 1, SECOND),
        ("tasks-other", seq, results.WAIT_CHUNK_S, SECOND),
        ("tasks-other", seq, results.WAIT_CHUNK_S, SECOND),
    ]


def test_wait_for_a_result_whose_row_is_gone_reads_it_once(monkeypatch: Any) -> None:
    result = tasks.add.enqueue(1, 2)
    _row(result).delete()
    waits = _Waits()
    monkeypatch.setattr(waiting, "wait", waits)
    with pytest.raises(TaskResultDoesNotExist):
        result.wait(1)
    assert waits.calls == []
