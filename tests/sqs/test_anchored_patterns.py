"""Every SQS name, id and label pattern matches the whole value: a value with a trailing
newline is refused like any other bad character (Python's ``$`` also matches before a
final newline, so ``^…$`` with ``re.match`` let ``"label\\n"`` through)."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq

from .test_aws_parity import error

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_queue_name_with_a_trailing_newline_is_refused(sqs: Any) -> None:
    err = error(sqs, sqs.create_queue, QueueName="orders\n")
    assert err["Code"] in {"InvalidParameterValue", "InvalidParameterValueException"}, err
    assert mq.list_queues() == []


def test_a_permission_label_or_account_with_a_trailing_newline_is_refused(
    sqs: Any, queue_url: str
) -> None:
    for label, account in (("ok\n", "111111111111"), ("ok", "111111111111\n")):
        err = error(
            sqs,
            sqs.add_permission,
            QueueUrl=queue_url,
            Label=label,
            AWSAccountIds=[account],
            Actions=["SendMessage"],
        )
        assert err["Code"].startswith("InvalidParameterValue"), err
    attrs = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])["Attributes"]
    assert "Policy" not in attrs


def test_ids_and_attribute_names_with_a_trailing_newline_are_refused(
    sqs: Any, queue_url: str
) -> None:
    bad_entry = [{"Id": "one\n", "MessageBody": "x"}]
    assert error(sqs, sqs.send_message_batch, QueueUrl=queue_url, Entries=bad_entry)
    bad_attr = {"name\n": {"DataType": "String", "StringValue": "v"}}
    assert error(
        sqs, sqs.send_message, QueueUrl=queue_url, MessageBody="x", MessageAttributes=bad_attr
    )
    bad_type = {"name": {"DataType": "String\n", "StringValue": "v"}}
    assert error(
        sqs, sqs.send_message, QueueUrl=queue_url, MessageBody="x", MessageAttributes=bad_type
    )
    assert mq.peek("orders") == []
