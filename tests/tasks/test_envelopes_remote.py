"""Tasks from the remote surfaces. An HTTP or SQS producer enqueues a task only on a
queue in ``OPEN_TASK_QUEUES``, where the front checks the call against the queue and
signs it; whatever else the SQS endpoint brings into a Tasks queue (a RedrivePolicy's
forward, a message move) is dead-lettered at once and never runs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

import django_mqlite as mq
from django_mqlite.worker import Worker
from tests.api.conftest import error, grant
from tests.tasks.envelopes import REMEMBER
from tests.workerproject.recorder import tasks

boto3 = pytest.importorskip("boto3")
from tests.sqs.conftest import make_client, sqs, sqs_settings  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["make_client", "sqs", "sqs_settings"]  # fixtures

ARN = "arn:aws:sqs:us-east-1:000000000000:"
UNSIGNED = {"task": REMEMBER, "args": ["ran"], "kwargs": {}, "backend": "default"}
OTHER_QUEUES_TASK = "tests.workerproject.recorder.tasks.returns_set"  # of "tasks-other"


@pytest.fixture(autouse=True)
def fresh() -> None:
    tasks.RAN.clear()


@pytest.fixture
def open_tasks(settings: Any) -> None:
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), "OPEN_TASK_QUEUES": ["tasks"]}


@pytest.fixture
def producer(db: Any) -> APIClient:
    from django.contrib.auth.models import User

    client = APIClient()
    client.force_authenticate(grant(User.objects.create_user("producer"), "send_queue"))
    return client


def only_dead_letter(queue: str, why: str) -> None:
    (peeked,) = mq.peek(queue)
    assert (peeked.state, peeked.dead_letter_reason) == ("dead_lettered", "InvalidTaskMessage")
    assert why in (peeked.dead_letter_description or ""), peeked.dead_letter_description
    assert peeked.delivery_count == 1


# -- item 1 and the SQS message move --------------------------------------------------


def test_a_redrive_policy_forward_into_a_tasks_queue_does_not_run(
    sqs: Any, run_worker: Callable[..., Worker]
) -> None:
    mq.create_queue("tasks")
    policy = json.dumps({"deadLetterTargetArn": f"{ARN}tasks", "maxReceiveCount": "1"})
    src = sqs.create_queue(QueueName="orders", Attributes={"RedrivePolicy": policy})["QueueUrl"]
    sqs.send_message(QueueUrl=src, MessageBody=json.dumps(UNSIGNED))
    (_m,) = sqs.receive_message(QueueUrl=src, VisibilityTimeout=0)["Messages"]
    assert mq.stats("tasks").counts["active"] == 1  # forwarded there
    run_worker(queues=["tasks"])
    only_dead_letter("tasks", "not signed")
    assert tasks.RAN == []


def test_a_message_move_into_a_tasks_queue_runs_only_what_was_signed_for_it(
    sqs: Any, sqs_settings: Any, run_worker: Callable[..., Worker]
) -> None:
    """``tasks`` sends its dead letters to ``tasks-dlq``; a move brings them back (the
    queue is open: a move into a closed Tasks queue is refused as a send). A task that
    failed there runs again; a call written into the DLQ by anyone does not."""
    sqs_settings.MQLITE = {**sqs_settings.MQLITE, "OPEN_TASK_QUEUES": ["tasks"]}
    mq.create_queue("tasks")
    sqs.create_queue(QueueName="tasks-dlq")
    policy = json.dumps({"deadLetterTargetArn": f"{ARN}tasks-dlq", "maxReceiveCount": "1"})
    url = sqs.get_queue_url(QueueName="tasks")["QueueUrl"]
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"RedrivePolicy": policy})
    tasks.remember.enqueue("signed")
    (got,) = mq.receive("tasks")
    got.reject("Poison")  # forwarded to tasks-dlq
    sqs.send_message(
        QueueUrl=sqs.get_queue_url(QueueName="tasks-dlq")["QueueUrl"],
        MessageBody=json.dumps(UNSIGNED),
    )
    handle = sqs.start_message_move_task(SourceArn=f"{ARN}tasks-dlq")["TaskHandle"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        (move,) = sqs.list_message_move_tasks(SourceArn=f"{ARN}tasks-dlq")["Results"]
        if move["Status"] != "RUNNING":
            break
        time.sleep(0.05)
    assert (move["TaskHandle"], move["Status"]) == (handle, "COMPLETED")
    assert move["ApproximateNumberOfMessagesMoved"] == 2
    run_worker(queues=["tasks"])
    assert tasks.RAN == ["signed"]
    # Dead-lettered at once on "tasks", and so forwarded back to its dead-letter queue.
    (back,) = mq.peek("tasks-dlq")
    assert json.loads(back.body) == UNSIGNED
    assert mq.stats("tasks").totals["dead_lettered"] == 2  # the reject, then the call


# -- OPEN_TASK_QUEUES: the front validates and signs ----------------------------------


def test_an_http_producer_enqueues_a_task_of_an_open_queue(
    open_tasks: None, producer: APIClient, run_worker: Callable[..., Worker]
) -> None:
    mq.create_queue("tasks", keep_results=3600)
    r = producer.post(
        "/mq/queues/tasks/messages/",
        {"body": {"task": REMEMBER, "args": ["one"]}, "properties": {"timeout": 1}},
        format="json",
    )
    assert r.status_code == 201, r.content
    batch = {"messages": [{"body": {"task": REMEMBER, "kwargs": {"tag": "two"}}}]}
    assert producer.post("/mq/queues/tasks/messages/", batch, format="json").status_code == 201
    (stored, _) = mq.peek("tasks")
    assert json.loads(stored.body)["queue"] == "tasks"
    assert stored.properties == {}  # the task's timeout (none), not the sender's
    run_worker(queues=["tasks"])
    assert sorted(tasks.RAN) == ["one", "two"]
    assert tasks.remember.get_result(str(r.json()["seq"])).return_value == "one"


@pytest.mark.parametrize(
    ("body", "why"),
    [
        pytest.param({"task": OTHER_QUEUES_TASK}, "belongs to queue 'tasks-other'", id="other"),
        pytest.param({"task": "os.system", "args": ["true"]}, "not a task", id="not-a-task"),
        pytest.param({"task": "tests.tasks.outside_apps.job"}, "not a task", id="outside-apps"),
        pytest.param({**UNSIGNED, "backend": "nope"}, "does not serve", id="unknown-backend"),
        pytest.param({**UNSIGNED, "queue": "tasks", "signature": "0" * 64}, "unknown", id="sig"),
        pytest.param({"task": REMEMBER, "args": {"a": 1}}, "'args' must be a list", id="args"),
        pytest.param("not a call", "JSON object", id="not-json"),
    ],
)
def test_the_http_front_refuses_what_the_queue_does_not_run(
    open_tasks: None, producer: APIClient, body: Any, why: str
) -> None:
    mq.create_queue("tasks")
    r = producer.post("/mq/queues/tasks/messages/", {"body": body}, format="json")
    error(r, 400, "invalid_argument")
    assert why in r.json()["message"]
    assert mq.stats("tasks").totals["enqueued"] == 0
    import sys

    assert "tests.tasks.outside_apps" not in sys.modules


def test_a_closed_tasks_queue_still_refuses_http_sends(producer: APIClient) -> None:
    mq.create_queue("tasks")
    r = producer.post(
        "/mq/queues/tasks/messages/", {"body": {"task": REMEMBER, "args": ["x"]}}, format="json"
    )
    error(r, 403, "permission_denied")


def test_an_sqs_producer_enqueues_a_task_of_an_open_queue(
    sqs: Any, sqs_settings: Any, run_worker: Callable[..., Worker]
) -> None:
    sqs_settings.MQLITE = {**sqs_settings.MQLITE, "OPEN_TASK_QUEUES": ["tasks"]}
    mq.create_queue("tasks")
    url = sqs.get_queue_url(QueueName="tasks")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps({"task": REMEMBER, "args": ["sqs"]}))
    reply = sqs.send_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "ok", "MessageBody": json.dumps({"task": REMEMBER, "args": ["batch"]})},
            {"Id": "other", "MessageBody": json.dumps({"task": OTHER_QUEUES_TASK})},
        ],
    )
    assert [e["Id"] for e in reply["Successful"]] == ["ok"]
    ((failed),) = reply["Failed"]
    assert failed["Id"] == "other" and failed["Code"] == "InvalidParameterValue"
    assert "belongs to queue 'tasks-other'" in failed["Message"]
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps(UNSIGNED | {"task": "os.system"}))
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"
    run_worker(queues=["tasks"])
    assert sorted(tasks.RAN) == ["batch", "sqs"]


def test_a_closed_tasks_queue_still_refuses_sqs_sends(sqs: Any) -> None:
    mq.create_queue("tasks")
    url = sqs.get_queue_url(QueueName="tasks")["QueueUrl"]
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps(UNSIGNED))
    assert err.value.response["Error"]["Code"] == "AccessDenied"
