"""The SQS endpoint under the engine's admission: attribute values (NUL included) are
checked per entry before anything is written, and properties written by another surface
render as attributes on every ReceiveMessage, whatever an older version stored."""

from __future__ import annotations

import json
from typing import Any

import pytest

import django_mqlite as mq
from tests.support.legacy_rows import BAD_ATTRIBUTE_SHAPES, store_raw

pytestmark = pytest.mark.django_db(transaction=True)

NUL_ATTR = {"k": {"DataType": "String", "StringValue": "a\x00b"}}


def test_a_nul_in_one_batch_entry_fails_that_entry_alone(sqs: Any, queue_url: str) -> None:
    out = sqs.send_message_batch(
        QueueUrl=queue_url,
        Entries=[
            {"Id": "ok1", "MessageBody": "A"},
            {"Id": "nul", "MessageBody": "B", "MessageAttributes": NUL_ATTR},
            {"Id": "ok2", "MessageBody": "C"},
            {
                "Id": "trace",
                "MessageBody": "D",
                "MessageSystemAttributes": {
                    "AWSTraceHeader": {"DataType": "String", "StringValue": "Root=\x00"}
                },
            },
        ],
    )
    assert sorted(s["Id"] for s in out["Successful"]) == ["ok1", "ok2"]
    assert sorted((f["Id"], f["Code"], f["SenderFault"]) for f in out["Failed"]) == [
        ("nul", "InvalidParameterValue", True),
        ("trace", "InvalidParameterValue", True),
    ]
    assert sorted(m.body for m in mq.peek("orders")) == [b"A", b"C"]


def test_a_nul_in_a_single_send_is_400(sqs: Any, queue_url: str) -> None:
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.send_message(QueueUrl=queue_url, MessageBody="x", MessageAttributes=NUL_ATTR)
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"
    assert mq.peek("orders") == []


def test_attribute_values_follow_the_engine_rule(sqs: Any, queue_url: str) -> None:
    attribute = {"DataType": "Number", "StringValue": "Infinity"}
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.send_message(QueueUrl=queue_url, MessageBody="x", MessageAttributes={"a": attribute})
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_stored_invalid_attribute_shapes_still_receive(sqs: Any, queue_url: str) -> None:
    """Rows an older version admitted (``tests/api/test_admission`` shows the HTTP API
    refusing these shapes now): each renders as a String attribute holding its
    JSON, the receive answers 200 and the message can be deleted; its neighbours are fine."""
    for shape in BAD_ATTRIBUTE_SHAPES:
        store_raw("orders", b"legacy", properties_json=json.dumps({"x": shape}))
    mq.send("orders", "neighbour")
    got = sqs.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    )["Messages"]
    assert len(got) == 4
    legacy = [m for m in got if m["Body"] == "legacy"]
    assert sorted(m["MessageAttributes"]["x"]["StringValue"] for m in legacy) == sorted(
        json.dumps(s) for s in BAD_ATTRIBUTE_SHAPES
    )
    for m in got:
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
    assert mq.peek("orders") == []
    assert mq.stats("orders").counts["dead_lettered"] == 0
