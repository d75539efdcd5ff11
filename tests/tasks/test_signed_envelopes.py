"""Task envelopes are signed: a message reaches a Tasks queue by many paths (redrive,
forward, the admin, a raw send), and only an envelope the Tasks backend signed for that
queue runs there. Everything else is dead-lettered at once, its task never run."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from rest_framework.test import APIClient

import django_mqlite as mq
from django_mqlite.models import Message
from django_mqlite.tasks import signing
from django_mqlite.worker import Worker
from tests.api.conftest import grant
from tests.tasks.envelopes import REMEMBER, signed
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)

#: What an older version enqueued, or what anyone can write: a well-formed, unsigned call.
UNSIGNED = {"task": REMEMBER, "args": ["ran"], "kwargs": {}, "backend": "default"}


@pytest.fixture(autouse=True)
def fresh() -> None:
    tasks.RAN.clear()


def refused(queue: str, why: str) -> mq.Peeked:
    (peeked,) = mq.peek(queue, state="dead_lettered")
    assert peeked.dead_letter_reason == "InvalidTaskMessage"
    assert why in (peeked.dead_letter_description or ""), peeked.dead_letter_description
    assert peeked.delivery_count == 1  # at once: no retry
    return peeked


def dead_letter(queue: str, body: Any, **send: Any) -> int:
    seq = mq.send(queue, body, **send)
    (got,) = mq.receive(queue)
    got.reject("Poison")
    return seq


# -- item 2: redrive and forward into a Tasks queue -----------------------------------


def test_admin_redrive_of_an_http_dead_letter_into_a_tasks_queue_does_not_run_it(
    run_worker: Callable[..., Worker], admin_client: Client
) -> None:
    mq.create_queue("tasks")
    mq.create_queue("plain")
    sender = APIClient()
    sender.force_authenticate(grant(User.objects.create_user("producer"), "send_queue"))
    r = sender.post("/mq/queues/plain/messages/", {"body": UNSIGNED}, format="json")
    assert r.status_code == 201, r.content
    (got,) = mq.receive("plain")
    got.reject("Poison")
    page = admin_client.post(
        "/admin/django_mqlite/deadletter/",
        {
            "action": "redrive_selected_to_queue",
            "_selected_action": [got.seq],
            "post": "yes",
            "to_queue": "tasks",
        },
    )
    assert page.status_code == 302
    assert mq.stats("tasks").counts["active"] == 1
    run_worker(queues=["tasks"])
    refused("tasks", "not signed")
    assert tasks.RAN == []


def test_python_redrive_into_a_tasks_queue_does_not_run(run_worker: Callable[..., Worker]) -> None:
    mq.create_queue("tasks")
    mq.create_queue("plain")
    dead_letter("plain", UNSIGNED)
    assert mq.redrive("plain", to_queue="tasks") == 1
    run_worker(queues=["tasks"])
    refused("tasks", "not signed")
    assert tasks.RAN == []


def test_forwarded_dead_letters_do_not_run_on_a_tasks_queue(
    run_worker: Callable[..., Worker],
) -> None:
    mq.create_queue("tasks")
    mq.create_queue("plain", forward_dead_letters_to="tasks")
    dead_letter("plain", UNSIGNED)
    assert mq.stats("tasks").counts["active"] == 1  # forwarded
    run_worker(queues=["tasks"])
    refused("tasks", "not signed")
    assert tasks.RAN == []


# -- item 3: a signed envelope runs on its own queue only -----------------------------


def test_a_task_signed_for_one_queue_is_refused_on_another_of_the_same_backend(
    run_worker: Callable[..., Worker],
) -> None:
    """``tasks`` and ``tasks-other`` are both served by the default backend."""
    mq.create_queue("tasks-other")
    result = tasks.remember.enqueue("moved")
    (got,) = mq.receive("tasks")
    got.reject("Poison")
    assert mq.redrive("tasks", to_queue="tasks-other") == 1
    mq.send("tasks-other", json.loads(got.body))  # a copy of the signed body, sent raw
    run_worker(queues=["tasks", "tasks-other"])
    assert tasks.RAN == []
    for peeked in mq.peek("tasks-other"):
        assert peeked.state == "dead_lettered"
        assert "signed for queue 'tasks', not 'tasks-other'" in (
            peeked.dead_letter_description or ""
        )
    assert len(mq.peek("tasks-other")) == 2
    assert tasks.remember.get_result(result.id).status == "FAILED"


def test_a_redrive_in_place_still_runs_the_task(run_worker: Callable[..., Worker]) -> None:
    result = tasks.remember.enqueue("again")
    (got,) = mq.receive("tasks")
    got.reject("Poison")
    assert mq.redrive("tasks") == 1
    run_worker(queues=["tasks"])
    assert tasks.RAN == ["again"]
    assert tasks.remember.get_result(result.id).return_value == "again"


def test_a_raw_send_of_a_task_call_does_not_run(run_worker: Callable[..., Worker]) -> None:
    mq.create_queue("tasks")
    mq.send("tasks", UNSIGNED)
    run_worker(queues=["tasks"])
    refused("tasks", "not signed")
    assert tasks.RAN == []


# -- key rotation -----------------------------------------------------------------------


def test_an_envelope_signed_with_a_fallback_key_verifies(
    run_worker: Callable[..., Worker],
) -> None:
    with override_settings(SECRET_KEY="the-old-key-" + "x" * 40):
        tasks.remember.enqueue("old key")
    with override_settings(
        SECRET_KEY="the-new-key-" + "y" * 40, SECRET_KEY_FALLBACKS=["the-old-key-" + "x" * 40]
    ):
        run_worker(queues=["tasks"])
    assert tasks.RAN == ["old key"]


def test_an_envelope_signed_with_a_key_no_longer_listed_does_not(
    run_worker: Callable[..., Worker],
) -> None:
    with override_settings(SECRET_KEY="the-old-key-" + "x" * 40):
        tasks.remember.enqueue("old key")
    with override_settings(
        SECRET_KEY="the-new-key-" + "y" * 40, SECRET_KEY_FALLBACKS=["another-" + "z" * 40]
    ):
        run_worker(queues=["tasks"])
    refused("tasks", "does not verify")
    assert tasks.RAN == []


def test_the_key_is_django_salted_hmac_keyed_from_the_secret_key() -> None:
    from django.utils.crypto import salted_hmac

    data = b"any payload"
    assert signing.sign(data) == salted_hmac(signing.SALT, data, algorithm="sha256").hexdigest()
    with override_settings(SECRET_KEY="another-" + "k" * 50):  # the cached key follows
        assert signing.sign(data) == salted_hmac(signing.SALT, data, algorithm="sha256").hexdigest()


# -- tampering ---------------------------------------------------------------------------


def _change_body(seq: int, **changes: Any) -> None:
    row = Message.objects.get(seq=seq)
    body = json.loads(bytes(row.body))
    body.update(changes)
    Message.objects.filter(seq=seq).update(body=json.dumps(body).encode())


TAMPERINGS = [
    pytest.param(lambda seq: _change_body(seq, args=["changed"]), id="args"),
    pytest.param(lambda seq: _change_body(seq, kwargs={"tag": "changed"}), id="kwargs"),
    pytest.param(lambda seq: _change_body(seq, task=f"{REMEMBER[:-9]}.add"), id="task"),
    pytest.param(lambda seq: _change_body(seq, run_after=0), id="run-after"),
    pytest.param(
        lambda seq: Message.objects.filter(seq=seq).update(properties={"timeout": 3600}),
        id="timeout",
    ),
    pytest.param(lambda seq: Message.objects.filter(seq=seq).update(priority=9), id="priority"),
]


@pytest.mark.parametrize("tamper", TAMPERINGS)
def test_an_envelope_changed_after_signing_is_refused(
    run_worker: Callable[..., Worker], tamper: Callable[[int], Any]
) -> None:
    result = tasks.remember.enqueue("original")
    tamper(int(result.id))
    run_worker(queues=["tasks"])
    refused("tasks", "does not verify")
    assert tasks.RAN == []


def test_an_untouched_envelope_runs(run_worker: Callable[..., Worker]) -> None:
    """The control for the tamperings above: the same enqueue, left alone, runs."""
    tasks.remember.using(priority=9).enqueue("original")
    run_worker(queues=["tasks"])
    assert tasks.RAN == ["original"]


def test_what_the_backend_enqueues_is_signed_for_its_queue() -> None:
    tasks.remember.using(queue_name="tasks-other").enqueue("x")
    (got,) = mq.receive("tasks-other")
    body = json.loads(got.body)
    assert body["queue"] == "tasks-other"
    assert signing.verify(
        signing.envelope_payload(body, timeout=None, priority=got.priority), body["signature"]
    )
    assert body == signed(REMEMBER, ["x"], queue="tasks-other")
