"""Behaviours SQS users rely on where the endpoint used to depart from AWS (#32): each
test states AWS's behaviour and fails on the departure it replaced."""

from __future__ import annotations

import hashlib
import time
from typing import Any

import boto3
import pytest
from botocore.config import Config

import django_mqlite as mq

from .conftest import KEY, SECRET
from .signing import send_raw, sign

pytestmark = pytest.mark.django_db(transaction=True)


def fifo(sqs: Any, name: str = "jobs.fifo", **attrs: str) -> str:
    return str(
        sqs.create_queue(QueueName=name, Attributes={"FifoQueue": "true", **attrs})["QueueUrl"]
    )


def error(sqs: Any, call: Any, **kwargs: Any) -> dict[str, Any]:
    with pytest.raises(sqs.exceptions.ClientError) as err:
        call(**kwargs)
    return dict(err.value.response["Error"])


# -- item 1: visibility timeouts with nothing but the web server -------------------------


def test_a_visibility_timeout_ends_with_no_reaper_running(sqs: Any, queue_url: str) -> None:
    """No runworker, no runreaper: the message is receivable again once its visibility
    timeout ends (the figure, expiry to receivable, is printed for the record)."""
    sqs.send_message(QueueUrl=queue_url, MessageBody="x")
    (m,) = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=1)["Messages"]
    expiry = time.time() + 1
    got = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=10, AttributeNames=["All"])
    late = time.time() - expiry
    (again,) = got["Messages"]
    assert again["MessageId"] == m["MessageId"]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"
    print(f"\nSQS: receivable again {late * 1000:.0f} ms after the visibility timeout ended")
    assert late < 2.0


# -- item 3: whole-request errors of SendMessageBatch ------------------------------------


@pytest.mark.parametrize(
    ("entry", "code"),
    [
        ({"MessageDeduplicationId": "d"}, "MissingParameter"),  # no MessageGroupId
        ({"MessageGroupId": "g"}, "InvalidParameterValue"),  # no deduplication id
    ],
)
def test_a_fifo_batch_entry_without_its_ids_fails_the_request(
    sqs: Any, entry: dict[str, str], code: str
) -> None:
    url = fifo(sqs)
    good = {"Id": "good", "MessageBody": "x", "MessageGroupId": "g", "MessageDeduplicationId": "1"}
    got = error(
        sqs,
        sqs.send_message_batch,
        QueueUrl=url,
        Entries=[good, {"Id": "bad", "MessageBody": "y", **entry}],
    )
    assert got["Code"] == code
    assert mq.peek("jobs.fifo") == []  # nothing sent, not even the valid entry


def test_a_batch_over_a_mebibyte_in_all_fails_the_request(sqs: Any, queue_url: str) -> None:
    """Counted as sent: an entry that fails on its own (here: over the queue's maximum
    message size) still counts towards the batch's 1,048,576 bytes."""
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"MaximumMessageSize": "1024"})
    entries = [{"Id": f"e{i}", "MessageBody": "x" * 300_000} for i in range(4)]
    entries.append({"Id": "small", "MessageBody": "ok"})
    got = error(sqs, sqs.send_message_batch, QueueUrl=queue_url, Entries=entries)
    assert got["Code"] == "AWS.SimpleQueueService.BatchRequestTooLong"
    assert mq.peek("orders") == []


# -- item 4: FIFO DelaySeconds=0 ---------------------------------------------------------


def test_fifo_accepts_delay_seconds_zero_and_applies_the_queues_delay(sqs: Any) -> None:
    url = fifo(sqs, DelaySeconds="60")
    ids = {"MessageGroupId": "g", "MessageDeduplicationId": "a"}
    sqs.send_message(QueueUrl=url, MessageBody="one", DelaySeconds=0, **ids)
    sent = sqs.send_message_batch(
        QueueUrl=url,
        Entries=[
            {
                "Id": "z",
                "MessageBody": "two",
                "DelaySeconds": 0,
                **ids,
                "MessageDeduplicationId": "b",
            }
        ],
    )
    assert sent["Failed"] == [] and len(sent["Successful"]) == 1
    assert {p.state for p in mq.peek("jobs.fifo")} == {"scheduled"}  # the queue's delay
    got = error(sqs, sqs.send_message, QueueUrl=url, MessageBody="x", DelaySeconds=5, **ids)
    assert got["Code"] == "InvalidParameterValue"


# -- item 5: MessageAttributeNames wildcards ---------------------------------------------


def test_message_attribute_name_prefixes_and_star(sqs: Any, queue_url: str) -> None:
    attrs = {
        name: {"DataType": "String", "StringValue": name}
        for name in ("Hello", "Help.Me", "Hi", "Other")
    }
    sqs.send_message(QueueUrl=queue_url, MessageBody="x", MessageAttributes=attrs)

    def names(wanted: list[str]) -> set[str]:
        (m,) = sqs.receive_message(
            QueueUrl=queue_url, MessageAttributeNames=wanted, VisibilityTimeout=0
        )["Messages"]
        return set(m.get("MessageAttributes", {}))

    assert names(["Hel.*"]) == {"Hello", "Help.Me"}
    assert names(["*"]) == set(attrs)
    assert names(["Hi", "Oth.*"]) == {"Hi", "Other"}


# -- item 10: mounted at the site root ---------------------------------------------------


def test_mounted_at_the_site_root_queue_urls_answer(live_server: Any, sqs_settings: Any) -> None:
    sqs_settings.ROOT_URLCONF = "tests.sqs.root_urls"
    sqs = boto3.client(
        "sqs",
        endpoint_url=live_server.url,
        region_name="us-east-1",
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
        config=Config(retries={"max_attempts": 1}),
    )
    url = sqs.create_queue(QueueName="rooted")["QueueUrl"]
    assert url == f"{live_server.url}/000000000000/rooted"
    # The query protocol posts to the queue URL itself (older SDKs, kombu).
    body = f"Action=SendMessage&MessageBody=hi&QueueUrl={url}".encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    status, reply = send_raw(url, body, sign(url, body, headers))
    assert status == 200, reply
    assert [m.text() for m in mq.peek("rooted")] == ["hi"]
    # A path that only shares a mount's first letters is no endpoint.
    status, _ = send_raw(f"{live_server.url}/a/b/c", body, sign(url, body, headers))
    assert status == 404


# -- item 11: empty batches, in AWS's words ----------------------------------------------


def test_empty_batches_say_what_they_lack(sqs: Any, queue_url: str) -> None:
    for call, kind in [
        (sqs.send_message_batch, "SendMessageBatchRequestEntry"),
        (sqs.delete_message_batch, "DeleteMessageBatchRequestEntry"),
        (sqs.change_message_visibility_batch, "ChangeMessageVisibilityBatchRequestEntry"),
    ]:
        got = error(sqs, call, QueueUrl=queue_url, Entries=[])
        assert got["Code"] == "AWS.SimpleQueueService.EmptyBatchRequest"
        assert got["Message"] == f"There should be at least one {kind} in the request."


# -- item 8: PurgeQueue deletes in-flight messages ---------------------------------------


def test_purge_queue_deletes_in_flight_messages(sqs: Any, queue_url: str) -> None:
    """On SQS a purged in-flight message is gone: it never comes back after its
    visibility timeout, so it can never dead-letter."""
    sqs.send_message(QueueUrl=queue_url, MessageBody="held")
    sqs.send_message(QueueUrl=queue_url, MessageBody="waiting")
    (held,) = sqs.receive_message(QueueUrl=queue_url, VisibilityTimeout=1)["Messages"]
    sqs.purge_queue(QueueUrl=queue_url)
    assert mq.peek("orders") == []
    assert "Messages" not in sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=2)
    assert held["Body"] in ("held", "waiting")


# -- item 6: content-based deduplication ids are the body's SHA-256 ----------------------


def test_an_explicit_dedup_id_equal_to_the_sha256_of_a_body_is_a_duplicate(sqs: Any) -> None:
    url = fifo(sqs, ContentBasedDeduplication="true")
    first = sqs.send_message(QueueUrl=url, MessageBody="same", MessageGroupId="g")
    digest = hashlib.sha256(b"same").hexdigest()
    sqs.send_message(
        QueueUrl=url, MessageBody="other", MessageGroupId="g", MessageDeduplicationId=digest
    )
    (m,) = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])[
        "Messages"
    ]
    assert m["MessageId"] == first["MessageId"] and m["Body"] == "same"
    assert m["Attributes"]["MessageDeduplicationId"] == digest


# -- item 7: queue attributes as SQS reports them ------------------------------------------


def test_an_empty_policy_removes_the_attribute(sqs: Any, queue_url: str) -> None:
    policy = '{"Version": "2012-10-17", "Statement": []}'
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": policy})
    got = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    assert got["Policy"] == policy
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": ""})
    got = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    assert "Policy" not in got


def test_all_attributes_include_sqs_defaults(sqs: Any, queue_url: str) -> None:
    got = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    assert got["SqsManagedSseEnabled"] == "true"
    assert "DeduplicationScope" not in got and "FifoThroughputLimit" not in got
    url = fifo(sqs)
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (got["DeduplicationScope"], got["FifoThroughputLimit"]) == ("queue", "perQueue")
    sqs.set_queue_attributes(
        QueueUrl=url,
        Attributes={
            "DeduplicationScope": "messageGroup",
            "FifoThroughputLimit": "perMessageGroupId",
        },
    )
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (got["DeduplicationScope"], got["FifoThroughputLimit"]) == (
        "messageGroup",
        "perMessageGroupId",
    )


# -- item 9: a FIFO receive returns as many messages of one group as it can ----------------


def test_fifo_receive_returns_a_group_in_order(sqs: Any) -> None:
    url = fifo(sqs, ContentBasedDeduplication="true")
    for body in ("m1", "m2", "m3"):
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId="group")
    sqs.send_message(QueueUrl=url, MessageBody="other", MessageGroupId="another")
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2)["Messages"]
    assert [m["Body"] for m in got] == ["m1", "m2"]
    (other,) = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert other["Body"] == "other"
    for m in got:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    (last,) = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert last["Body"] == "m3"


# -- error texts as SQS words them (moto's suite, checked against AWS) ---------------------


def test_error_texts_as_sqs_words_them(sqs: Any, queue_url: str) -> None:
    name_text = (
        "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length"
    )
    for name in ("", "/my/test", "p" * 81):
        got = error(sqs, sqs.create_queue, QueueName=name)
        assert (got["Code"], got["Message"]) == ("InvalidParameterValue", name_text)
    got = error(
        sqs,
        sqs.send_message,
        QueueUrl=queue_url,
        MessageBody="x",
        MessageAttributes={"öther": {"DataType": "String", "StringValue": "s"}},
    )
    assert got["Message"] == (
        "The message attribute name 'öther' is invalid. Attribute name can contain A-Z, "
        "a-z, 0-9, underscore (_), hyphen (-), and period (.) characters."
    )
    got = error(
        sqs,
        sqs.send_message,
        QueueUrl=queue_url,
        MessageBody="x",
        MessageAttributes={"t": {"DataType": "Invalid", "StringValue": "1"}},
    )
    assert got["Message"] == (
        "The message attribute 't' has an invalid message attribute type, the set of "
        "supported type prefixes is Binary, Number, and String."
    )
    url = fifo(sqs, ContentBasedDeduplication="true")
    got = error(
        sqs, sqs.send_message, QueueUrl=url, MessageBody="x", MessageGroupId="g", DelaySeconds=5
    )
    assert got["Message"] == (
        "Value 5 for parameter DelaySeconds is invalid. Reason: The request include "
        "parameter that is not valid for this queue type."
    )


def test_tag_errors_as_sqs_words_them(sqs: Any, queue_url: str) -> None:
    sqs.tag_queue(QueueUrl=queue_url, Tags={"k": "v"})
    got = error(sqs, sqs.tag_queue, QueueUrl=queue_url, Tags={})
    assert got["Message"] == "The request must contain the parameter Tags."
    many = {f"k{i}": "v" for i in range(51)}
    got = error(sqs, sqs.tag_queue, QueueUrl=queue_url, Tags=many)
    assert got["Message"] == "Too many tags added for queue orders."
    assert sqs.list_queue_tags(QueueUrl=queue_url)["Tags"] == {"k": "v"}
    got = error(sqs, sqs.untag_queue, QueueUrl=queue_url, TagKeys=[])
    assert got["Message"] == "Tag keys must be between 1 and 128 characters in length."
