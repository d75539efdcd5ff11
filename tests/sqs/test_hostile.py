"""The security review's SQS items replayed against a live server: every answer is an
SQS error or success below 500, and afterwards the ledger queue has lost nothing, no
bad receive locked anything, and the stats invariants hold."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User

import django_mqlite as mq
from tests.support.invariants import assert_stats_invariants

from .conftest import CREDENTIALS
from .signing import call, call_query, send_raw, sign

pytestmark = pytest.mark.django_db(transaction=True)

ARN = "arn:aws:sqs:us-east-1:000000000000:{}"
OTHER = ("AKIDOTHER", "other-secret")
USER = ("AKIDUSER", "user-secret")  # bound to alice, who holds no permission
BAD_RECEIVES: list[dict[str, Any]] = [
    {"AttributeNames": "All"},
    {"AttributeNames": [1]},
    {"MessageAttributeNames": "All"},
    {"MessageAttributeNames": [{"x": 1}]},
    {"MessageSystemAttributeNames": ["Nope"]},
    {"MaxNumberOfMessages": 1e400},
    {"MaxNumberOfMessages": "many"},
    {"WaitTimeSeconds": [20]},
    {"VisibilityTimeout": 43201},
    {"ReceiveRequestAttemptId": "\u00e9" * 10},
]
# (who, op, params): params a dict (JSON protocol) or bytes (sent as the JSON body).
HOSTILE: list[tuple[str, str, Any]] = [
    *(("key", "ReceiveMessage", {"QueueUrl": "ledger", **bad}) for bad in BAD_RECEIVES),
    # 9: another key repeating an attempt id
    ("key", "ReceiveMessage", {"QueueUrl": "ledger", "ReceiveRequestAttemptId": "same"}),
    ("other", "ReceiveMessage", {"QueueUrl": "ledger", "ReceiveRequestAttemptId": "same"}),
    # 10: more than a response can carry
    ("key", "ReceiveMessage", {"QueueUrl": "big", "MaxNumberOfMessages": 10}),
    # 11: a move task into its own source
    (
        "key",
        "StartMessageMoveTask",
        {"SourceArn": ARN.format("dlq"), "DestinationArn": ARN.format("dlq")},
    ),
    # 12: hostile shapes and sizes
    ("key", "ListQueues", b"[" * 100_000 + b"]" * 100_000),
    ("key", "ListQueues", b'{"MaxResults": 1e400}'),
    ("key", "ListQueues", {"MaxResults": "ten"}),
    ("key", "ListQueues", {"MaxResults": 0}),
    ("key", "ListMessageMoveTasks", {"SourceArn": ARN.format("dlq"), "MaxResults": "x"}),
    (
        "key",
        "StartMessageMoveTask",
        {"SourceArn": ARN.format("dlq"), "MaxNumberOfMessagesPerSecond": "x"},
    ),
    ("key", "CreateQueue", b'{"QueueName": "n", "Attributes": {"VisibilityTimeout": 1e400}}'),
    (
        "key",
        "SendMessage",
        {
            "QueueUrl": "scratch",
            "MessageBody": "x",
            "MessageAttributes": {"n": {"DataType": "Number", "StringValue": "1e400"}},
        },
    ),
    ("key", "SendMessage", {"QueueUrl": "scratch", "MessageBody": "x" * 2_000_000}),
    ("key", "TagQueue", {"QueueUrl": "scratch", "Tags": {f"k{i}": "v" for i in range(51)}}),
    ("key", "TagQueue", {"QueueUrl": "scratch", "Tags": {"k" * 5000: "v" * 5000}}),
    ("key", "SetQueueAttributes", {"QueueUrl": "scratch", "Attributes": {"Policy": "p" * 100_000}}),
    ("key", "SetQueueAttributes", {"QueueUrl": "scratch", "Attributes": {"KmsMasterKeyId": ["x"]}}),
    ("user", "ListDeadLetterSourceQueues", {"QueueUrl": "dlq"}),
    ("user", "ListMessageMoveTasks", {"SourceArn": ARN.format("dlq")}),
    ("user", "ReceiveMessage", {"QueueUrl": "ledger"}),
    ("key", "ReceiveMessage", {"QueueUrl": "nope"}),
    ("key", "Nope", {}),
]
QUERY = [
    "Action=ListQueues&" + "a." * 200_000 + "b=1",
    "Action=ListQueues&" + "&".join(f"k{i}=1" for i in range(5000)),
    "Action=ReceiveMessage&QueueUrl=ledger&AttributeName=All",
    "Action=SendMessage&QueueUrl=scratch&MessageBody=x&MessageAttribute.1.Value=x",
    "Action=SendMessage&QueueUrl=scratch&MessageBody=x&MessageAttribute.1.Value.DataType=String",
    "Action=SendMessage&QueueUrl=scratch&MessageBody=x&MessageAttribute.1.Name.x=1",
]


@pytest.fixture
def keys(settings: Any) -> None:
    creds = {**CREDENTIALS, OTHER[0]: OTHER[1]}
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), "SQS": {"CREDENTIALS": creds}}
    User.objects.create_user("alice")


def _seed() -> list[int]:
    mq.create_queue("dlq")
    mq.create_queue("src", forward_dead_letters_to="dlq", max_delivery_count=1)
    mq.create_queue("scratch")
    mq.create_queue("big")
    mq.send_batch("big", [mq.OutMessage(b"y" * 1_000_000) for _ in range(10)])
    mq.send("dlq", "dead")
    mq.create_queue("ledger", max_delivery_count=5)
    return mq.send_batch("ledger", [mq.OutMessage(f"m{i}") for i in range(20)])


def test_hostile_sqs_requests_never_500_and_lose_nothing(
    live_server: Any, keys: None, settings: Any
) -> None:
    seqs = _seed()
    base = live_server.url
    who = {"key": (), "other": OTHER, "user": USER}
    replies: list[tuple[str, str, int, Any]] = []
    for caller, op, params in HOSTILE:
        status, reply = call(base, op, params, *who[caller])
        replies.append((caller, op, status, reply))
        assert status < 500, (caller, op, reply)
    for form in QUERY:
        status, body = call_query(base, form)
        assert 400 <= status < 500, (form[:60], body[:300])
    # A signed GetQueueAttributes replayed as PurgeQueue (X-Amz-Target left unsigned).
    url = f"{base}/sqs"
    body = json.dumps({"QueueUrl": "ledger", "AttributeNames": ["All"]}).encode()
    headers = sign(url, body, {"Content-Type": "application/x-amz-json-1.0"})
    headers["X-Amz-Target"] = "AmazonSQS.PurgeQueue"
    status, raw = send_raw(url, body, headers)
    assert status == 403, raw
    # Nothing claimed by a bad receive; the two attempts are separate claims.
    attempts = [r for c, op, s, r in replies if op == "ReceiveMessage" and s == 200 and r]
    same, theirs = attempts[0]["Messages"], attempts[1]["Messages"]
    assert same[0]["ReceiptHandle"] != theirs[0]["ReceiptHandle"]
    assert mq.stats("ledger").totals["delivered"] == 2
    # At most what the byte budget allows was claimed from the big queue.
    assert mq.stats("big").totals["delivered"] == mq.stats("big").counts["locked"] <= 8
    assert mq.stats("dlq").counts["active"] == 1  # no move task ran into its own source
    assert all(
        len(v) <= 256 for v in mq.get_queue("scratch").__dict__.values() if isinstance(v, str)
    )
    # The ledger: every message is still there and drains exactly once.
    with mq.clock.frozen() as clock:
        clock.advance(13 * 3600)
        mq.reap()
        drained: list[int] = []
        while got := mq.receive("ledger", max_messages=256):
            drained += [m.seq for m in got]
            mq.complete_batch("ledger", [(m.seq, m.lock_token or "") for m in got])
    assert sorted(drained) == seqs
    assert_stats_invariants()
