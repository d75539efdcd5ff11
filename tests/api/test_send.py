"""Producing: one, many, body forms, limits; nothing written on error."""

from __future__ import annotations

import base64
import json
from typing import Any

from django.test import override_settings

import django_mqlite as mq

from .conftest import error, url


def peek(q: str) -> list[mq.Peeked]:
    return mq.peek(q, limit=1000)


def test_send_one_json_body(api: Any, q: str) -> None:
    r = api.post(url(f"queues/{q}/messages/"), {"body": {"order": 7}}, format="json")
    assert r.status_code == 201
    (m,) = peek(q)
    assert r.json() == {"seq": m.seq}
    assert m.json() == {"order": 7}
    assert m.content_type == "application/json"


def test_json_string_is_sent_as_text(api: Any, q: str) -> None:
    api.post(url(f"queues/{q}/messages/"), {"body": "hello"}, format="json")
    (m,) = peek(q)
    assert (m.body, m.content_type) == (b"hello", "text/plain; charset=utf-8")


def test_base64_body_is_bytes(api: Any, q: str) -> None:
    raw = b"\x00\xffbin"
    body = {"body_base64": base64.b64encode(raw).decode(), "content_type": "application/x-bin"}
    assert api.post(url(f"queues/{q}/messages/"), body, format="json").status_code == 201
    (m,) = peek(q)
    assert (m.body, m.content_type) == (raw, "application/x-bin")


def test_null_is_a_json_body(api: Any, q: str) -> None:
    api.post(url(f"queues/{q}/messages/"), {"body": None}, format="json")
    assert peek(q)[0].body == b"null"


def test_send_with_options(api: Any, q: str) -> None:
    body = {
        "body": 1,
        "message_id": "m1",
        "group_id": "g",
        "subject": "s",
        "properties": {"k": "v"},
        "correlation_id": "c",
        "reply_to": "r",
        "priority": 5,
        "delay": 60,
        "ttl": 600,
    }
    assert api.post(url(f"queues/{q}/messages/"), body, format="json").status_code == 201
    (m,) = peek(q)
    assert (m.message_id, m.group_id, m.subject, m.priority) == ("m1", "g", "s", 5)
    assert m.properties == {"k": "v"}
    assert m.state == "scheduled"


def test_send_many(api: Any, q: str) -> None:
    msgs = [{"body": i} for i in range(3)]
    r = api.post(url(f"queues/{q}/messages/"), {"messages": msgs}, format="json")
    assert r.status_code == 201
    assert r.json() == {"seqs": [m.seq for m in peek(q)]}


def test_dedup_conflict(api: Any, q: str) -> None:
    path = url(f"queues/{q}/messages/")
    api.post(path, {"body": 1, "message_id": "a"}, format="json")
    error(api.post(path, {"body": 2, "message_id": "a"}, format="json"), 409, "already_exists")
    r = api.post(path, {"messages": [{"body": 3, "message_id": "a"}, {"body": 4}]}, format="json")
    assert r.json()["seqs"][0] == 0
    assert len(peek(q)) == 2


def test_group_required(api: Any, make_queue: Any) -> None:
    make_queue("g", ordering="group_fifo")
    error(api.post(url("queues/g/messages/"), {"body": 1}, format="json"), 400, "group_required")


def test_unknown_queue(api: Any, db: Any) -> None:
    error(api.post(url("queues/nope/messages/"), {"body": 1}, format="json"), 404, "not_found")


def test_body_too_large_writes_nothing(api: Any, q: str) -> None:
    with override_settings(MQLITE={"MAX_BODY_BYTES": 10}):
        error(
            api.post(url(f"queues/{q}/messages/"), {"body": "x" * 11}, format="json"),
            413,
            "message_too_large",
        )
        batch = {"messages": [{"body": 1}, {"body": "y" * 11}]}
        error(
            api.post(url(f"queues/{q}/messages/"), batch, format="json"), 413, "message_too_large"
        )
    assert peek(q) == []


def test_request_too_large_is_refused_before_parsing(api: Any, q: str) -> None:
    with override_settings(MQLITE={"API_MAX_REQUEST_BYTES": 100}):
        body = json.dumps({"body": "x" * 200})
        r = api.post(url(f"queues/{q}/messages/"), body, content_type="application/json")
        error(r, 413, "request_too_large")
    assert peek(q) == []


def test_batch_limit(api: Any, q: str) -> None:
    with override_settings(MQLITE={"API_MAX_BATCH": 2}):
        batch = {"messages": [{"body": i} for i in range(3)]}
        error(api.post(url(f"queues/{q}/messages/"), batch, format="json"), 400, "invalid_argument")
    error(
        api.post(url(f"queues/{q}/messages/"), {"messages": []}, format="json"),
        400,
        "invalid_argument",
    )
    assert peek(q) == []


def test_invalid_messages_write_nothing(api: Any, q: str) -> None:
    path = url(f"queues/{q}/messages/")
    for body in (
        {},
        {"body": 1, "body_base64": "AA=="},
        {"body_base64": "not base64!"},
        {"body": 1, "priority": "high"},
        {"body": 1, "priority": 40000},
        {"body": 1, "delay": -1},
        {"body": 1, "delay": 1, "scheduled_at": "2030-01-01T00:00:00Z"},
        {"body": 1, "message_id": ""},
        {"body": 1, "message_id": "a\u0000b"},
        {"body": 1, "properties": [1]},
        {"body": 1, "properties": {"a": "\u0000"}},
        {"body": 1, "unknown": True},
        {"messages": [{"body": 1}, {"body": 2, "priority": "x"}]},
        {"messages": [{"body": 1}], "extra": 1},
        [1, 2],
        "text",
    ):
        error(api.post(path, body, format="json"), 400, "invalid_argument")
    assert peek(q) == []
