"""FIFO queues (group order, 5-minute dedup, SequenceNumber) and dead-letter queues
(RedrivePolicy, ListDeadLetterSourceQueues, message move tasks)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

import django_mqlite as mq

pytestmark = pytest.mark.django_db(transaction=True)


def fifo(sqs: Any, name: str = "jobs.fifo", **attrs: str) -> str:
    return str(
        sqs.create_queue(QueueName=name, Attributes={"FifoQueue": "true", **attrs})["QueueUrl"]
    )


def test_fifo_needs_the_suffix_and_a_group(sqs: Any) -> None:
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.create_queue(QueueName="jobs", Attributes={"FifoQueue": "true"})
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"
    url = fifo(sqs)
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.send_message(QueueUrl=url, MessageBody="x", MessageDeduplicationId="d")
    assert err.value.response["Error"]["Code"] == "MissingParameter"
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.send_message(QueueUrl=url, MessageBody="x", MessageGroupId="g")  # no dedup id
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert (attrs["FifoQueue"], attrs["ContentBasedDeduplication"]) == ("true", "false")


def test_group_order_blocked_group_and_sequence_numbers(sqs: Any) -> None:
    url = fifo(sqs)
    seqs = []
    for i, group in enumerate(["a", "a", "b"]):
        sent = sqs.send_message(
            QueueUrl=url,
            MessageBody=f"{group}{i}",
            MessageGroupId=group,
            MessageDeduplicationId=f"d{i}",
        )
        seqs.append(int(sent["SequenceNumber"]))
    assert seqs == sorted(seqs)
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])
    # As on SQS, a receive takes as many of a group as it can, in order.
    assert [m["Body"] for m in got["Messages"]] == ["a0", "a1", "b2"]
    a0 = got["Messages"][0]
    assert a0["Attributes"]["MessageGroupId"] == "a"
    assert a0["Attributes"]["MessageDeduplicationId"] == "d0"
    assert a0["Attributes"]["SequenceNumber"] == str(seqs[0])
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_a_group_in_flight_holds_its_later_messages(sqs: Any) -> None:
    url = fifo(sqs, ContentBasedDeduplication="true")
    for body in ("a0", "a1"):
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId="a")
    (a0,) = sqs.receive_message(QueueUrl=url)["Messages"]
    assert "Messages" not in sqs.receive_message(QueueUrl=url)  # a1 waits behind a0
    sqs.delete_message(QueueUrl=url, ReceiptHandle=a0["ReceiptHandle"])
    assert sqs.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "a1"


def test_dedup_within_five_minutes(sqs: Any, clock: mq.clock.FrozenClock) -> None:
    url = fifo(sqs, ContentBasedDeduplication="true")
    first = sqs.send_message(QueueUrl=url, MessageBody="same", MessageGroupId="g")
    again = sqs.send_message(QueueUrl=url, MessageBody="same", MessageGroupId="g")
    assert again["MessageId"] == first["MessageId"]
    sqs.send_message(
        QueueUrl=url, MessageBody="other", MessageGroupId="g", MessageDeduplicationId="k"
    )
    sqs.send_message(
        QueueUrl=url, MessageBody="changed", MessageGroupId="g", MessageDeduplicationId="k"
    )  # accepted, not enqueued
    assert [p.text() for p in mq.peek("jobs.fifo")] == ["same", "other"]
    clock.advance(301)
    sqs.send_message(QueueUrl=url, MessageBody="same", MessageGroupId="g")
    assert len(mq.peek("jobs.fifo")) == 3


def redrive_pair(sqs: Any, max_receives: int = 2) -> tuple[str, str]:
    dlq = sqs.create_queue(QueueName="orders-dlq")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": str(max_receives)})
    src = sqs.create_queue(QueueName="orders", Attributes={"RedrivePolicy": policy})["QueueUrl"]
    return src, dlq


def test_redrive_policy_moves_to_the_dlq_after_max_receives(sqs: Any) -> None:
    src, dlq = redrive_pair(sqs)
    attrs = sqs.get_queue_attributes(QueueUrl=src, AttributeNames=["RedrivePolicy"])
    policy = json.loads(attrs["Attributes"]["RedrivePolicy"])
    assert policy == {
        "deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:orders-dlq",
        "maxReceiveCount": 2,
    }
    assert sqs.list_dead_letter_source_queues(QueueUrl=dlq)["queueUrls"] == [src]
    sent = sqs.send_message(QueueUrl=src, MessageBody="poison")
    for _ in range(2):
        (_m,) = sqs.receive_message(QueueUrl=src, VisibilityTimeout=0)["Messages"]
    assert "Messages" not in sqs.receive_message(QueueUrl=src)
    (dead,) = sqs.receive_message(QueueUrl=dlq, AttributeNames=["All"])["Messages"]
    assert (dead["Body"], dead["MessageId"]) == ("poison", sent["MessageId"])
    # As on SQS: the receive count keeps counting, and the source queue is named.
    assert dead["Attributes"]["ApproximateReceiveCount"] == "3"
    assert dead["Attributes"]["DeadLetterQueueSourceArn"] == (
        "arn:aws:sqs:us-east-1:000000000000:orders"
    )
    sqs.change_message_visibility(
        QueueUrl=dlq, ReceiptHandle=dead["ReceiptHandle"], VisibilityTimeout=0
    )
    # Move it back.
    dlq_arn = "arn:aws:sqs:us-east-1:000000000000:orders-dlq"
    handle = sqs.start_message_move_task(SourceArn=dlq_arn)["TaskHandle"]
    task = finished(sqs, dlq_arn)
    assert (task["TaskHandle"], task["Status"]) == (handle, "COMPLETED")
    assert task["ApproximateNumberOfMessagesMoved"] == 1
    assert task["DestinationArn"].endswith(":orders")
    (back,) = sqs.receive_message(QueueUrl=src, AttributeNames=["All"])["Messages"]
    assert back["Body"] == "poison"
    assert back["Attributes"]["ApproximateReceiveCount"] == "1"
    assert "DeadLetterQueueSourceArn" not in back["Attributes"]
    assert "Messages" not in sqs.receive_message(QueueUrl=dlq)
    with pytest.raises(sqs.exceptions.ResourceNotFoundException):
        sqs.cancel_message_move_task(TaskHandle=handle)


def finished(sqs: Any, arn: str) -> dict[str, Any]:
    """The latest move task once it has stopped running."""
    deadline = time.monotonic() + 30
    while True:
        (task,) = sqs.list_message_move_tasks(SourceArn=arn)["Results"]
        if task["Status"] not in ("RUNNING", "CANCELLING") or time.monotonic() > deadline:
            return dict(task)
        time.sleep(0.05)


def test_a_rate_limited_move_task_can_be_cancelled(sqs: Any) -> None:
    redrive_pair(sqs, max_receives=1)
    for i in range(6):
        mq.send("orders-dlq", f"dead {i}")
    dlq_arn = "arn:aws:sqs:us-east-1:000000000000:orders-dlq"
    handle = sqs.start_message_move_task(SourceArn=dlq_arn, MaxNumberOfMessagesPerSecond=2)[
        "TaskHandle"
    ]
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.start_message_move_task(SourceArn=dlq_arn)
    assert err.value.response["Error"]["Code"] == "AWS.SimpleQueueService.UnsupportedOperation"
    sqs.cancel_message_move_task(TaskHandle=handle)
    task = finished(sqs, dlq_arn)
    assert task["Status"] == "CANCELLED"
    moved = task["ApproximateNumberOfMessagesMoved"]
    assert moved < 6  # stopped early (at 2 a second, 6 take 3 s)
    assert mq.stats("orders").counts["active"] == moved
    assert mq.stats("orders-dlq").counts["active"] == 6 - moved


def test_clearing_the_policy_and_refusals(sqs: Any) -> None:
    src, dlq = redrive_pair(sqs)
    sqs.set_queue_attributes(QueueUrl=src, Attributes={"RedrivePolicy": ""})
    assert mq.get_queue("orders").forward_dead_letters_to is None
    assert sqs.list_dead_letter_source_queues(QueueUrl=dlq)["queueUrls"] == []
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.start_message_move_task(SourceArn="arn:aws:sqs:us-east-1:000000000000:orders-dlq")
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"
    sqs.set_queue_attributes(
        QueueUrl=dlq,
        Attributes={"RedriveAllowPolicy": json.dumps({"redrivePermission": "denyAll"})},
    )
    policy = json.dumps(
        {
            "deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:orders-dlq",
            "maxReceiveCount": 3,
        }
    )
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.set_queue_attributes(QueueUrl=src, Attributes={"RedrivePolicy": policy})
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"
