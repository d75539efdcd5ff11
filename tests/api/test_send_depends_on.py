"""Sending with ``depends_on`` over HTTP: seqs, ``{"queue", "seq"}`` and ``{"batch"}``
translated to the Python API's references; the engine's rules, unchanged
(``engine/dependencies.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq

from .conftest import error, url


def state(queue: str, seq: int) -> str | None:
    found = [p for p in mq.peek(queue, limit=100) if p.seq == seq]
    return found[0].state if found else None


@pytest.fixture
def up(make_queue: Any) -> str:
    return make_queue("up").name


def test_every_form_waits_and_the_last_completion_releases(api: Any, q: str, up: str) -> None:
    a, b = mq.send(up, "a"), mq.send(up, "b")
    with mq.batch() as batch:
        batch.send(up, "c")
    body = {"body": 1, "depends_on": [a, {"queue": up, "seq": b}, {"batch": batch.id}]}
    r = api.post(url(f"queues/{q}/messages/"), body, format="json")
    assert r.status_code == 201, r.json()
    seq = r.json()["seq"]
    assert state(q, seq) == "waiting"
    for m in mq.receive(up, max_messages=3):
        assert state(q, seq) == "waiting"
        m.complete()
    assert state(q, seq) == "active"


def test_send_many_carries_depends_on_per_message(api: Any, q: str, up: str) -> None:
    a = mq.send(up, "a")
    body = {"messages": [{"body": 1}, {"body": 2, "depends_on": [a]}]}
    r = api.post(url(f"queues/{q}/messages/"), body, format="json")
    first, second = r.json()["seqs"]
    assert (state(q, first), state(q, second)) == ("active", "waiting")
    (m,) = mq.receive(up)
    m.reject("Bad")
    assert state(q, second) == "dead_lettered"
    (dead,) = mq.peek(q, state="dead_lettered")
    assert dead.dead_letter_reason == "DependencyFailed"


@pytest.mark.parametrize(
    "depends_on",
    [
        "1",
        [],
        [True],
        [1.5],
        [0],
        ["7"],
        [10**12],  # no such message
        [{"seq": 1}],
        [{"queue": "up", "seq": "1"}],
        [{"queue": 5, "seq": 1}],
        [{"queue": "up", "seq": 1, "extra": 1}],
        [{"batch": "1"}],
        [{"batch": 10**12}],  # no such batch
        [{"queue": "no-such-queue", "seq": 1}],
        [{"queue": "bad name!", "seq": 1}],
        [None],
    ],
)
def test_bad_depends_on_is_400_with_a_code_and_writes_nothing(
    api: Any, q: str, up: str, depends_on: Any
) -> None:
    mq.send(up, "a")
    path = url(f"queues/{q}/messages/")
    r = api.post(path, {"body": 1, "depends_on": depends_on}, format="json")
    error(r, 400, "invalid_argument")
    many = api.post(
        path, {"messages": [{"body": 0}, {"body": 1, "depends_on": depends_on}]}, format="json"
    )
    error(many, 400, "invalid_argument")
    assert mq.peek(q) == []


def test_a_dependency_on_a_message_node_named_as_a_batch_is_refused(
    api: Any, q: str, up: str
) -> None:
    a = mq.send(up, "a")
    mq.send(q, "first", depends_on=[a])  # gives a its own node
    with connection.cursor() as c:
        c.execute("SELECT id FROM mqlite_batch WHERE seq = %s", [a])
        (node,) = c.fetchone()
    r = api.post(
        url(f"queues/{q}/messages/"), {"body": 1, "depends_on": [{"batch": node}]}, format="json"
    )
    error(r, 400, "invalid_argument")


def test_the_schema_describes_depends_on(api: Any) -> None:
    schema = api.get(url("schema/"), HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    props = schema["components"]["schemas"]["OutMessageRequest"]["properties"]
    assert props["depends_on"]["type"] == "array"
