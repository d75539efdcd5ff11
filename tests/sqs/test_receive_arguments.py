"""ReceiveMessage checks every argument before it claims (a bad request leaves nothing
locked and counts no delivery), keeps ``ReceiveRequestAttemptId`` private to the access
key and its user, and claims by bytes as well as by count."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings

import django_mqlite as mq

from .conftest import CREDENTIALS
from .signing import call

pytestmark = pytest.mark.django_db(transaction=True)

OTHER_KEY, OTHER_SECRET = "AKIDOTHER", "other-secret"


@pytest.fixture
def two_keys(settings: Any) -> None:
    creds = {**CREDENTIALS, OTHER_KEY: OTHER_SECRET}
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), "SQS": {"CREDENTIALS": creds}}


def _untouched(name: str) -> None:
    assert {p.state for p in mq.peek(name)} == {"active"}
    assert {p.delivery_count for p in mq.peek(name)} == {0}
    assert mq.stats(name).totals["delivered"] == 0


BAD = [
    {"AttributeNames": "All"},
    {"AttributeNames": [1]},
    {"AttributeNames": ["Bogus"]},
    {"MessageSystemAttributeNames": "All"},
    {"MessageSystemAttributeNames": ["VisibilityTimeout"]},
    {"MessageAttributeNames": "All"},
    {"MessageAttributeNames": [1]},
    {"MessageAttributeNames": [""]},
    {"MessageAttributeNames": ["no spaces"]},
    {"MessageAttributeNames": ["x" * 300]},
    {"MessageAttributeNames": ["a"] * 101},
    {"MaxNumberOfMessages": 11},
    {"MaxNumberOfMessages": 1.5},
    {"MaxNumberOfMessages": "1e400"},
    {"WaitTimeSeconds": "soon"},
    {"VisibilityTimeout": -1},
    {"ReceiveRequestAttemptId": "x" * 129},
    {"ReceiveRequestAttemptId": "no spaces"},
]


@pytest.mark.parametrize("bad", BAD, ids=[next(iter(b)) + str(i) for i, b in enumerate(BAD)])
def test_a_bad_receive_is_400_and_claims_nothing(
    live_server: Any, sqs: Any, queue_url: str, bad: dict[str, Any]
) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="keep me")
    status, reply = call(live_server.url, "ReceiveMessage", {"QueueUrl": queue_url, **bad})
    assert status == 400, reply
    _untouched("orders")


def test_good_attribute_names_still_work(live_server: Any, sqs: Any, queue_url: str) -> None:
    sqs.send_message(
        QueueUrl=queue_url,
        MessageBody="x",
        MessageAttributes={"color.hue": {"DataType": "String", "StringValue": "red"}},
    )
    got = sqs.receive_message(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateReceiveCount", "VisibilityTimeout"],
        MessageSystemAttributeNames=["SentTimestamp"],
        MessageAttributeNames=["color.*"],
    )["Messages"][0]
    assert set(got["Attributes"]) == {"ApproximateReceiveCount", "SentTimestamp"}
    assert set(got["MessageAttributes"]) == {"color.hue"}


def test_an_attempt_id_is_private_to_its_key(
    live_server: Any, sqs: Any, queue_url: str, two_keys: None
) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="first")
    sqs.send_message(QueueUrl=queue_url, MessageBody="second")
    ask = {"QueueUrl": queue_url, "ReceiveRequestAttemptId": "same-id"}
    status, mine = call(live_server.url, "ReceiveMessage", ask)
    assert status == 200
    status, again = call(live_server.url, "ReceiveMessage", ask)
    assert again["Messages"][0]["ReceiptHandle"] == mine["Messages"][0]["ReceiptHandle"]
    status, theirs = call(live_server.url, "ReceiveMessage", ask, OTHER_KEY, OTHER_SECRET)
    assert status == 200
    (m,) = mine["Messages"]
    (t,) = theirs["Messages"]
    assert (t["Body"], m["Body"]) == ("second", "first")
    assert t["ReceiptHandle"] != m["ReceiptHandle"]
    assert mq.stats("orders").totals["delivered"] == 2


def test_a_native_attempt_id_is_not_an_sqs_one(live_server: Any, sqs: Any, queue_url: str) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="first")
    sqs.send_message(QueueUrl=queue_url, MessageBody="second")
    (native,) = mq.receive("orders", attempt_id="same-id")
    ask = {"QueueUrl": queue_url, "ReceiveRequestAttemptId": "same-id"}
    status, reply = call(live_server.url, "ReceiveMessage", ask)
    assert status == 200 and reply["Messages"][0]["Body"] != native.body.decode()


def test_a_receive_claims_only_the_bytes_that_fit(
    live_server: Any, sqs: Any, queue_url: str
) -> None:
    mq.send_batch("orders", [mq.OutMessage("x" * 100_000) for _ in range(10)])
    with override_settings(MQLITE={**CREDENTIALS_SETTING, "API_MAX_RESPONSE_BYTES": 300_000}):
        got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
    assert len(got) == 2
    counts = mq.stats("orders").counts
    assert (counts["locked"], counts["active"]) == (2, 8)
    assert mq.stats("orders").totals["delivered"] == 2
    assert {p.delivery_count for p in mq.peek("orders", state="active")} == {0}


CREDENTIALS_SETTING = {"SQS": {"CREDENTIALS": CREDENTIALS}}
