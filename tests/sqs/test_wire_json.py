"""The JSON protocol's body: nesting deeper than any SQS shape is refused before the
parser runs (it would recurse to the interpreter's limit, where whatever else runs at
that depth, a garbage collection's finalizers, fails too); SQS's own shapes parse."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import RequestFactory

from django_mqlite.sqs import wire_json
from django_mqlite.sqs.errors import SQSError

HEADERS = {"HTTP_X_AMZ_TARGET": "AmazonSQS.SendMessageBatch"}


def _parse(body: bytes) -> tuple[str, dict[str, Any]]:
    request = RequestFactory().post("/", data=body, content_type=wire_json.CONTENT_TYPE, **HEADERS)
    return wire_json.parse(request, body)


def test_a_batch_with_attributes_parses() -> None:
    entry = {
        "Id": "1",
        "MessageBody": "[[[[x]]]]",
        "MessageAttributes": {"a": {"DataType": "String", "StringValue": "{[{"}},
    }
    op, params = _parse(json.dumps({"QueueUrl": "q", "Entries": [entry]}).encode())
    assert op == "SendMessageBatch" and params["Entries"][0]["MessageBody"] == "[[[[x]]]]"


@pytest.mark.parametrize("depth", [wire_json.MAX_DEPTH + 1, 100_000])
def test_a_body_nested_deeper_than_any_sqs_shape_is_refused_unparsed(
    depth: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    def parser(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("parsed a body nested too deeply")

    monkeypatch.setattr(wire_json.json, "loads", parser)
    with pytest.raises(SQSError) as refused:
        _parse(b'{"a": ' + b"[" * depth + b"]" * depth + b"}")
    assert refused.value.code == "SerializationException"


def test_at_the_bound_it_parses() -> None:
    depth = wire_json.MAX_DEPTH - 1  # plus the object around it
    _, params = _parse(b'{"a": ' + b"[" * depth + b"]" * depth + b"}")
    assert "a" in params
