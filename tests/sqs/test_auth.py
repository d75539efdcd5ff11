"""Signatures: unsigned, unknown-key, wrong-secret, tampered and stale requests are
refused with the SDK's codes; a user-bound key acts with that user's permissions."""

from __future__ import annotations

import datetime as dt
import urllib.request
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from botocore import UNSIGNED
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from django.contrib.auth.models import Permission, User

from .conftest import KEY, SECRET

pytestmark = pytest.mark.django_db(transaction=True)


def code_of(call: Callable[[], Any]) -> tuple[int, str]:
    with pytest.raises(Exception) as err:
        call()
    response = err.value.response  # type: ignore[attr-defined]
    return response["ResponseMetadata"]["HTTPStatusCode"], response["Error"]["Code"]


def test_unsigned_is_missing_authentication_token(make_client: Any) -> None:
    client = make_client(signature_version=UNSIGNED)
    assert code_of(client.list_queues) == (403, "MissingAuthenticationToken")


def test_unknown_key(make_client: Any) -> None:
    assert code_of(make_client(key="AKIDNOPE").list_queues) == (403, "InvalidClientTokenId")


def test_wrong_secret(make_client: Any) -> None:
    assert code_of(make_client(secret="wrong").list_queues) == (403, "SignatureDoesNotMatch")


def raw(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes, Any]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers


def signed(
    url: str, body: bytes, when: dt.datetime | None = None, target: str = "ListQueues"
) -> dict[str, str]:
    request = AWSRequest(
        "POST",
        url,
        data=body,
        headers={
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": f"AmazonSQS.{target}",
        },
    )
    auth = SigV4Auth(Credentials(KEY, SECRET), "sqs", "us-east-1")
    if when is None:
        auth.add_auth(request)
    else:
        with mock.patch("botocore.auth.get_current_datetime", return_value=when):
            auth.add_auth(request)
    return dict(request.headers.items())


def test_a_tampered_body_or_a_stale_date_is_refused(live_server: Any, sqs_settings: Any) -> None:
    url = f"{live_server.url}/sqs"
    status, body, headers = raw(url, b"{}", signed(url, b"{}"))
    assert status == 200, body
    status, body, headers = raw(url, b'{"QueueNamePrefix": "x"}', signed(url, b"{}"))
    assert status == 403 and b"SignatureDoesNotMatch" in body
    assert headers["Content-Type"] == "application/x-amz-json-1.0"
    old = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=20)
    status, body, _ = raw(url, b"{}", signed(url, b"{}", old))
    assert status == 403 and b"SignatureDoesNotMatch" in body and b"expired" in body


def test_errors_are_never_html(live_server: Any, sqs_settings: Any) -> None:
    for path in ("/sqs", "/sqs/", "/sqs/000000000000/none"):
        status, body, headers = raw(f"{live_server.url}{path}", b"Action=ListQueues", {})
        assert status == 403
        assert headers["Content-Type"] == "text/xml"
        assert b"<Code>MissingAuthenticationToken</Code>" in body


def test_user_bound_key_uses_the_users_permissions(make_client: Any) -> None:
    make_client().create_queue(QueueName="jobs")
    user = User.objects.create_user("alice")
    client = make_client(key="AKIDUSER", secret="user-secret")
    url = client.get_queue_url  # needs view_queue
    assert code_of(lambda: url(QueueName="jobs")) == (403, "AccessDenied")
    assert code_of(lambda: client.list_queues()) == (403, "AccessDenied")
    user.user_permissions.add(Permission.objects.get(codename="view_queue"))
    queue_url = client.get_queue_url(QueueName="jobs")["QueueUrl"]
    assert code_of(lambda: client.send_message(QueueUrl=queue_url, MessageBody="x")) == (
        403,
        "AccessDenied",
    )
    user.user_permissions.add(Permission.objects.get(codename="send_queue"))
    client.send_message(QueueUrl=queue_url, MessageBody="x")
    user.is_active = False
    user.save()
    assert code_of(lambda: client.list_queues()) == (403, "InvalidClientTokenId")


def test_no_credentials_configured_refuses_every_key(make_client: Any, settings: Any) -> None:
    settings.MQLITE = {"SQS": {}}
    assert code_of(make_client().list_queues) == (403, "InvalidClientTokenId")


def test_no_key_sends_to_a_tasks_queue(make_client: Any) -> None:
    # "tasks" is served by the test project's Tasks backend: a message there would run
    # project code, so no SQS credential may send to it (MQLITE["OPEN_TASK_QUEUES"]).
    client = make_client()
    client.create_queue(QueueName="tasks")
    url = client.get_queue_url(QueueName="tasks")["QueueUrl"]
    body = '{"task": "os.system", "args": ["true"], "kwargs": {}}'
    assert code_of(lambda: client.send_message(QueueUrl=url, MessageBody=body)) == (
        403,
        "AccessDenied",
    )
