"""Sending, receiving and settling through boto3: MD5s, attributes, receipts, batches."""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.engine import claim

pytestmark = pytest.mark.django_db(transaction=True)


def attributes_md5(attrs: dict[str, dict[str, Any]]) -> str:
    """The SDKs' length-prefixed digest, written independently of the server's."""
    out = b""

    def put(b: bytes) -> bytes:
        return len(b).to_bytes(4, "big") + b

    for name in sorted(attrs):
        a = attrs[name]
        out += put(name.encode()) + put(a["DataType"].encode())
        if "StringValue" in a:
            out += b"\x01" + put(a["StringValue"].encode())
        else:
            out += b"\x02" + put(a["BinaryValue"])
    return hashlib.md5(out).hexdigest()


ATTRS = {
    "tenant": {"DataType": "String", "StringValue": "acme"},
    "weight": {"DataType": "Number.float", "StringValue": "1.50"},
    "blob": {"DataType": "Binary", "BinaryValue": b"\x00\xffraw"},
}


def test_md5_of_attributes_matches_the_published_vector() -> None:
    from django_mqlite.sqs.md5 import of_attributes

    vector = {"attribName1": {"DataType": "String", "StringValue": "attribValue 1"}}
    assert of_attributes(vector) == "19e27d4e946b072f3f58da80d94fd778"
    assert attributes_md5(vector) == "19e27d4e946b072f3f58da80d94fd778"


def test_send_receive_delete_with_md5s(sqs: Any, queue_url: str) -> None:
    sent = sqs.send_message(QueueUrl=queue_url, MessageBody="héllo", MessageAttributes=ATTRS)
    assert sent["MD5OfMessageBody"] == hashlib.md5("héllo".encode()).hexdigest()
    assert sent["MD5OfMessageAttributes"] == attributes_md5(ATTRS)
    got = sqs.receive_message(
        QueueUrl=queue_url, MessageAttributeNames=["All"], AttributeNames=["All"]
    )["Messages"]
    (m,) = got
    assert m["MessageId"] == sent["MessageId"]
    assert m["Body"] == "héllo"
    assert m["MD5OfBody"] == sent["MD5OfMessageBody"]
    assert m["MessageAttributes"] == ATTRS
    assert m["MD5OfMessageAttributes"] == attributes_md5(ATTRS)
    assert m["Attributes"]["ApproximateReceiveCount"] == "1"
    assert int(m["Attributes"]["SentTimestamp"]) > 0
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
    assert mq.peek("orders") == []


def test_attribute_filters_and_md5_over_what_is_returned(sqs: Any, queue_url: str) -> None:
    attrs = {
        "app.a": {"DataType": "String", "StringValue": "1"},
        "app.b": {"DataType": "Number", "StringValue": "2"},
        "other": {"DataType": "String", "StringValue": "3"},
    }
    sqs.send_message(QueueUrl=queue_url, MessageBody="x", MessageAttributes=attrs)
    (m,) = sqs.receive_message(
        QueueUrl=queue_url, MessageAttributeNames=["app.*"], VisibilityTimeout=0
    )["Messages"]
    assert set(m["MessageAttributes"]) == {"app.a", "app.b"}
    assert m["MD5OfMessageAttributes"] == attributes_md5(m["MessageAttributes"])
    (m,) = sqs.receive_message(QueueUrl=queue_url, MessageAttributeNames=["other"])["Messages"]
    assert set(m["MessageAttributes"]) == {"other"}
    assert "Messages" not in sqs.receive_message(QueueUrl=queue_url)  # in flight now


def test_the_native_api_sees_the_same_messages(sqs: Any, queue_url: str) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="from sqs", MessageAttributes=ATTRS)
    (n,) = mq.receive("orders")
    assert n.text() == "from sqs"
    assert n.properties["tenant"] == "acme"
    n.complete()
    mq.send("orders", {"order": 7}, properties={"tenant": "acme", "n": 3})
    (m,) = sqs.receive_message(QueueUrl=queue_url, MessageAttributeNames=["All"])["Messages"]
    assert m["Body"] == '{"order":7}'
    assert m["MessageAttributes"]["n"] == {"DataType": "Number", "StringValue": "3"}
    assert m["MD5OfMessageAttributes"] == attributes_md5(m["MessageAttributes"])


def test_stale_receipt_never_deletes_or_extends_a_later_receive(sqs: Any, queue_url: str) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="x")
    first = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=0)["Messages"][0]
    second = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=60)["Messages"][0]
    assert first["ReceiptHandle"] != second["ReceiptHandle"]
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=first["ReceiptHandle"])  # succeeds
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.change_message_visibility(
            QueueUrl=queue_url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=600
        )
    assert err.value.response["Error"]["Code"] == "AWS.SimpleQueueService.MessageNotInflight"
    (p,) = mq.peek("orders")
    assert p.state == "locked" and p.delivery_count == 2
    assert (p.locked_until - mq.clock.now()).total_seconds() < 61  # not extended
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=second["ReceiptHandle"])
    assert mq.peek("orders") == []


def test_malformed_receipt_handle(sqs: Any, queue_url: str) -> None:
    with pytest.raises(sqs.exceptions.ReceiptHandleIsInvalid):
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle="garbage")


def test_change_visibility_zero_makes_it_visible_again(sqs: Any, queue_url: str) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="x")
    (m,) = sqs.receive_message(QueueUrl=queue_url)["Messages"]
    sqs.change_message_visibility(
        QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
    )
    (again,) = sqs.receive_message(QueueUrl=queue_url, AttributeNames=["All"])["Messages"]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"
    sqs.change_message_visibility(
        QueueUrl=queue_url, ReceiptHandle=again["ReceiptHandle"], VisibilityTimeout=300
    )
    (p,) = mq.peek("orders")
    assert (p.locked_until - mq.clock.now()).total_seconds() > 250


def test_delay_seconds(sqs: Any, queue_url: str) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="later", DelaySeconds=60)
    assert "Messages" not in sqs.receive_message(QueueUrl=queue_url)
    assert mq.peek("orders")[0].state == "scheduled"


def test_long_poll_returns_when_a_message_arrives(
    sqs: Any, queue_url: str, monkeypatch: Any
) -> None:
    # No fallback poll inside the wait: only the send's wake-up can end it in time.
    monkeypatch.setattr(claim, "POLL_FIRST_S", 30.0)
    monkeypatch.setattr(claim, "POLL_MAX_S", 30.0)
    timer = threading.Timer(0.5, lambda: mq.send("orders", "late"))
    started = time.monotonic()
    timer.start()
    try:
        got = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=10)
    finally:
        timer.cancel()
    took = time.monotonic() - started
    assert got["Messages"][0]["Body"] == "late"
    assert 0.4 < took < 5


def test_empty_long_poll_waits_then_returns_nothing(sqs: Any, queue_url: str) -> None:
    started = time.monotonic()
    assert "Messages" not in sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1)
    assert time.monotonic() - started >= 0.9


def test_batches(sqs: Any, queue_url: str) -> None:
    out = sqs.send_message_batch(
        QueueUrl=queue_url,
        Entries=[
            {"Id": "a", "MessageBody": "A", "MessageAttributes": ATTRS},
            {"Id": "b", "MessageBody": "B"},
            {"Id": "bad", "MessageBody": "x", "DelaySeconds": 5000},
        ],
    )
    assert sorted(s["Id"] for s in out["Successful"]) == ["a", "b"]
    (a,) = [s for s in out["Successful"] if s["Id"] == "a"]
    assert a["MD5OfMessageAttributes"] == attributes_md5(ATTRS)
    (failed,) = out["Failed"]
    assert (failed["Id"], failed["SenderFault"], failed["Code"]) == (
        "bad",
        True,
        "InvalidParameterValue",
    )
    got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
    assert sorted(m["Body"] for m in got) == ["A", "B"]
    entries = [{"Id": f"e{i}", "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)]
    changed = sqs.change_message_visibility_batch(
        QueueUrl=queue_url,
        Entries=[{**e, "VisibilityTimeout": 100} for e in entries]
        + [{"Id": "x", "ReceiptHandle": "nope", "VisibilityTimeout": 1}],
    )
    assert len(changed["Successful"]) == 2
    assert changed["Failed"][0]["Code"] == "ReceiptHandleIsInvalid"
    deleted = sqs.delete_message_batch(QueueUrl=queue_url, Entries=entries)
    assert sorted(s["Id"] for s in deleted["Successful"]) == ["e0", "e1"]
    assert deleted["Failed"] == []
    assert mq.peek("orders") == []


@pytest.mark.parametrize(
    ("entries", "code"),
    [
        ([], "AWS.SimpleQueueService.EmptyBatchRequest"),
        (
            [{"Id": f"i{i}", "MessageBody": "x"} for i in range(11)],
            "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
        ),
        ([{"Id": "a", "MessageBody": "x"}] * 2, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"),
        ([{"Id": "a b", "MessageBody": "x"}], "AWS.SimpleQueueService.InvalidBatchEntryId"),
        (
            [{"Id": f"i{i}", "MessageBody": "x" * 200_000} for i in range(6)],
            "AWS.SimpleQueueService.BatchRequestTooLong",
        ),
    ],
)
def test_whole_batch_errors(sqs: Any, queue_url: str, entries: list[Any], code: str) -> None:
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
    assert err.value.response["Error"]["Code"] == code
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_receive_arguments_are_checked(sqs: Any, queue_url: str) -> None:
    for kwargs in ({"MaxNumberOfMessages": 11}, {"WaitTimeSeconds": 21}):
        with pytest.raises(sqs.exceptions.ClientError) as err:
            sqs.receive_message(QueueUrl=queue_url, **kwargs)
        assert err.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_invalid_body_and_size(sqs: Any, queue_url: str) -> None:
    with pytest.raises(sqs.exceptions.InvalidMessageContents):
        sqs.send_message(QueueUrl=queue_url, MessageBody="bad \x01 char")
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"MaximumMessageSize": "1024"})
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.send_message(QueueUrl=queue_url, MessageBody="x" * 1025)
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_receive_request_attempt_id_replays(sqs: Any, queue_url: str) -> None:
    sqs.send_message(QueueUrl=queue_url, MessageBody="x")
    a = sqs.receive_message(QueueUrl=queue_url, ReceiveRequestAttemptId="try-1")["Messages"]
    b = sqs.receive_message(QueueUrl=queue_url, ReceiveRequestAttemptId="try-1")["Messages"]
    assert a[0]["ReceiptHandle"] == b[0]["ReceiptHandle"]
    assert mq.peek("orders")[0].delivery_count == 1


def test_binary_and_trace_header(sqs: Any, queue_url: str) -> None:
    sent = sqs.send_message(
        QueueUrl=queue_url,
        MessageBody="x",
        MessageSystemAttributes={
            "AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-abc"}
        },
    )
    system = {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-abc"}}
    assert sent["MD5OfMessageSystemAttributes"] == attributes_md5(system)
    (m,) = sqs.receive_message(
        QueueUrl=queue_url,
        MessageSystemAttributeNames=["AWSTraceHeader"],
        MessageAttributeNames=["All"],
    )["Messages"]
    assert m["Attributes"] == {"AWSTraceHeader": "Root=1-abc"}
    assert "MessageAttributes" not in m
