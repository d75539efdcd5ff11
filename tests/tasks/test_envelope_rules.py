"""What a worker accepts as a task (``tasks.envelope.load``), message by message and
without a worker: each rule refuses with its own description, in its order (nothing
looked at before the signature and the queue), at its exact boundary."""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any

import pytest
from django.test import override_settings

from django_mqlite.engine.received import Received
from django_mqlite.tasks import envelope
from django_mqlite.tasks.envelope import InvalidTaskMessage, load, message_timeout
from tests.tasks.envelopes import ADD, OUTSIDE, REMEMBER, forget_outside_module, signed
from tests.workerproject.recorder import tasks

__all__ = ["tasks"]  # imported: a task is found in an imported module


@pytest.fixture(autouse=True)
def fresh() -> None:
    envelope.clear_caches()


def received(
    body: Any, *, queue: str = "tasks", properties: Any = None, priority: int = 0
) -> Received:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Received(
        queue=queue,
        seq=1,
        body=raw,
        message_id=None,
        group_id=None,
        subject=None,
        properties=properties,
        correlation_id=None,
        reply_to=None,
        content_type="application/json",
        priority=priority,
        delivery_count=1,
        enqueued_at=dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
    )


def why(body: Any, **kwargs: Any) -> str:
    with pytest.raises(InvalidTaskMessage) as err:
        load(received(body, **kwargs))
    return str(err.value)


def test_a_signed_envelope_loads_its_task_backend_and_arguments() -> None:
    task, backend, args, kwargs = load(received(signed(ADD, [1, 2], {"k": 3})))
    assert (task.module_path, task.queue_name, task.priority) == (ADD, "tasks", 0)
    assert backend.alias == "default"
    assert (args, kwargs) == ([1, 2], {"k": 3})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, 1.0),
        (0.5, 0.5),
        (2**31, None),  # past MAX_TIMEOUT_S
        (0, None),
        (-1, None),
        (True, None),
        ("5", None),
        (None, None),
        (float("inf"), None),
        (float("nan"), None),
        (10**400, None),
    ],
)
def test_message_timeout(value: Any, expected: float | None) -> None:
    assert message_timeout(received({}, properties={"timeout": value})) == expected


def test_the_largest_timeout_is_allowed() -> None:
    from django_mqlite.tasks.backend import MAX_TIMEOUT_S

    assert message_timeout(received({}, properties={"timeout": MAX_TIMEOUT_S})) == MAX_TIMEOUT_S
    assert message_timeout(received({}, properties=None)) is None


def test_a_bad_timeout_is_refused_first_and_says_the_bound() -> None:
    from django_mqlite.tasks.backend import MAX_TIMEOUT_S

    assert why(b"not json", properties={"timeout": -1}) == (
        f"properties.timeout must be seconds in (0, {MAX_TIMEOUT_S:g}], not -1"
    )
    assert len(why(b"x", properties={"timeout": "9" * 600})) == 500


@pytest.mark.parametrize(
    ("body", "start"),
    [
        (b"\xff", "body is not JSON: 'utf-8' codec can't decode"),
        (b"{", "body is not JSON: Expecting property name"),
        (b'{"a": NaN}', "body is not JSON: NaN is not JSON"),
        (b"[" * 100000 + b"]" * 100000, "body is not JSON: maximum recursion"),
        ([1], "body is not a JSON object"),
    ],
)
def test_a_body_that_is_not_a_json_object(body: Any, start: str) -> None:
    assert why(body).startswith(start), why(body)


def test_an_unsigned_envelope_is_refused_before_anything_else() -> None:
    assert why({"task": "x", "unknown": 1}) == (
        "the task envelope is not signed: only the Tasks backend (or the front of a "
        "queue in OPEN_TASK_QUEUES) writes task messages; envelopes queued before "
        "signing were unsigned"
    )


@pytest.mark.parametrize(
    "body",
    [
        {**signed(), "args": [1, 3]},
        {**signed(), "signature": "0" * 64},
        {**signed(), "signature": 5},
        {**signed(), "kwargs": {"x": 1}},
    ],
)
def test_a_signature_that_does_not_verify(body: Any) -> None:
    assert why(body) == (
        "the task envelope's signature does not verify: changed after it was "
        "signed, or signed with a key that is neither SECRET_KEY nor in "
        "SECRET_KEY_FALLBACKS"
    )


def test_an_envelope_that_cannot_be_serialised_does_not_verify() -> None:
    body = signed()
    raw = json.dumps(body).replace('"args": [1, 2]', '"args": [1e999]').encode()
    assert why(raw).startswith("the task envelope's signature does not verify")


def test_the_priority_and_timeout_are_signed() -> None:
    assert why(signed(), priority=3).startswith("the task envelope's signature does not")
    assert why(signed(), properties={"timeout": 5}).startswith("the task envelope's signat")
    task, _, _, _ = load(received(signed(priority=3), priority=3))
    assert task.priority == 3


def test_an_envelope_signed_for_another_queue() -> None:
    assert why(signed(queue="tasks-other")) == (
        "the task envelope was signed for queue 'tasks-other', not 'tasks': a task runs "
        "only on the queue it was enqueued to"
    )
    assert why(signed(queue="q" * 300)).startswith(
        f"the task envelope was signed for queue {'q' * 100!r}, not 'tasks'"
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"extra": 1, "another": 2}, "unknown envelope field(s): another, extra"),
        ({"task": 5}, "'task' must be a dotted path"),
        ({"args": {}}, "'args' must be a list"),
        ({"kwargs": []}, "'kwargs' must be an object"),
        ({"backend": None}, "'backend' must be a string"),
        ({"run_after": -1}, "'run_after' must be epoch milliseconds"),
        ({"run_after": 2**53}, "'run_after' must be epoch milliseconds"),
        ({"run_after": True}, "'run_after' must be epoch milliseconds"),
        ({"run_after": 1.5}, "'run_after' must be epoch milliseconds"),
        ({"run_after": "1"}, "'run_after' must be epoch milliseconds"),
    ],
)
def test_the_shape_of_a_signed_envelope(changes: dict[str, Any], message: str) -> None:
    body = {"task": ADD, "args": [1, 2], "kwargs": {}, "backend": "default", "queue": "tasks"}
    body.update(changes)
    from django_mqlite.tasks import signing

    signing.seal(body, timeout=None, priority=0)
    assert why(body) == message


def test_an_unknown_field_list_is_bounded() -> None:
    body = signed(**{f"{i:03d}" + "f" * 50: 1 for i in range(20)})
    assert len(why(body)) == 500


def test_run_after_bounds() -> None:
    task, _, _, _ = load(received(signed(run_after=0)))
    assert task.run_after is not None
    # The largest passes the shape check: the backend's restore refuses its year.
    assert why(signed(run_after=2**53 - 1)).startswith(f"task {ADD!r}: year ")


def test_the_backend_must_be_ours_and_serve_the_queue() -> None:
    assert why(signed(backend="elsewhere")) == "no Tasks backend 'elsewhere'"
    assert why(signed(REMEMBER, queue="plain"), queue="plain") == (
        "Tasks backend 'default' does not serve queue 'plain'"
    )


def test_a_backend_that_is_not_mqlites_serves_nothing() -> None:
    immediate = {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}
    try:
        import django.tasks  # noqa: F401
    except ImportError:
        immediate = {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}
    tasks_setting = {
        "default": {
            "BACKEND": "django_mqlite.backends.MQLiteBackend",
            "QUEUES": ["tasks", "tasks-other"],
        },
        "other": immediate,
    }
    with override_settings(TASKS=tasks_setting):
        assert why(signed(backend="other")) == (
            "Tasks backend 'other' does not serve queue 'tasks'"
        )


def test_a_backend_without_queues_takes_any_queue() -> None:
    tasks_setting = {"default": {"BACKEND": "django_mqlite.backends.MQLiteBackend", "QUEUES": []}}
    with override_settings(TASKS=tasks_setting):
        body = signed(ADD, [1, 2], queue="anywhere")
        task, backend, _, _ = load(received(body, queue="anywhere"))
    assert (task.queue_name, backend.alias) == ("anywhere", "default")


def test_a_task_this_worker_does_not_know() -> None:
    forget_outside_module()
    assert why(signed(f"{OUTSIDE}.job")) == f"{OUTSIDE + '.job'!r} is not a task this worker knows"
    assert OUTSIDE not in sys.modules
    long = "x" * 300
    assert why(signed(long)) == f"{long[:200]!r} is not a task this worker knows"


def test_a_call_the_backend_refuses() -> None:
    assert why(signed(priority=1000), priority=1000).startswith(f"task {ADD!r}: ")


def test_the_caches_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(envelope, "CACHE_MAX", 1)
    load(received(signed(ADD)))
    assert list(envelope._resolved) == [ADD] and len(envelope._restored) == 1
    load(received(signed(REMEMBER, ["x"])))
    assert list(envelope._resolved) == [REMEMBER] and len(envelope._restored) == 1
    load(received(signed(REMEMBER, ["y"])))  # found: nothing evicted
    assert list(envelope._resolved) == [REMEMBER]


def test_a_task_with_run_after_is_not_kept() -> None:
    load(received(signed(run_after=5)))
    assert envelope._restored == {}
    assert list(envelope._resolved) == [ADD]


def test_a_resolved_path_is_looked_up_once(monkeypatch: pytest.MonkeyPatch) -> None:
    looked_up: list[str] = []
    real = envelope.resolve_task

    def counting(path: str) -> Any:
        looked_up.append(path)
        return real(path)

    monkeypatch.setattr(envelope, "resolve_task", counting)
    load(received(signed(ADD)))
    load(received(signed(ADD, [3, 4])))
    assert looked_up == [ADD]


def test_a_kept_task_is_kept_per_backend() -> None:
    backend = {"BACKEND": "django_mqlite.backends.MQLiteBackend", "QUEUES": ["tasks"]}
    with override_settings(TASKS={"default": backend, "second": backend}):
        first, _, _, _ = load(received(signed(ADD, backend="default")))
        second, used, _, _ = load(received(signed(ADD, backend="second")))
    assert (first.backend, second.backend, used.alias) == ("default", "second", "second")


class _Unhashable(dict):  # type: ignore[type-arg]
    """The restored-task cache as a Task subclass with an unhashable field meets it."""

    def get(self, key: Any, default: Any = None) -> Any:
        raise TypeError("unhashable type: 'list'")


def test_a_task_that_cannot_be_kept_is_restored_for_each_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(envelope, "_restored", _Unhashable())
    task, _, args, _ = load(received(signed(ADD, [5, 6], priority=4), priority=4))
    assert (task.module_path, task.priority, task.queue_name, task.backend) == (
        ADD,
        4,
        "tasks",
        "default",
    )
    assert args == [5, 6]
    assert envelope._restored == {}
