"""The front of an open task queue (``tasks.front.remote_message``) call by call, without
a server: what it makes of a task call (the envelope the backend would have written,
signed for the queue, with the task's own timeout), what it leaves alone, and each
refusal with its message, before anything is imported or written."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from django_mqlite.engine.types import OutMessage
from django_mqlite.exceptions import InvalidArgumentError
from django_mqlite.tasks import signing
from django_mqlite.tasks.front import remote_message
from tests.tasks.envelopes import ADD, OUTSIDE, REMEMBER, forget_outside_module, signed
from tests.workerproject.recorder import tasks

__all__ = ["tasks"]  # imported: resolve_task finds tasks of imported modules

TOO_SLOW = "tests.workerproject.recorder.tasks.too_slow"  # timeout=0.3
OTHER_QUEUES_TASK = "tests.workerproject.recorder.tasks.returns_set"  # of "tasks-other"


@pytest.fixture(autouse=True)
def open_tasks(settings: Any) -> None:
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), "OPEN_TASK_QUEUES": ["tasks"]}


def front(body: Any, queue: str = "tasks", **fields: Any) -> OutMessage:
    return remote_message(queue, OutMessage(body=body, **fields))


def refusal(body: Any, queue: str = "tasks", **fields: Any) -> str:
    with pytest.raises(InvalidArgumentError) as err:
        front(body, queue, **fields)
    return str(err.value)


def test_a_task_call_becomes_the_signed_envelope_the_backend_would_write() -> None:
    out = front(
        {"task": ADD, "args": [1, 2]},
        priority=5,
        properties={"timeout": 99, "note": "kept"},
        subject="mine",
        message_id="m-1",
    )
    assert out.body == signed(ADD, [1, 2], priority=5)
    assert out.content_type == "application/json"
    assert out.properties == {"note": "kept"}  # the sender's timeout is not the task's
    assert out.subject == f"task:{ADD}"
    assert (out.message_id, out.priority) == ("m-1", 5)
    assert signing.verify(
        signing.envelope_payload(out.body, timeout=None, priority=5), out.body["signature"]
    )


def test_the_task_call_may_be_json_text_or_bytes() -> None:
    text = json.dumps({"task": REMEMBER, "kwargs": {"tag": "t"}})
    expected = signed(REMEMBER, [], {"tag": "t"})
    assert front(text).body == expected
    assert front(text.encode()).body == expected


def test_the_tasks_own_timeout_is_signed_and_stored() -> None:
    out = front({"task": TOO_SLOW, "args": [1]}, properties={"timeout": 50})
    assert out.properties == {"timeout": 0.3}
    assert out.body == signed(TOO_SLOW, [1], timeout=0.3)


def test_no_properties_stay_none() -> None:
    assert front({"task": ADD, "args": [1, 2]}, properties={"timeout": 5}).properties is None


def test_a_backend_named_in_the_call_is_the_one_signed() -> None:
    assert front({"task": ADD, "args": [1, 2], "backend": "default"}).body["backend"] == "default"


@pytest.mark.parametrize("queue", ["jobs", "tasks-other"])
def test_any_other_queue_gets_the_message_unchanged(queue: str) -> None:
    # "jobs" is no task queue; "tasks-other" is one, but not open.
    out = OutMessage(body={"task": "os.system", "args": ["true"]}, properties={"timeout": 1})
    assert remote_message(queue, out) is out


def test_an_open_queue_no_backend_serves_gets_the_message_unchanged(settings: Any) -> None:
    settings.MQLITE = {**settings.MQLITE, "OPEN_TASK_QUEUES": ["tasks", "jobs"]}
    out = OutMessage(body="anything")
    assert remote_message("jobs", out) is out


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("not json", "a task call must be a JSON object: Expecting value"),
        (b"\xff", "a task call must be a JSON object: 'utf-8' codec can't decode"),
        ('{"task": NaN}', "a task call must be a JSON object: NaN is not JSON"),
        (
            ["a", "list"],
            'a task call must be a JSON object {"task": path, "args": [...], "kwargs": {...}}',
        ),
        (
            {"task": ADD, "queue": "x", "signature": "s"},
            "unknown task call field(s): queue, signature",
        ),
        ({"args": []}, "'task' must be a task's dotted path"),
        ({"task": ADD, "args": {"a": 1}}, "'args' must be a list"),
        ({"task": ADD, "kwargs": []}, "'kwargs' must be an object"),
        ({"task": ADD, "backend": 5}, "'backend' must be a string"),
        ({"task": "os.system"}, "'os.system' is not a task of this project"),
        (
            {"task": OTHER_QUEUES_TASK},
            f"task {OTHER_QUEUES_TASK!r} belongs to queue 'tasks-other', not 'tasks'",
        ),
        ({"task": ADD, "backend": "nope"}, "Tasks backend 'nope' does not serve 'tasks'"),
        ({"task": ADD, "args": [1, {2, 3}]}, f"task {ADD!r}: arguments of task {ADD}"),
        ({"task": ADD, "args": [1.5e400]}, f"task {ADD!r}: arguments of task {ADD} must be"),
    ],
)
def test_each_refusal_says_why(body: Any, message: str) -> None:
    assert refusal(body).startswith(message), refusal(body)


def test_a_priority_the_backend_refuses_is_refused() -> None:
    assert refusal({"task": ADD, "args": [1, 2]}, priority=1000).startswith(f"task {ADD!r}: ")


def test_a_module_outside_the_installed_apps_is_not_imported() -> None:
    forget_outside_module()
    assert refusal({"task": f"{OUTSIDE}.job"}).endswith("is not a task of this project")
    assert OUTSIDE not in sys.modules


def test_the_senders_message_is_not_changed_in_place() -> None:
    call = {"task": ADD, "args": [1, 2]}
    out = OutMessage(body=call, properties={"timeout": 5, "note": "n"})
    assert remote_message("tasks", out) is not out
    assert out == OutMessage(
        body={"task": ADD, "args": [1, 2]}, properties={"timeout": 5, "note": "n"}
    )


def test_what_a_refusal_quotes_of_the_call_is_bounded() -> None:
    long = "x" * 1000
    assert refusal({"task": long}) == f"{'x' * 200!r} is not a task of this project"
    assert refusal({"task": ADD, "backend": long}) == (
        f"Tasks backend {'x' * 100!r} does not serve 'tasks'"
    )
    fields = {f"{i:03d}" + "f" * 50: 1 for i in range(20)}
    message = refusal({"task": ADD, **fields})
    assert len(message) == 500
    assert message.startswith("unknown task call field(s): 000ff")
