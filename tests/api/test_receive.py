"""Consuming: receive shapes, body decoding, long-poll, modes, attempt ids."""

from __future__ import annotations

import base64
import threading
import time
from typing import Any

import pytest
from django.db import connection
from django.db.backends.signals import connection_created

import django_mqlite as mq
from django_mqlite.api import longpoll
from django_mqlite.engine import claim, wakeup
from tests.support.features import requires
from tests.support.legacy_rows import store_raw

from .conftest import error, url

FIELDS = {
    "seq",
    "lock_token",
    "locked_until",
    "delivery_count",
    "content_type",
    "message_id",
    "group_id",
    "subject",
    "properties",
    "correlation_id",
    "reply_to",
    "priority",
    "enqueued_at",
}


def receive(api: Any, q: str, **body: Any) -> Any:
    return api.post(url(f"queues/{q}/receive/"), body, format="json")


def test_receive_shape(api: Any, q: str) -> None:
    seq = mq.send(q, {"a": 1}, message_id="m", properties={"p": 1})
    r = receive(api, q)
    assert r.status_code == 200
    (m,) = r.json()["messages"]
    assert set(m) == FIELDS | {"body"}
    assert (m["seq"], m["body"], m["message_id"], m["delivery_count"]) == (seq, {"a": 1}, "m", 1)
    assert m["properties"] == {"p": 1}
    assert m["locked_until"].endswith("Z") and m["enqueued_at"].endswith("Z")
    assert m["lock_token"]


@pytest.mark.parametrize(
    ("body", "content_type", "wire"),
    [
        ("héllo", None, {"body": "héllo"}),
        (b"<x/>", "text/xml", {"body": "<x/>"}),
        (b"\xff\xfe", "text/plain", {"body_base64": base64.b64encode(b"\xff\xfe").decode()}),
        (b"\x00\x01", None, {"body_base64": "AAE="}),
        (b'{"a": [1]}', "application/vnd.x+json", {"body": {"a": [1]}}),
        ("x", "text/plain; charset=latin-1", {"body_base64": "eA=="}),
    ],
)
def test_body_on_the_way_out(api: Any, q: str, body: Any, content_type: Any, wire: Any) -> None:
    mq.send(q, body, content_type=content_type)
    (m,) = receive(api, q).json()["messages"]
    assert {k: m[k] for k in ("body", "body_base64") if k in m} == wire


@pytest.mark.parametrize(
    "body",
    [b"{bad", b'{"x": "\\ud800"}', b"NaN", b"[" * 100_000 + b"]" * 100_000],
    ids=["not-json", "lone-surrogate", "nan", "deep"],
)
def test_a_stored_body_that_is_not_strict_json_is_shown_as_base64(
    api: Any, q: str, body: bytes
) -> None:
    """Rows an older version admitted: receive and peek show them as base64, never 500."""
    store_raw(q, body, "application/json")
    r = api.get(url(f"queues/{q}/messages/"))
    assert r.status_code == 200, r.content[:200]
    (m,) = r.json()["messages"]
    assert base64.b64decode(m["body_base64"]) == body and "body" not in m
    (m,) = receive(api, q).json()["messages"]
    assert base64.b64decode(m["body_base64"]) == body and "body" not in m


@requires("json_text")  # jsonb never held a lone surrogate
def test_stored_properties_with_a_lone_surrogate_are_delivered_escaped(api: Any, q: str) -> None:
    store_raw(q, b"x", properties_json='{"k": "\\ud800", "\\udfff": "\u00e9"}')
    r = api.get(url(f"queues/{q}/messages/"))
    assert r.status_code == 200 and b"\\ud800" in r.content
    r = receive(api, q)
    assert r.status_code == 200
    (m,) = r.json()["messages"]
    assert m["properties"] == {"k": "\ud800", "\udfff": "é"}


def test_empty_queue_gives_empty_list(api: Any, q: str) -> None:
    assert receive(api, q).json() == {"messages": []}


def test_empty_body_uses_defaults(api: Any, q: str) -> None:
    mq.send(q, 1)
    r = api.post(url(f"queues/{q}/receive/"))
    assert len(r.json()["messages"]) == 1


def test_max_messages_and_mode(api: Any, q: str) -> None:
    for i in range(3):
        mq.send(q, i)
    r = receive(api, q, max_messages=2, mode="receive_and_delete")
    got = r.json()["messages"]
    assert [m["body"] for m in got] == [0, 1]
    assert got[0]["lock_token"] is None and got[0]["locked_until"] is None
    assert mq.stats(q).counts["active"] == 1


def test_attempt_id_replays(api: Any, q: str) -> None:
    mq.send(q, 1)
    first = receive(api, q, attempt_id="a1").json()
    assert receive(api, q, attempt_id="a1").json() == first


@pytest.mark.parametrize(
    "body",
    [
        {"max_messages": 257},
        {"max_messages": 0},
        {"max_messages": "2"},
        {"wait": 21},
        {"wait": -1},
        {"lock_duration": 0},
        {"mode": "peek"},
        {"attempt_id": ""},
        {"whatever": 1},
    ],
)
def test_invalid_receive(api: Any, q: str, body: Any) -> None:
    mq.send(q, 1)
    error(receive(api, q, **body), 400, "invalid_argument")
    assert mq.stats(q).counts["active"] == 1


def test_unknown_queue(api: Any, db: Any) -> None:
    error(receive(api, "nope"), 404, "not_found")


def test_long_poll_times_out_empty(api: Any, q: str) -> None:
    start = time.monotonic()
    assert receive(api, q, wait=0.3).json() == {"messages": []}
    assert 0.3 <= time.monotonic() - start < 2


@pytest.mark.django_db(transaction=True)
def test_long_poll_returns_as_soon_as_a_message_arrives(
    api: Any, make_queue: Any, monkeypatch: Any
) -> None:
    # No fallback poll inside the wait: only the send's wake-up can end it in time.
    monkeypatch.setattr(claim, "POLL_FIRST_S", 30.0)
    monkeypatch.setattr(claim, "POLL_MAX_S", 30.0)
    make_queue("lp")

    def later() -> None:
        time.sleep(0.3)
        mq.send("lp", "late")
        connection.close()

    t = threading.Thread(target=later)
    start = time.monotonic()
    t.start()
    r = receive(api, "lp", wait=10)
    t.join()
    assert [m["body"] for m in r.json()["messages"]] == ["late"]
    assert time.monotonic() - start < 2


@pytest.mark.django_db(transaction=True)
def test_long_poll_waits_on_one_connection_outside_a_transaction(
    make_queue: Any, monkeypatch: Any
) -> None:
    """No reconnect per poll (a connection storm without a pool), and no transaction
    held while waiting."""
    make_queue("lp")
    opened: list[Any] = []
    in_transaction: list[bool] = []
    real_wait = wakeup.wait

    def wait(queue: str, timeout: float, since: Any = None) -> bool:
        in_transaction.append(connection.in_atomic_block or not connection.get_autocommit())
        return real_wait(queue, timeout, since)

    def on_connect(connection: Any, **kwargs: Any) -> None:
        opened.append(connection)

    monkeypatch.setattr(wakeup, "wait", wait)
    connection_created.connect(on_connect)
    try:
        assert longpoll.receive("lp", wait=0.5) == []
    finally:
        connection_created.disconnect(on_connect)
    assert len(in_transaction) >= 3
    assert not any(in_transaction)
    assert len(opened) <= 1
