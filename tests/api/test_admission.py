"""The HTTP API under the engine's admission: what no reader could render is a 400
``invalid_argument`` at the send, before anything is written."""

from __future__ import annotations

import base64
from typing import Any

import pytest

import django_mqlite as mq
from tests.support.legacy_rows import BAD_ATTRIBUTE_SHAPES

from .conftest import error, url

SURROGATE_JSON = b'{"x": "\\ud800"}'


def send(api: Any, q: str, message: dict[str, Any]) -> Any:
    return api.post(url(f"queues/{q}/messages/"), message, format="json")


@pytest.mark.parametrize(
    "raw",
    [SURROGATE_JSON, b"[" * 100_000 + b"]" * 100_000, b"[NaN]"],
    ids=["surrogate", "deep", "nan"],
)
def test_body_base64_labelled_json_must_be_strict_json(api: Any, q: str, raw: bytes) -> None:
    body = {"body_base64": base64.b64encode(raw).decode(), "content_type": "application/json"}
    error(send(api, q, body), 400, "invalid_argument")
    batch = {"messages": [{"body": 1}, body]}
    error(send(api, q, batch), 400, "invalid_argument")
    assert mq.peek(q) == []


@pytest.mark.parametrize("shape", BAD_ATTRIBUTE_SHAPES)
def test_properties_that_are_not_valid_sqs_attributes_are_400(
    api: Any, q: str, shape: dict[str, Any]
) -> None:
    error(send(api, q, {"body": 1, "properties": {"x": shape}}), 400, "invalid_argument")
    assert mq.peek(q) == []


def test_a_nul_in_properties_is_400(api: Any, q: str) -> None:
    error(send(api, q, {"body": 1, "properties": {"x": "a\x00b"}}), 400, "invalid_argument")
    error(send(api, q, {"body": 1, "properties": {"a\x00": 1}}), 400, "invalid_argument")
    assert mq.peek(q) == []
