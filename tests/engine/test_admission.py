"""Admission (engine/admission.py): what may be stored as a message, refused before
anything is written, on every database; and settlement diagnostics made storable."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.engine.admission import MAX_PROPERTIES_DEPTH
from django_mqlite.engine.rendering import MAX_JSON_DEPTH

pytestmark = pytest.mark.django_db

JSON = "application/json"
SURROGATE_JSON = b'{"x": "\\ud800"}'


def deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def refused(q: str, body: Any, **options: Any) -> str:
    with pytest.raises(mq.InvalidArgumentError) as info:
        mq.send(q, body, **options)
    assert mq.peek(q) == []
    return str(info.value)


# -- item 4: a body labelled JSON is strict JSON -----------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        SURROGATE_JSON,
        b'["\\uDFFF"]',
        b'"\\ud83d"',  # a high surrogate with no low one after it
        b"NaN",
        b'{"x": -Infinity}',
        b"[1e400]",
        b"{bad",
        b"",
        b"\xff\xfe",
        b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1),
        b"[" * 100_000 + b"]" * 100_000,
    ],
    ids=lambda raw: raw[:16].decode("latin-1"),
)
@pytest.mark.parametrize("content_type", [JSON, "application/vnd.x+json; charset=utf-8"])
def test_a_body_labelled_json_must_be_strict_json(q: str, raw: bytes, content_type: str) -> None:
    refused(q, raw, content_type=content_type)
    with pytest.raises(mq.InvalidArgumentError):
        mq.send_batch(
            q,
            [mq.OutMessage(b"1", content_type=JSON), mq.OutMessage(raw, content_type=content_type)],
        )
    assert mq.peek(q) == []


@pytest.mark.parametrize(
    "value",
    [
        {"x": "\ud800"},
        ["\udfff"],
        {"\ud800": 1},
        deep(MAX_JSON_DEPTH + 1),
        float("nan"),
        [float("inf")],
    ],
    ids=["surrogate", "low-surrogate", "surrogate-key", "deep", "nan", "inf"],
)
def test_a_python_value_must_encode_to_strict_json(q: str, value: Any) -> None:
    refused(q, value)


def test_what_is_accepted(q: str) -> None:
    ok = [
        (deep(MAX_JSON_DEPTH - 1), None),
        ({"emoji": "😀", "literal": "\\ud800", "nul": "\x00"}, None),
        (b'{"pair": "\\ud83d\\ude00", "nul": "\\u0000"}', JSON),
        (b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH, JSON),
        (b"\x00\xff not JSON", "application/octet-stream"),
        (b"NaN", "text/plain"),
        ("héllo", None),
    ]
    seqs = [mq.send(q, body, content_type=ct) for body, ct in ok]
    got = {m.seq: m for m in mq.receive(q, max_messages=10)}
    assert sorted(got) == seqs
    assert got[seqs[2]].body == ok[2][0]  # bytes are stored as given


def test_a_str_body_with_a_lone_surrogate_is_refused(q: str) -> None:
    assert "surrogate" in refused(q, "a\ud800b")
    refused(q, '{"x": "\\ud800"}', content_type=JSON)  # a str labelled JSON is parsed too


# -- item 5, NUL: properties -------------------------------------------------------------


@pytest.mark.parametrize(
    "props",
    [
        {"x": {"DataType": "String", "StringValue": 123}},
        {"x": {"DataType": "Binary", "BinaryValue": "not base64!"}},
        {"x": {"DataType": "String", "StringListValues": [1, 2]}},
        {"x": {"DataType": "Binary", "BinaryListValues": ["AAE=", "%%"]}},
        {"x": {"DataType": "Number", "StringValue": "twelve"}},
        {"x": {"DataType": "Number", "StringValue": "NaN"}},
        {"x": {"DataType": "Date", "StringValue": "2026"}},
        {"x": {"DataType": "String", "StringValue": "a", "BinaryValue": "AAE="}},
        {"x": {"DataType": "String", "BinaryValue": "AAE="}},
        {"x": {"DataType": 5, "StringValue": "a"}},
        {"x": "a\x00b"},
        {"a\x00": 1},
        {"x": ["\ud800"]},
        {"x": float("nan")},
        {"x": deep(MAX_PROPERTIES_DEPTH)},
        {"x": "y" * (64 * 1024)},
        ["not", "a", "dict"],
    ],
)
def test_properties_every_reader_can_render(q: str, props: Any) -> None:
    refused(q, 1, properties=props)


def test_valid_attribute_shapes_and_plain_properties_are_accepted(q: str) -> None:
    props = {
        "s": {"DataType": "String.custom", "StringValue": "a"},
        "n": {"DataType": "Number", "StringValue": "-1.5e3"},
        "b": {"DataType": "Binary", "BinaryValue": "AAE="},
        "l": {"DataType": "String", "StringListValues": ["a", "b"]},
        "plain": {"DataType": "not an attribute without a value key"},
        "nested": {"a": [1, {"b": None}]},
        "deep": deep(MAX_PROPERTIES_DEPTH - 2),
    }
    mq.send(q, 1, properties=props)
    assert mq.receive(q)[0].properties == props


# -- text fields -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field", ["subject", "message_id", "group_id", "correlation_id", "reply_to", "content_type"]
)
@pytest.mark.parametrize("bad", ["a\x00b", "a\ud800"], ids=["nul", "surrogate"])
def test_text_fields_are_valid_unicode_without_nul(q: str, field: str, bad: str) -> None:
    refused(q, b"x", **{field: bad})
    with pytest.raises(mq.InvalidArgumentError):
        mq.send_batch(q, [mq.OutMessage(b"ok"), mq.OutMessage(b"x", **{field: bad})])
    assert mq.peek(q) == []


def test_a_content_type_holds_no_control_character(q: str) -> None:
    refused(q, b"x", content_type="text/plain\r\nX-Injected: 1")


def test_check_message_refuses_what_send_would_and_writes_nothing(q: str) -> None:
    mq.admission.check_message(mq.OutMessage({"a": 1}, properties={"p": "q"}))
    with pytest.raises(mq.InvalidArgumentError):
        mq.admission.check_message(mq.OutMessage(SURROGATE_JSON, content_type=JSON))
    assert mq.peek(q) == []


# -- item 7: settlement diagnostics ------------------------------------------------------


@pytest.mark.parametrize("bad", ["why\ud800", "why\x00"], ids=["surrogate", "nul"])
def test_a_reject_reason_with_a_surrogate_or_nul_settles_readably(q: str, bad: str) -> None:
    mq.send(q, 1)
    (m,) = mq.receive(q)
    m.reject(bad, f"details {bad}")
    m.reject(bad, f"details {bad}")  # the same request again: a replay, not LockLostError
    (dead,) = mq.peek(q, state="dead_lettered")
    assert dead.dead_letter_reason == "why\ufffd"
    assert dead.dead_letter_description == "details why\ufffd"


def test_an_abandon_error_with_a_surrogate_is_kept_readably(q: str) -> None:
    mq.send(q, 1)
    (m,) = mq.receive(q)
    mq.abandon(q, m.seq, m.lock_token or "", error="boom \ud800 \U0001f600")
    (p,) = mq.peek(q)
    assert p.last_error == "boom \ufffd \U0001f600"


@pytest.mark.parametrize("value", [{"x": "a\x00b"}, ["\ud800"]])
def test_a_result_no_reader_could_store_is_refused(value: Any) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        mq.admission.result_json(value)
    with pytest.raises(ValueError):
        mq.admission.result_json(float("nan"))
    assert mq.admission.result_json({"ok": ["é", 1]}) == '{"ok":["\\u00e9",1]}'


def test_the_text_depth_check_agrees_with_a_tree_walk() -> None:
    """``rendering.too_deep`` reads depth off the JSON text (brackets in strings,
    escaped quotes and backslashes included) and must agree with the value's own."""
    import json
    import random

    from django_mqlite.engine.rendering import too_deep

    def depth(x: Any) -> int:
        children = x.values() if isinstance(x, dict) else x if isinstance(x, list) else None
        return 0 if children is None else 1 + max((depth(c) for c in children), default=0)

    rnd = random.Random(7)
    alphabet = '[]{}"\\ab\né'

    def word() -> str:
        return "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 6)))

    def gen(level: int) -> Any:
        k = rnd.random()
        if level > 8 or k < 0.3:
            return word()
        if k < 0.65:
            return [gen(level + 1) for _ in range(rnd.randint(0, 3))]
        return {word(): gen(level + 1) for _ in range(rnd.randint(0, 3))}

    for _ in range(3000):
        value = gen(0)
        d = depth(value)
        for text in (json.dumps(value), json.dumps(value, ensure_ascii=False)):
            for limit in {max(d - 1, 1), max(d, 1)}:
                assert too_deep(text, limit) == (d > limit), (text, limit)
