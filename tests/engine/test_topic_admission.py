"""A publish admits a message exactly as a send does (the same ``admission.admit``):
for any message, hostile values included, a publish is refused with the error a send to
the subscribed queue raises, writing nothing, and otherwise stores what the send stores."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings

import django_mqlite as mq
from tests.support.messages import messages, unique

pytestmark = pytest.mark.django_db(transaction=True)

_n = itertools.count(1)


def outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call()
    except mq.MQLiteError as exc:
        return "refused", exc.code


@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(fields=messages())
@example(fields={"body": 1, "properties": {"a": "\ud800"}})
@example(fields={"body": 1, "properties": {"a": float("nan")}})
@example(fields={"body": 1, "properties": {"a\x00": 1}})
@example(fields={"body": b"[1e400]", "content_type": "application/json"})
@example(fields={"body": "x", "subject": "\udfff"})
def test_a_publish_refuses_what_a_send_refuses(fields: dict[str, Any]) -> None:
    n = next(_n)
    sent, published, topic = f"s{n}", f"p{n}", f"t{n}"
    mq.create_queue(sent)
    mq.create_queue(published)
    mq.create_topic(topic)
    mq.subscribe(topic, published)
    f = unique(fields)
    body = f.pop("body")
    by_send = outcome(lambda: mq.send(sent, body, **f))
    by_publish = outcome(lambda: mq.publish(topic, body, **f))
    assert by_send[0] == by_publish[0], (by_send, by_publish)
    if by_send[0] == "refused":
        assert by_send[1] == by_publish[1]
        assert mq.peek(published) == []
        return
    assert by_publish[1] == 1
    (a,) = mq.peek(sent)
    (b,) = mq.peek(published)
    keep = ("body", "content_type", "subject", "properties", "message_id", "group_id")
    assert {k: getattr(a, k) for k in keep} == {k: getattr(b, k) for k in keep}
