"""Queue actions through boto3: create (idempotent), find, list, attributes, tags, purge,
delete, and the SQS error codes."""

from __future__ import annotations

import json
from typing import Any

import pytest

import django_mqlite as mq

pytestmark = pytest.mark.django_db(transaction=True)


def test_create_is_idempotent_and_refuses_different_attributes(sqs: Any) -> None:
    url = sqs.create_queue(QueueName="q1", Attributes={"VisibilityTimeout": "45"})["QueueUrl"]
    assert url.endswith("/sqs/000000000000/q1")
    again = sqs.create_queue(QueueName="q1", Attributes={"VisibilityTimeout": "45"})
    assert again["QueueUrl"] == url
    with pytest.raises(sqs.exceptions.QueueNameExists) as err:
        sqs.create_queue(QueueName="q1", Attributes={"VisibilityTimeout": "46"})
    assert err.value.response["Error"]["Code"] == "QueueAlreadyExists"
    assert mq.get_queue("q1").lock_duration == 45


def test_get_queue_url_and_missing_queue(sqs: Any, queue_url: str) -> None:
    assert sqs.get_queue_url(QueueName="orders")["QueueUrl"] == queue_url
    with pytest.raises(sqs.exceptions.QueueDoesNotExist) as err:
        sqs.get_queue_url(QueueName="nope")
    assert err.value.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.send_message(QueueUrl=queue_url.replace("orders", "nope"), MessageBody="x")


def test_list_queues_prefix_and_pages(sqs: Any) -> None:
    for name in ("a1", "a2", "a3", "b1"):
        sqs.create_queue(QueueName=name)
    assert [u.rsplit("/", 1)[1] for u in sqs.list_queues(QueueNamePrefix="a")["QueueUrls"]] == [
        "a1",
        "a2",
        "a3",
    ]
    page = sqs.list_queues(MaxResults=2)
    assert len(page["QueueUrls"]) == 2
    rest = sqs.list_queues(MaxResults=2, NextToken=page["NextToken"])
    assert [u.rsplit("/", 1)[1] for u in rest["QueueUrls"]] == ["a3", "b1"]
    assert "NextToken" not in rest
    assert "QueueUrls" not in sqs.list_queues(QueueNamePrefix="zzz")


def test_attributes_round_trip(sqs: Any, queue_url: str) -> None:
    sqs.set_queue_attributes(
        QueueUrl=queue_url,
        Attributes={
            "VisibilityTimeout": "60",
            "DelaySeconds": "5",
            "MessageRetentionPeriod": "3600",
            "MaximumMessageSize": "2048",
            "ReceiveMessageWaitTimeSeconds": "2",
        },
    )
    attrs = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    assert attrs["VisibilityTimeout"] == "60"
    assert attrs["DelaySeconds"] == "5"
    assert attrs["MessageRetentionPeriod"] == "3600"
    assert attrs["MaximumMessageSize"] == "2048"
    assert attrs["ReceiveMessageWaitTimeSeconds"] == "2"
    assert attrs["QueueArn"] == "arn:aws:sqs:us-east-1:000000000000:orders"
    assert int(attrs["LastModifiedTimestamp"]) >= int(attrs["CreatedTimestamp"]) > 0
    assert "FifoQueue" not in attrs
    assert mq.get_queue("orders").default_ttl == 3600
    sqs.send_message(QueueUrl=queue_url, MessageBody="x")
    sqs.send_message(QueueUrl=queue_url, MessageBody="y", DelaySeconds=0)
    counts = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed"],
    )["Attributes"]
    assert counts == {"ApproximateNumberOfMessages": "1", "ApproximateNumberOfMessagesDelayed": "1"}
    assert sqs.get_queue_attributes(QueueUrl=queue_url).get("Attributes") is None


def test_bad_attributes(sqs: Any, queue_url: str) -> None:
    with pytest.raises(sqs.exceptions.InvalidAttributeName):
        sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"Nope": "1"})
    with pytest.raises(sqs.exceptions.InvalidAttributeValue):
        sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"DelaySeconds": "901"})
    with pytest.raises(sqs.exceptions.InvalidAttributeName):
        sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["Nope"])
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.create_queue(QueueName="bad name")
    assert err.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_tags(sqs: Any, queue_url: str) -> None:
    sqs.create_queue(QueueName="tagged", tags={"team": "core"})
    tagged = sqs.get_queue_url(QueueName="tagged")["QueueUrl"]
    assert sqs.list_queue_tags(QueueUrl=tagged)["Tags"] == {"team": "core"}
    sqs.tag_queue(QueueUrl=tagged, Tags={"env": "test"})
    sqs.untag_queue(QueueUrl=tagged, TagKeys=["team"])
    assert sqs.list_queue_tags(QueueUrl=tagged)["Tags"] == {"env": "test"}
    assert "Tags" not in sqs.list_queue_tags(QueueUrl=queue_url)


def test_purge_and_delete(sqs: Any, queue_url: str) -> None:
    for i in range(3):
        sqs.send_message(QueueUrl=queue_url, MessageBody=str(i))
    sqs.purge_queue(QueueUrl=queue_url)
    assert mq.peek("orders") == []
    sqs.delete_queue(QueueUrl=queue_url)
    with pytest.raises(mq.QueueNotFoundError):
        mq.get_queue("orders")


def test_a_native_queue_is_reachable(sqs: Any) -> None:
    mq.create_queue("native", lock_duration=12)
    url = sqs.get_queue_url(QueueName="native")["QueueUrl"]
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attrs["VisibilityTimeout"] == "12"
    assert "RedrivePolicy" not in attrs


def test_unknown_action(live_server: Any, sqs_settings: Any) -> None:
    from .test_auth import raw, signed

    url = f"{live_server.url}/sqs"
    status, body, headers = raw(url, b"{}", signed(url, b"{}", target="Frobnicate"))
    assert status == 400
    assert json.loads(body)["__type"] == "com.amazonaws.sqs#InvalidAction"
    assert headers["x-amzn-query-error"] == "InvalidAction;Sender"
