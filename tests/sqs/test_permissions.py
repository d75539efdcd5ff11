"""AddPermission and RemovePermission: statements of the queue's stored Policy, as SQS
keeps them (#32: moto's test_permissions, test_add_permission_errors and
test_remove_permission_errors, here on both databases and both protocols)."""

from __future__ import annotations

import json
import threading
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User

from .test_aws_parity import error, fifo
from .test_query_protocol import call, text

pytestmark = pytest.mark.django_db(transaction=True)
ARN = "arn:aws:sqs:us-east-1:000000000000:{}"


def policy(sqs: Any, url: str) -> dict[str, Any] | None:
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    return json.loads(attrs["Policy"]) if "Policy" in attrs else None


def statement(label: str, account: str, action: str, queue: str) -> dict[str, Any]:
    return {
        "Sid": label,
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
        "Action": action,
        "Resource": ARN.format(queue),
    }


def test_statements_are_added_and_removed_by_label(sqs: Any) -> None:
    url = fifo(sqs)
    sqs.add_permission(
        QueueUrl=url, Label="account1", AWSAccountIds=["111111111111"], Actions=["*"]
    )
    sqs.add_permission(
        QueueUrl=url, Label="account2", AWSAccountIds=["222211111111"], Actions=["SendMessage"]
    )
    got = policy(sqs, url)
    assert got is not None
    assert (got["Version"], got["Id"]) == ("2012-10-17", ARN.format("jobs.fifo/SQSDefaultPolicy"))
    assert got["Statement"] == [
        statement("account1", "111111111111", "SQS:*", "jobs.fifo"),
        statement("account2", "222211111111", "SQS:SendMessage", "jobs.fifo"),
    ]
    sqs.remove_permission(QueueUrl=url, Label="account2")
    got = policy(sqs, url)
    assert got is not None
    assert got["Statement"] == [statement("account1", "111111111111", "SQS:*", "jobs.fifo")]
    sqs.remove_permission(QueueUrl=url, Label="account1")
    assert policy(sqs, url) is None  # no statement left: no policy


def test_several_accounts_and_actions_are_lists(sqs: Any, queue_url: str) -> None:
    sqs.add_permission(
        QueueUrl=queue_url,
        Label="readers",
        AWSAccountIds=["111111111111", "222222222222"],
        Actions=["ReceiveMessage", "DeleteMessage"],
    )
    got = policy(sqs, queue_url)
    assert got is not None
    (only,) = got["Statement"]
    assert only["Principal"] == {
        "AWS": ["arn:aws:iam::111111111111:root", "arn:aws:iam::222222222222:root"]
    }
    assert only["Action"] == ["SQS:ReceiveMessage", "SQS:DeleteMessage"]


def test_a_statement_joins_a_policy_set_by_set_queue_attributes(sqs: Any, queue_url: str) -> None:
    mine = {"Version": "2012-10-17", "Id": "mine", "Statement": {"Sid": "own", "Effect": "Deny"}}
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={"Policy": json.dumps(mine)})
    sqs.add_permission(
        QueueUrl=queue_url, Label="more", AWSAccountIds=["111111111111"], Actions=["SendMessage"]
    )
    got = policy(sqs, queue_url)
    assert got is not None
    assert got["Id"] == "mine"
    assert [s["Sid"] for s in got["Statement"]] == ["own", "more"]


WRONG = [
    (
        {"Label": "test", "Actions": ["ReceiveMessage", "SendMessage"]},
        (400, "InvalidParameterValue"),
        "Value test for parameter Label is invalid. Reason: Already exists.",
    ),
    (
        {"Actions": ["RemovePermission"]},
        (400, "InvalidParameterValue"),
        "Value SQS:RemovePermission for parameter ActionName is invalid. "
        "Reason: Only the queue owner is allowed to invoke this action.",
    ),
    (
        {"Actions": []},
        (400, "MissingParameter"),
        "The request must contain the parameter Actions.",
    ),
    (
        {"AWSAccountIds": []},
        (400, "InvalidParameterValue"),
        "Value [] for parameter PrincipalId is invalid. Reason: Unable to verify.",
    ),
    (
        {"AWSAccountIds": ["alice"]},
        (400, "InvalidParameterValue"),
        "Value [alice] for parameter PrincipalId is invalid. Reason: Unable to verify.",
    ),
    (
        {"Label": "no spaces"},
        (400, "InvalidParameterValue"),
        None,
    ),
    (
        {
            "Actions": [
                "ChangeMessageVisibility",
                "DeleteMessage",
                "GetQueueAttributes",
                "GetQueueUrl",
                "ListDeadLetterSourceQueues",
                "PurgeQueue",
                "ReceiveMessage",
                "SendMessage",
            ]
        },
        (403, "OverLimit"),
        "8 Actions were found, maximum allowed is 7.",
    ),
]


@pytest.mark.parametrize(("change", "status_code", "message"), WRONG)
def test_bad_add_permission_is_refused_and_changes_nothing(
    sqs: Any, queue_url: str, change: dict[str, Any], status_code: Any, message: str | None
) -> None:
    sqs.add_permission(
        QueueUrl=queue_url, Label="test", AWSAccountIds=["111111111111"], Actions=["SendMessage"]
    )
    before = policy(sqs, queue_url)
    args = {
        "QueueUrl": queue_url,
        "Label": "test-2",
        "AWSAccountIds": ["111111111111"],
        "Actions": ["ReceiveMessage"],
        **change,
    }
    with pytest.raises(sqs.exceptions.ClientError) as err:
        sqs.add_permission(**args)
    reply = err.value.response
    assert (reply["ResponseMetadata"]["HTTPStatusCode"], reply["Error"]["Code"]) == status_code
    if message is not None:
        assert reply["Error"]["Message"] == message
    assert policy(sqs, queue_url) == before


def test_removing_an_unknown_label_is_refused(sqs: Any, queue_url: str) -> None:
    got = error(sqs, sqs.remove_permission, QueueUrl=queue_url, Label="test")
    assert got["Code"] == "InvalidParameterValue"
    assert got["Message"] == (
        "Value test for parameter Label is invalid. Reason: can't find label on existing policy."
    )


def test_a_policy_that_is_not_a_document_is_refused(sqs: Any, queue_url: str) -> None:
    for bad in ("not json", "[1, 2]", '{"Statement": "all"}', '{"Statement": [1]}'):
        got = error(sqs, sqs.set_queue_attributes, QueueUrl=queue_url, Attributes={"Policy": bad})
        assert (got["Code"], got["Message"]) == (
            "InvalidAttributeValue",
            "Invalid value for the parameter Policy.",
        )
    assert policy(sqs, queue_url) is None


def test_permissions_need_manage(make_client: Any) -> None:
    url = make_client().create_queue(QueueName="jobs")["QueueUrl"]
    user = User.objects.create_user("alice")
    user.user_permissions.add(Permission.objects.get(codename="view_queue"))
    client = make_client(key="AKIDUSER", secret="user-secret")
    got = error(
        client,
        client.add_permission,
        QueueUrl=url,
        Label="x",
        AWSAccountIds=["111111111111"],
        Actions=["SendMessage"],
    )
    assert got["Code"] == "AccessDenied"
    assert policy(make_client(), url) is None


def test_concurrent_adds_lose_none(make_client: Any, queue_url: str) -> None:
    """Eight clients add eight labels at once: the read and the write of the policy are
    one locked step, so every statement is there."""
    errors: list[BaseException] = []

    def add(i: int) -> None:
        try:
            make_client().add_permission(
                QueueUrl=queue_url,
                Label=f"l{i}",
                AWSAccountIds=["111111111111"],
                Actions=["SendMessage"],
            )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    got = policy(make_client(), queue_url)
    assert got is not None
    assert sorted(s["Sid"] for s in got["Statement"]) == [f"l{i}" for i in range(8)]


def test_the_query_protocol_names_lists_as_sqs_does(live_server: Any, sqs_settings: Any) -> None:
    endpoint = f"{live_server.url}/sqs"
    status, root = call(endpoint, Action="CreateQueue", QueueName="legacy")
    url = text(root, "q:CreateQueueResult/q:QueueUrl")
    status, root = call(
        url,
        Action="AddPermission",
        QueueUrl=url,
        Label="both",
        **{
            "AWSAccountId.1": "111111111111",
            "AWSAccountId.2": "222222222222",
            "ActionName.1": "SendMessage",
        },
    )
    assert status == 200, ET.tostring(root).decode()
    status, root = call(
        url, Action="GetQueueAttributes", QueueUrl=url, **{"AttributeName.1": "Policy"}
    )
    document = json.loads(text(root, "q:GetQueueAttributesResult/q:Attribute/q:Value"))
    assert document["Statement"][0]["Principal"]["AWS"] == [
        "arn:aws:iam::111111111111:root",
        "arn:aws:iam::222222222222:root",
    ]
    status, _ = call(url, Action="RemovePermission", QueueUrl=url, Label="both")
    assert status == 200
