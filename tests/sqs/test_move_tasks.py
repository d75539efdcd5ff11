"""Message move tasks never loop: the source is never the destination, and a message a
task moved that dead-letters back into the source while it runs is not moved again."""

from __future__ import annotations

import json
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.sqs import store
from django_mqlite.sqs.handlers import moves

pytestmark = pytest.mark.django_db(transaction=True)

ARN = "arn:aws:sqs:us-east-1:000000000000:{}"


def _pair(sqs: Any) -> tuple[str, str]:
    dlq = sqs.create_queue(QueueName="orders-dlq")["QueueUrl"]
    policy = json.dumps({"deadLetterTargetArn": ARN.format("orders-dlq"), "maxReceiveCount": 1})
    src = sqs.create_queue(QueueName="orders", Attributes={"RedrivePolicy": policy})["QueueUrl"]
    return src, dlq


def test_the_source_as_destination_is_refused(sqs: Any) -> None:
    _pair(sqs)
    mq.send("orders-dlq", "dead")
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.start_message_move_task(
            SourceArn=ARN.format("orders-dlq"), DestinationArn=ARN.format("orders-dlq")
        )
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert sqs.list_message_move_tasks(SourceArn=ARN.format("orders-dlq"))["Results"] == []
    assert mq.stats("orders-dlq").counts["active"] == 1


def test_a_moved_message_that_dead_letters_back_is_not_moved_again(
    sqs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The destination forwards its dead letters into the source, and every moved
    message fails at once: without the task's bound it moves them for ever."""
    _pair(sqs)
    mq.send_batch("orders-dlq", [mq.OutMessage(f"m{i}") for i in range(50)])
    real_send_batch = mq.send_batch
    sends = []

    def send_and_fail(queue: str, out: list[mq.OutMessage], **kw: Any) -> list[int]:
        seqs = real_send_batch(queue, out, **kw)
        sends.append(len(seqs))
        if len(sends) > 5:
            raise RuntimeError("the task is looping")
        if queue == "orders":  # a consumer that rejects each moved message at once
            for m in mq.receive("orders", max_messages=len(seqs)):
                m.reject("Poison")
        return seqs

    monkeypatch.setattr(mq, "send_batch", send_and_fail)
    handle = "t1"
    assert store.add_move_task("orders-dlq", {"TaskHandle": handle, "Status": "RUNNING"})
    moves.run("orders-dlq", mq.get_queue("orders"), handle, None, store.highest_seq("orders-dlq"))
    (task,) = store.move_tasks("orders-dlq")
    assert (task["Status"], task["ApproximateNumberOfMessagesMoved"]) == ("COMPLETED", 50)
    assert sends == [50]
    back = mq.peek("orders-dlq", limit=100)
    assert len(back) == 50 and {p.state for p in back} == {"active"}
    assert {p.delivery_count for p in back} == {0}  # handed back uncounted
