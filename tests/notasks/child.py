"""Run as ``python -m tests.notasks.child``: hide the Tasks framework (``django_tasks``,
and ``django.tasks`` where Django has it), then send through Python, HTTP and SQS, run
the system checks and the declared-queue sync, and print what each did as JSON.

``sys.modules[name] = None`` makes ``import name`` raise ``ModuleNotFoundError`` and
``importlib.util.find_spec(name)`` answer None, exactly as for a package not installed.
"""

from __future__ import annotations

import io
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

HIDDEN = ("django_tasks", "django.tasks")


def hide() -> None:
    for name in HIDDEN:
        sys.modules[name] = None  # type: ignore[assignment]


def run(results: dict[str, Any], name: str, step: Callable[[], Any]) -> None:
    try:
        results[name] = {"ok": True, "value": step()}
    except BaseException as exc:
        results[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:2000]}
        results[name]["traceback"] = traceback.format_exc()[-3000:]


def sqs_call(client: Any, op: str, params: dict[str, Any]) -> tuple[int, Any]:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    url = "http://testserver/sqs"
    body = json.dumps(params).encode()
    headers = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": f"AmazonSQS.{op}"}
    request = AWSRequest("POST", url, data=body, headers=headers)
    SigV4Auth(Credentials("AKIDTEST", "test-secret"), "sqs", "us-east-1").add_auth(request)
    signed = {k: v for k, v in request.headers.items() if k.lower() != "content-type"}
    signed["Host"] = "testserver"  # the test client sends no Host header of its own
    response = client.post(
        "/sqs", data=body, content_type="application/x-amz-json-1.0", headers=signed
    )
    return response.status_code, json.loads(response.content or b"null")


def main() -> None:
    hide()
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError
    from django.test import Client

    import django_mqlite as mq

    results: dict[str, Any] = {}

    def check() -> str:
        out = io.StringIO()
        try:
            call_command("check", stdout=out, stderr=out)
        except SystemCheckError as exc:
            return f"{out.getvalue()}{exc}"
        return out.getvalue()

    def declared() -> Any:
        from django_mqlite.engine.queues import sync_declared
        from django_mqlite.tasks.declared import declared_queues

        sync_declared(declared_queues(), using="default")
        return sorted(q.name for q in mq.list_queues())

    def python_send() -> Any:
        mq.create_queue("plain")
        return [mq.send("plain", {"n": 1}), mq.send_batch("plain", [mq.OutMessage(body={"n": 2})])]

    def http_send() -> Any:
        user = get_user_model().objects.create_superuser("root", password="pw")
        client = Client()
        client.force_login(user)
        one = client.post("/mq/queues/plain/messages/", {"body": {"n": 3}}, "application/json")
        many = client.post(
            "/mq/queues/plain/messages/", {"messages": [{"body": 4}]}, "application/json"
        )
        mq.create_queue("jobs")
        closed = client.post("/mq/queues/jobs/messages/", {"body": 5}, "application/json")
        return [one.status_code, many.status_code, closed.status_code]

    def sqs_send() -> Any:
        client = Client()
        status, made = sqs_call(client, "CreateQueue", {"QueueName": "sqsplain"})
        assert status == 200, made
        url = made["QueueUrl"]
        one = sqs_call(client, "SendMessage", {"QueueUrl": url, "MessageBody": "x"})
        many = sqs_call(
            client,
            "SendMessageBatch",
            {"QueueUrl": url, "Entries": [{"Id": "a", "MessageBody": "y"}]},
        )
        got = sqs_call(client, "ReceiveMessage", {"QueueUrl": url, "MaxNumberOfMessages": 10})
        jobs = sqs_call(client, "GetQueueUrl", {"QueueName": "jobs"})[1]["QueueUrl"]
        closed = sqs_call(client, "SendMessage", {"QueueUrl": jobs, "MessageBody": "x"})
        return [one[0], many[0], len((got[1] or {}).get("Messages", [])), closed[0]]

    run(results, "check", check)
    run(results, "declared", declared)
    run(results, "python", python_send)
    run(results, "http", http_send)
    run(results, "sqs", sqs_send)
    results["loaded"] = sorted(n for n in HIDDEN if sys.modules.get(n) is not None)
    results["django"] = django.get_version()
    print(json.dumps(results))


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.notasks.settings")
    main()
