"""A message on a Tasks queue runs code only when it is a valid, signed envelope for that
queue; anything else is dead-lettered at once, with a reason, nothing imported or run,
and the worker lives on. Declared task queues keep results."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.tasks.compat import TaskResultDoesNotExist
from django_mqlite.worker import Worker
from tests.tasks.envelopes import OUTSIDE, REMEMBER, drain, forget_outside_module, signed
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)

ADD = "tests.workerproject.recorder.tasks.add"


def envelope(task: str = ADD, **extra: Any) -> dict[str, Any]:
    """An envelope as an older version wrote it: unsigned."""
    return {"task": task, "args": [1, 2], "kwargs": {}, "backend": "default", **extra}


def tampered() -> dict[str, Any]:
    body = signed()
    body["signature"] = "0" * 64
    return body


def with_extra_field(name: str = "extra") -> dict[str, Any]:
    body = signed()
    body[name] = 1  # not covered by the signature, and refused for it
    return body


#: (body, properties, what the description says). Every check is reached by a body that
#: passed the ones before it: the signed ones carry a valid signature for "tasks".
BAD = [
    pytest.param(b"not json", None, "not JSON", id="not-json"),
    pytest.param(b'{"task": NaN}', None, "not JSON", id="nan"),
    pytest.param(json.dumps([ADD]).encode(), None, "not a JSON object", id="not-an-object"),
    pytest.param(envelope(), None, "not signed", id="unsigned"),
    pytest.param(tampered(), None, "does not verify", id="bad-signature"),
    pytest.param(signed(queue="tasks-other"), None, "signed for queue 'tasks-other'", id="queue"),
    pytest.param(signed(args={"a": 1}), None, "'args' must be a list", id="args-not-a-list"),
    pytest.param(signed(kwargs=[1]), None, "'kwargs' must be an object", id="kwargs-not-object"),
    pytest.param(signed(backend=3), None, "'backend' must be a string", id="backend-not-a-str"),
    pytest.param(signed(task="os.system"), None, "not a task this worker knows", id="not-a-task"),
    pytest.param(
        signed(task=f"{ADD[:-4]}.nope"), None, "not a task this worker knows", id="unknown"
    ),
    pytest.param(
        signed(f"{OUTSIDE}.job", ["ran"]),
        None,
        "not a task this worker knows",
        id="module-outside-apps",
    ),
    pytest.param(signed(backend="elsewhere"), None, "no Tasks backend", id="unknown-backend"),
    pytest.param(with_extra_field(), None, "unknown envelope field", id="unknown-field"),
    pytest.param(
        json.dumps(with_extra_field("\ud800")).encode(),
        None,
        "unknown envelope field",
        id="lone-surrogate-field",
    ),
    pytest.param(
        signed(timeout=10**400), {"timeout": 10**400}, "properties.timeout", id="huge-timeout"
    ),
    pytest.param(signed(timeout=-1), {"timeout": -1}, "properties.timeout", id="negative-timeout"),
    pytest.param(signed(timeout="5"), {"timeout": "5"}, "properties.timeout", id="string-timeout"),
]


@pytest.mark.parametrize(("body", "properties", "why"), BAD)
def test_invalid_envelopes_are_dead_lettered_at_once(
    run_worker: Callable[..., Worker], body: Any, properties: Any, why: str
) -> None:
    forget_outside_module()
    tasks.RAN.clear()
    mq.create_queue("tasks", max_delivery_count=5)
    seq = mq.send("tasks", body, properties=properties)
    run_worker(queues=["tasks"])
    (peeked,) = mq.peek("tasks")
    assert peeked.seq == seq
    assert peeked.state == "dead_lettered"
    assert peeked.dead_letter_reason == "InvalidTaskMessage"
    assert why in (peeked.dead_letter_description or "")
    assert peeked.delivery_count == 1  # no retries
    assert OUTSIDE not in sys.modules  # nothing was imported for it
    assert tasks.RAN == []  # nor run


def test_a_module_outside_the_installed_apps_is_never_imported(
    run_worker: Callable[..., Worker],
) -> None:
    """Even a validly signed envelope names code: only installed apps' modules (or
    modules already imported) are imported to find it."""
    forget_outside_module()
    tasks.RAN.clear()
    mq.create_queue("tasks")
    seq = mq.send("tasks", signed(f"{OUTSIDE}.job", ["ran"]))
    run_worker(queues=["tasks"])
    (peeked,) = mq.peek("tasks")
    assert (peeked.seq, peeked.state) == (seq, "dead_lettered")
    assert "not a task this worker knows" in (peeked.dead_letter_description or "")
    assert OUTSIDE not in sys.modules
    assert tasks.RAN == []  # neither imported nor run
    # get_result never imports it either.
    with pytest.raises(TaskResultDoesNotExist):
        tasks.add.get_backend().get_result(str(seq))
    assert OUTSIDE not in sys.modules


def test_a_signed_envelope_on_a_queue_its_backend_does_not_serve_is_refused() -> None:
    """``plain`` is not in the backend's QUEUES: a worker that runs tasks there anyway
    (a consumer registered by hand) still refuses them."""
    tasks.RAN.clear()
    mq.create_queue("plain")
    mq.send("plain", signed(REMEMBER, ["ran"], queue="plain"))
    drain("plain")
    (peeked,) = mq.peek("plain")
    assert peeked.dead_letter_reason == "InvalidTaskMessage"
    assert "does not serve queue 'plain'" in (peeked.dead_letter_description or "")
    assert tasks.RAN == []


def test_a_huge_timeout_does_not_kill_runworker() -> None:
    mq.create_queue("tasks")
    mq.send("tasks", envelope(), properties={"timeout": 10**400})
    call_command("runworker", "--queue", "tasks", "--burst")
    assert mq.stats("tasks").counts["dead_lettered"] == 1


def test_own_tasks_and_project_code_still_run(run_worker: Callable[..., Worker]) -> None:
    result = tasks.add.enqueue(2, 3)
    moved = tasks.add.using(queue_name="tasks-other").enqueue(4, 5)
    run_worker()
    assert tasks.add.get_result(result.id).return_value == 5
    assert tasks.add.get_result(moved.id).return_value == 9


def test_declared_task_queues_keep_results_by_default(run_worker: Callable[..., Worker]) -> None:
    with override_settings(MQLITE={"QUEUES": {"tasks": {"max_delivery_count": 3}}}):
        call_command("migrate", "django_mqlite", verbosity=0)
        assert mq.get_queue("tasks").keep_results == 7 * 86400
        result = tasks.add.enqueue(1, 1)
        run_worker(queues=["tasks"])
    assert tasks.add.get_result(result.id).return_value == 2


def test_a_declaration_may_still_say_otherwise() -> None:
    with override_settings(MQLITE={"QUEUES": {"tasks": {"keep_results": None}}}):
        call_command("migrate", "django_mqlite", verbosity=0)
    assert mq.get_queue("tasks").keep_results is None
