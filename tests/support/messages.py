"""Hypothesis strategies for messages any surface may be asked to write, hostile values
included: lone surrogates, NUL, escape sequences, deep and non-finite JSON, odd content
types, SQS attribute shapes valid and not, big-ish bodies. ``messages()`` draws one
message's fields; ``unique`` makes its message_id and group_id unique before a write.
Used by the cross-surface test (``tests/surfaces``) and the publish admission test."""

from __future__ import annotations

import base64
import itertools
import json
from typing import Any

from hypothesis import strategies as st

_unique = itertools.count(1)

HOSTILE = ["\ud800", "\udfff", "\x00", "a\x00b", "\x1b[2J", "é", "😀", "\\ud800", "\u2028", " "]
texts = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.characters(exclude_categories=()), max_size=12),
)
json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    texts,
)
json_values = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


def nested(levels: int) -> Any:
    value: Any = 0
    for _ in range(levels):
        value = [value]
    return value


deep_values = st.integers(60, 70).map(nested)
content_types = st.sampled_from(
    [
        None,
        "application/json",
        "application/vnd.x+json",
        "APPLICATION/JSON; charset=UTF-8",
        "text/plain",
        "text/plain; charset=latin-1",
        "application/octet-stream",
        "text/\ud800",
        "a\x00b",
        "x" * 300,
    ]
)


def raw_json(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8", "surrogatepass")


raw_bodies = st.one_of(
    st.binary(max_size=64),
    json_values.map(raw_json),
    deep_values.map(raw_json),
    st.sampled_from(
        [
            b'{"x": "\\ud800"}',
            b"NaN",
            b"[1e400]",
            b"[" * 100_000 + b"]" * 100_000,
            b"\x1b[2J\x00",
            b"y" * 300_000,
        ]
    ),
)
sqs_attributes = st.dictionaries(
    st.sampled_from(["a", "b", "bad name", "AWS.x"]),
    st.one_of(
        st.builds(lambda t: {"DataType": "String", "StringValue": t}, texts),
        st.builds(
            lambda n: {"DataType": "Number", "StringValue": n},
            st.sampled_from(["1", "-2.5", "Infinity", "x"]),
        ),
        st.builds(lambda b: {"DataType": "Binary", "BinaryValue": b}, st.binary(max_size=8)),
    ),
    max_size=3,
)
attribute_shapes = st.one_of(
    st.builds(lambda t: {"DataType": "String", "StringValue": t}, texts),
    st.builds(lambda t: {"DataType": "String.x", "StringListValues": [t]}, texts),
    st.builds(
        lambda b: {"DataType": "Binary", "BinaryValue": base64.b64encode(b).decode()},
        st.binary(max_size=8),
    ),
    st.sampled_from(
        [
            {"DataType": "String", "StringValue": 123},
            {"DataType": "Binary", "BinaryValue": "not base64!"},
            {"DataType": "String", "StringListValues": [1, 2]},
            {"DataType": "Number", "StringValue": "NaN"},
            {"DataType": "Number", "StringValue": "12.5"},
        ]
    ),
)
properties = st.one_of(
    st.none(),
    st.dictionaries(texts, json_values, max_size=3),
    st.dictionaries(st.sampled_from(["a", "b", "AWS.TraceHeader"]), attribute_shapes, max_size=2),
    st.just({"deep": nested(20)}),
)


@st.composite
def messages(draw: Any) -> dict[str, Any]:
    """One message's fields, for any surface. message_id and group_id are made unique
    at write time (a shared group would hold its line; dedup is tested elsewhere)."""
    kind = draw(st.sampled_from(["value", "text", "raw"]))
    body = {"value": json_values, "text": texts, "raw": raw_bodies}[kind]
    return {
        "body": draw(body | deep_values if kind == "value" else body),
        "content_type": draw(content_types) if kind != "value" else draw(st.none() | content_types),
        "properties": draw(properties),
        "subject": draw(st.none() | texts),
        "message_id": draw(st.none() | texts),
        "group_id": draw(st.none() | texts),
    }


def unique(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` without those drawn as None (the body kept), message_id and group_id
    prefixed with a number no other call of this process gets."""
    out = {k: v for k, v in fields.items() if v is not None or k == "body"}
    n = next(_unique)
    for key in ("message_id", "group_id"):
        if key in out:
            out[key] = f"{key[0]}{n}-{out[key]}"
    return out
