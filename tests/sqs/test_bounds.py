"""Hostile and oversize SQS inputs are clean 400s (never a 500), stored tags and text
attributes are capped as SQS caps them, and listings name only readable queues."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

import django_mqlite as mq
from tests.api import queue_perms

from .signing import call, call_query

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def base(live_server: Any, sqs_settings: Any) -> str:
    return str(live_server.url)


def _code(reply: Any) -> str:
    return str(reply["__type"]).split("#")[-1]


def test_deep_json_is_400(base: str) -> None:
    status, reply = call(base, "ListQueues", b"[" * 100_000 + b"]" * 100_000)
    assert (status, _code(reply)) == (400, "SerializationException")


def test_deep_query_keys_are_400(base: str) -> None:
    status, body = call_query(base, "Action=ListQueues&" + "a." * 200_000 + "b=1")
    assert status == 400 and b"InvalidParameterValue" in body


def test_too_many_query_fields_are_400(base: str) -> None:
    status, body = call_query(base, "Action=ListQueues&" + "&".join(f"k{i}=1" for i in range(5000)))
    assert status == 400 and b"InvalidParameterValue" in body


@pytest.mark.parametrize(
    "raw",
    [
        b'{"QueueName": "q1", "Attributes": {"VisibilityTimeout": 1e400}}',
        b'{"QueueName": "q1", "Attributes": {"DelaySeconds": 1e400}}',
        b'{"QueueName": "q1", "Attributes": {"RedrivePolicy": {"deadLetterTargetArn": '
        b'"arn:aws:sqs:us-east-1:000000000000:dlq", "maxReceiveCount": 1e400}}}',
    ],
)
def test_huge_numbers_in_attributes_are_400(base: str, raw: bytes) -> None:
    mq.create_queue("dlq")
    status, reply = call(base, "CreateQueue", raw)
    assert status == 400, reply
    assert "q1" not in {q.name for q in mq.list_queues()}


def test_a_huge_number_attribute_value_is_400(base: str) -> None:
    mq.create_queue("orders")
    attrs = {"n": {"DataType": "Number", "StringValue": "1e400"}}
    status, reply = call(
        base, "SendMessage", {"QueueUrl": "orders", "MessageBody": "x", "MessageAttributes": attrs}
    )
    assert (status, _code(reply)) == (400, "InvalidParameterValue")
    assert mq.peek("orders") == []


@pytest.mark.parametrize("bad", ["abc", 1e400, 0, 501, True])
def test_bad_move_task_numbers_are_400(base: str, bad: Any) -> None:
    mq.create_queue("dlq")
    mq.create_queue("src", forward_dead_letters_to="dlq")
    arn = "arn:aws:sqs:us-east-1:000000000000:dlq"
    results = 11 if bad == 501 else bad
    status, reply = call(base, "ListMessageMoveTasks", {"SourceArn": arn, "MaxResults": results})
    assert status == 400, reply
    status, reply = call(
        base, "StartMessageMoveTask", {"SourceArn": arn, "MaxNumberOfMessagesPerSecond": bad}
    )
    assert status == 400, reply


def test_tags_are_capped_as_sqs_caps_them(base: str) -> None:
    mq.create_queue("orders")
    for tags in (
        {f"k{i}": "v" for i in range(51)},
        {"k" * 129: "v"},
        {"k": "v" * 257},
        {"": "v"},
        {"k": 5},
    ):
        status, reply = call(base, "TagQueue", {"QueueUrl": "orders", "Tags": tags})
        assert (status, _code(reply)) == (400, "InvalidParameterValue"), tags
    ok = {"k" * 128: "v" * 256}
    assert call(base, "TagQueue", {"QueueUrl": "orders", "Tags": ok})[0] == 200
    fifty = {f"t{i}": "v" for i in range(49)}
    assert call(base, "TagQueue", {"QueueUrl": "orders", "Tags": fifty})[0] == 200
    status, _ = call(base, "TagQueue", {"QueueUrl": "orders", "Tags": {"one-more": "v"}})
    assert status == 400
    status, reply = call(base, "ListQueueTags", {"QueueUrl": "orders"})
    assert len(reply["Tags"]) == 50


def test_policy_is_capped_at_sqs_quota(base: str) -> None:
    mq.create_queue("orders")
    for size, expected in ((8192, 200), (8193, 400)):
        policy = json.dumps({"Version": "2012-10-17", "Id": "p" * (size - 35)})
        assert len(policy) == size
        status, reply = call(
            base, "SetQueueAttributes", {"QueueUrl": "orders", "Attributes": {"Policy": policy}}
        )
        assert status == expected, reply
    status, reply = call(
        base, "SetQueueAttributes", {"QueueUrl": "orders", "Attributes": {"Policy": 5}}
    )
    assert (status, _code(reply)) == (400, "InvalidAttributeValue")


@pytest.fixture
def alice(db: Any) -> Iterator[User]:
    queue_perms.GRANTS.clear()
    user = User.objects.create_user("alice")
    with override_settings(AUTHENTICATION_BACKENDS=queue_perms.BACKENDS):
        yield user
    queue_perms.GRANTS.clear()


def grant(perm: str, *queues: str) -> None:
    queue_perms.GRANTS.setdefault(("alice", f"django_mqlite.{perm}_queue"), set()).update(queues)


def test_dead_letter_sources_are_named_only_to_readers(base: str, alice: User) -> None:
    mq.create_queue("dlq")
    mq.create_queue("visible", forward_dead_letters_to="dlq")
    mq.create_queue("secret", forward_dead_letters_to="dlq")
    grant("view", "dlq", "visible")
    status, reply = call(
        base, "ListDeadLetterSourceQueues", {"QueueUrl": "dlq"}, "AKIDUSER", "user-secret"
    )
    assert status == 200, reply
    assert [u.rsplit("/", 1)[-1] for u in reply["queueUrls"]] == ["visible"]


def test_move_task_destinations_are_named_only_to_readers(base: str, alice: User) -> None:
    mq.create_queue("dlq")
    mq.create_queue("secret", forward_dead_letters_to="dlq")
    arn = "arn:aws:sqs:us-east-1:000000000000:{}"
    status, _ = call(base, "StartMessageMoveTask", {"SourceArn": arn.format("dlq")})
    assert status == 200
    grant("view", "dlq")
    status, reply = call(
        base, "ListMessageMoveTasks", {"SourceArn": arn.format("dlq")}, "AKIDUSER", "user-secret"
    )
    assert status == 200, reply
    (task,) = reply["Results"]
    assert "DestinationArn" not in task and "secret" not in json.dumps(reply)
    grant("view", "secret")
    status, reply = call(
        base, "ListMessageMoveTasks", {"SourceArn": arn.format("dlq")}, "AKIDUSER", "user-secret"
    )
    assert reply["Results"][0]["DestinationArn"] == arn.format("secret")
