"""Sending with a unique key over HTTP: the engine's rule, translated."""

from __future__ import annotations

from typing import Any

import django_mqlite as mq

from .conftest import error, url


def test_a_held_key_returns_the_holders_seq(api: Any, q: str) -> None:
    path = url(f"queues/{q}/messages/")
    first = api.post(path, {"body": 1, "unique_key": "k"}, format="json")
    assert first.status_code == 201
    again = api.post(path, {"body": 2, "unique_key": "k", "on_conflict": "skip"}, format="json")
    assert again.status_code == 201
    assert again.json() == first.json()
    many = api.post(
        path, {"messages": [{"body": 3, "unique_key": "k"}, {"body": 4}]}, format="json"
    )
    assert many.json()["seqs"][0] == first.json()["seq"]
    assert len(mq.peek(q, limit=10)) == 2


def test_bad_unique_key_or_policy_is_400_and_writes_nothing(api: Any, q: str) -> None:
    path = url(f"queues/{q}/messages/")
    for body in (
        {"body": 1, "unique_key": "k" * 201},
        {"body": 1, "unique_key": 5},
        {"body": 1, "unique_key": "k", "on_conflict": "overwrite"},
        {"body": 1, "on_conflict": "skip"},
    ):
        assert api.post(path, body, format="json").status_code == 400, body
    error(
        api.post(path, {"body": 1, "on_conflict": "skip"}, format="json"), 400, "invalid_argument"
    )
    assert mq.peek(q, limit=10) == []


def test_replace_and_debounce_on_the_wire(api: Any, q: str) -> None:
    path = url(f"queues/{q}/messages/")
    first = api.post(path, {"body": 1, "unique_key": "k"}, format="json").json()["seq"]
    r = api.post(path, {"body": 2, "unique_key": "k", "on_conflict": "replace"}, format="json")
    assert (r.status_code, r.json()["seq"]) == (201, first)
    r = api.post(
        path, {"body": 3, "unique_key": "k", "on_conflict": "debounce", "delay": 60}, format="json"
    )
    assert (r.status_code, r.json()["seq"]) == (201, first)
    (p,) = mq.peek(q)
    assert (p.body, p.state) == (b"3", "scheduled")


def test_replacing_a_locked_holder_is_409(api: Any, q: str) -> None:
    path = url(f"queues/{q}/messages/")
    api.post(path, {"body": 1, "unique_key": "k"}, format="json")
    (_held,) = mq.receive(q)
    r = api.post(path, {"body": 2, "unique_key": "k", "on_conflict": "replace"}, format="json")
    error(r, 409, "already_exists")
    assert mq.peek(q)[0].body == b"1"


def test_a_pending_key_on_the_wire(api: Any, q: str) -> None:
    path = url(f"queues/{q}/messages/")
    send = {"body": 1, "unique_key": "k", "unique_while": "pending"}
    first = api.post(path, send, format="json").json()["seq"]
    assert api.post(path, send, format="json").json()["seq"] == first
    (_running,) = mq.receive(q)
    second = api.post(path, send, format="json")
    assert second.status_code == 201 and second.json()["seq"] != first
    many = api.post(path, {"messages": [send, {**send, "body": 2}]}, format="json")
    assert many.json()["seqs"] == [second.json()["seq"]] * 2


def test_a_bad_window_is_400_and_writes_nothing(api: Any, q: str) -> None:
    path = url(f"queues/{q}/messages/")
    for body in (
        {"body": 1, "unique_key": "k", "unique_while": "running"},
        {"body": 1, "unique_while": "pending"},
        {"messages": [{"body": 1}, {"body": 2, "unique_key": "k", "unique_while": 3}]},
    ):
        error(api.post(path, body, format="json"), 400, "invalid_argument")
    assert mq.peek(q, limit=10) == []
