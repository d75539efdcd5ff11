"""Raw SigV4-signed requests to the live SQS endpoint, for requests an SDK would refuse
to build (wrong types, hostile shapes) or to replay with altered headers."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from .conftest import KEY, SECRET


def sign(
    url: str,
    body: bytes,
    headers: dict[str, str],
    key: str = KEY,
    secret: str = SECRET,
) -> dict[str, str]:
    request = AWSRequest("POST", url, data=body, headers=headers)
    SigV4Auth(Credentials(key, secret), "sqs", "us-east-1").add_auth(request)
    return dict(request.headers.items())


def send_raw(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def call(
    base: str,
    op: str,
    params: dict[str, Any] | bytes,
    key: str = KEY,
    secret: str = SECRET,
) -> tuple[int, Any]:
    """One JSON-protocol call: (status, parsed reply)."""
    url = f"{base}/sqs"
    body = params if isinstance(params, bytes) else json.dumps(params).encode()
    headers = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": f"AmazonSQS.{op}"}
    status, raw = send_raw(url, body, sign(url, body, headers, key, secret))
    return status, json.loads(raw) if raw else None


def call_query(base: str, form: str, key: str = KEY, secret: str = SECRET) -> tuple[int, bytes]:
    """One query-protocol call (form-encoded ``Action=...``)."""
    url = f"{base}/sqs"
    body = form.encode()
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    return send_raw(url, body, sign(url, body, headers, key, secret))
