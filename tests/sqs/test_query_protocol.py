"""The query/XML protocol of older SDKs and kombu: form-encoded, signed, XML replies."""

from __future__ import annotations

import hashlib
import urllib.parse
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

import django_mqlite as mq

from .conftest import KEY, SECRET
from .test_auth import raw

pytestmark = pytest.mark.django_db(transaction=True)
NS = {"q": "http://queue.amazonaws.com/doc/2012-11-05/"}


def call(url: str, **params: str) -> tuple[int, ET.Element]:
    body = urllib.parse.urlencode(params).encode()
    request = AWSRequest(
        "POST",
        url,
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"},
    )
    SigV4Auth(Credentials(KEY, SECRET), "sqs", "us-east-1").add_auth(request)
    status, reply, headers = raw(url, body, dict(request.headers.items()))
    assert headers["Content-Type"] == "text/xml"
    return status, ET.fromstring(reply)


def text(root: ET.Element, path: str) -> str:
    found = root.find(path, NS)
    assert found is not None, path
    return found.text or ""


def test_query_protocol_round_trip(live_server: Any, sqs_settings: Any) -> None:
    endpoint = f"{live_server.url}/sqs"
    status, root = call(
        endpoint,
        Action="CreateQueue",
        QueueName="legacy",
        **{
            "Attribute.1.Name": "VisibilityTimeout",
            "Attribute.1.Value": "40",
            "Tag.1.Key": "team",
            "Tag.1.Value": "core",
        },
    )
    assert status == 200
    url = text(root, "q:CreateQueueResult/q:QueueUrl")
    assert mq.get_queue("legacy").lock_duration == 40
    status, root = call(
        url,
        Action="SendMessage",
        QueueUrl=url,
        MessageBody="hi",
        **{
            "MessageAttribute.1.Name": "k",
            "MessageAttribute.1.Value.DataType": "String",
            "MessageAttribute.1.Value.StringValue": "v",
        },
    )
    assert text(root, "q:SendMessageResult/q:MD5OfMessageBody") == hashlib.md5(b"hi").hexdigest()
    status, root = call(
        url,
        Action="ReceiveMessage",
        QueueUrl=url,
        **{"AttributeName.1": "All", "MessageAttributeName.1": "All"},
    )
    msg = root.find("q:ReceiveMessageResult/q:Message", NS)
    assert msg is not None
    assert text(msg, "q:Body") == "hi"
    assert text(msg, "q:MessageAttribute/q:Value/q:StringValue") == "v"
    names = [a.text for a in msg.findall("q:Attribute/q:Name", NS)]
    assert "ApproximateReceiveCount" in names
    handle = text(msg, "q:ReceiptHandle")
    status, root = call(
        url,
        Action="DeleteMessageBatch",
        QueueUrl=url,
        **{
            "DeleteMessageBatchRequestEntry.1.Id": "one",
            "DeleteMessageBatchRequestEntry.1.ReceiptHandle": handle,
        },
    )
    assert text(root, "q:DeleteMessageBatchResult/q:DeleteMessageBatchResultEntry/q:Id") == "one"
    assert mq.peek("legacy") == []
    status, root = call(
        url, Action="GetQueueAttributes", QueueUrl=url, **{"AttributeName.1": "All"}
    )
    attrs = {
        a.findtext("q:Name", namespaces=NS): a.findtext("q:Value", namespaces=NS)
        for a in root.findall("q:GetQueueAttributesResult/q:Attribute", NS)
    }
    assert attrs["VisibilityTimeout"] == "40"
    status, root = call(url, Action="ListQueueTags", QueueUrl=url)
    assert text(root, "q:ListQueueTagsResult/q:Tag/q:Value") == "core"


def test_query_errors_carry_the_legacy_code(live_server: Any, sqs_settings: Any) -> None:
    endpoint = f"{live_server.url}/sqs/"
    status, root = call(endpoint, Action="GetQueueUrl", QueueName="missing")
    assert status == 400
    assert text(root, "q:Error/q:Code") == "AWS.SimpleQueueService.NonExistentQueue"
    assert text(root, "q:Error/q:Type") == "Sender"
    status, root = call(endpoint, Action="Frobnicate")
    assert (status, text(root, "q:Error/q:Code")) == (400, "InvalidAction")
