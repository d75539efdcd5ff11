"""boto3 clients against a live server running the SQS endpoint (``tests.urls`` mounts it
at ``/sqs``), on whichever database the suite runs on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

boto3 = pytest.importorskip("boto3")
from botocore.config import Config  # noqa: E402

KEY, SECRET = "AKIDTEST", "test-secret"
CREDENTIALS = {KEY: SECRET, "AKIDUSER": {"secret": "user-secret", "user": "alice"}}


@pytest.fixture
def sqs_settings(settings: Any) -> Any:
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), "SQS": {"CREDENTIALS": CREDENTIALS}}
    return settings


@pytest.fixture
def make_client(live_server: Any, sqs_settings: Any) -> Callable[..., Any]:
    def make(key: str = KEY, secret: str = SECRET, **config: Any) -> Any:
        return boto3.client(
            "sqs",
            endpoint_url=f"{live_server.url}/sqs",
            region_name="us-east-1",
            aws_access_key_id=key,
            aws_secret_access_key=secret,
            config=Config(retries={"max_attempts": 1}, **config),
        )

    return make


@pytest.fixture
def sqs(make_client: Callable[..., Any]) -> Any:
    return make_client()


@pytest.fixture
def queue_url(sqs: Any) -> str:
    return str(sqs.create_queue(QueueName="orders")["QueueUrl"])
