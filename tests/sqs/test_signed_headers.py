"""What a SigV4 signature must cover: host, x-amz-date and, on the JSON protocol, the
X-Amz-Target that names the action; the signed-header list sorted; the credential
scope's date the day of X-Amz-Date. Each request here is signed correctly for what it
declares (by a signer written out below), so only those rules can refuse it."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
from typing import Any
from urllib.parse import urlsplit

import pytest

import django_mqlite as mq

from .conftest import KEY, SECRET
from .signing import send_raw

pytestmark = pytest.mark.django_db(transaction=True)


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def signed_request(
    url: str,
    target: str | None,
    params: dict[str, Any],
    signed: list[str],
    *,
    scope_day: str | None = None,
    sent_target: str | None = None,
) -> tuple[int, bytes]:
    """Sign a JSON-protocol request over exactly the ``signed`` headers (in that order),
    then send it, with ``sent_target`` in place of the signed target if given."""
    now = dt.datetime.now(dt.UTC)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    body = json.dumps(params).encode()
    parts = urlsplit(url)
    headers = {
        "content-type": "application/x-amz-json-1.0",
        "host": parts.netloc,
        "x-amz-date": amz_date,
    }
    if target is not None:
        headers["x-amz-target"] = f"AmazonSQS.{target}"
    canonical = "\n".join(
        [
            "POST",
            parts.path,
            "",
            "".join(f"{h}:{headers[h]}\n" for h in signed),
            ";".join(signed),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = [scope_day or amz_date[:8], "us-east-1", "sqs", "aws4_request"]
    to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            amz_date,
            "/".join(scope),
            hashlib.sha256(canonical.encode()).hexdigest(),
        ]
    )
    key = ("AWS4" + SECRET).encode()
    for part in scope:
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential={KEY}/{'/'.join(scope)}, "
        f"SignedHeaders={';'.join(signed)}, Signature={signature}"
    )
    if sent_target is not None:
        headers["x-amz-target"] = f"AmazonSQS.{sent_target}"
    headers.pop("host")  # urllib sends the same Host itself
    return send_raw(url, body, headers)


FULL = ["content-type", "host", "x-amz-date", "x-amz-target"]


@pytest.fixture
def url(live_server: Any, sqs_settings: Any) -> str:
    mq.create_queue("orders")
    mq.send("orders", "keep")
    return f"{live_server.url}/sqs"


def test_the_signer_here_is_right(url: str) -> None:
    status, body = signed_request(url, "ListQueues", {}, FULL)
    assert status == 200, body


@pytest.mark.parametrize("left_out", ["x-amz-target", "host", "x-amz-date"])
def test_a_signature_must_cover_the_deciding_headers(url: str, left_out: str) -> None:
    signed = [h for h in FULL if h != left_out]
    status, body = signed_request(url, "ListQueues", {}, signed)
    assert status == 403 and b"SignatureDoesNotMatch" in body, body


def test_a_signed_read_cannot_be_replayed_as_a_purge(url: str) -> None:
    signed = ["content-type", "host", "x-amz-date"]  # X-Amz-Target left unsigned
    params = {"QueueUrl": "orders", "AttributeNames": ["All"]}
    status, body = signed_request(
        url, "GetQueueAttributes", params, signed, sent_target="PurgeQueue"
    )
    assert status == 403, body
    assert mq.stats("orders").counts["active"] == 1


def test_the_signed_headers_must_be_sorted(url: str) -> None:
    status, body = signed_request(
        url, "ListQueues", {}, ["host", "content-type", "x-amz-date", "x-amz-target"]
    )
    assert status == 403 and b"SignatureDoesNotMatch" in body, body


def test_the_credential_scope_must_be_the_day_of_x_amz_date(url: str) -> None:
    yesterday = (dt.datetime.now(dt.UTC) - dt.timedelta(days=1)).strftime("%Y%m%d")
    status, body = signed_request(url, "ListQueues", {}, FULL, scope_day=yesterday)
    assert status == 403 and b"SignatureDoesNotMatch" in body, body
