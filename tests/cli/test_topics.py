"""``manage.py mqlite topics|create-topic|delete-topic|subscribe|unsubscribe|publish``."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

import django_mqlite as mq
from tests.support.cli_helpers import mqlite, mqlite_json

pytestmark = pytest.mark.django_db


def test_topics_from_the_command_line() -> None:
    mq.create_queue("a")
    mq.create_queue("b")
    assert "no topics" in mqlite("topics")
    assert "created topic 'events'" in mqlite("create-topic", "events")
    mqlite("subscribe", "events", "a")
    mqlite("subscribe", "events", "b", "--filter", '{"subject": "paid"}')
    listed = mqlite("topics")
    assert "-> a: every message" in listed and '-> b: {"subject": "paid"}' in listed
    assert mqlite_json("publish", "events", "x", "--subject", "paid") == {"reached": 2}
    assert mqlite_json("publish", "events", "x", "--properties", '{"k": 1}') == {"reached": 1}
    assert [m.text() for m in mq.peek("b")] == ["x"]
    assert mqlite_json("unsubscribe", "events", "a") == {"unsubscribed": True}
    assert [s["queue"] for s in mqlite_json("topics")[0]["subscriptions"]] == ["b"]
    mqlite("delete-topic", "events")
    assert mq.list_topics() == []


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["publish", "nope", "x"], "does not exist"),
        (["subscribe", "events", "a", "--filter", "{bad"], "not JSON"),
        (["subscribe", "events", "a", "--filter", '{"x": 1}'], "filter"),
        (["create-topic", "events"], "exists"),
        (["publish", "events", "x", "--properties", "[1]"], "properties"),
    ],
)
def test_bad_input_is_a_command_error(args: list[str], match: str) -> None:
    mq.create_queue("a")
    mq.create_topic("events")
    with pytest.raises(CommandError, match=match):
        mqlite(*args)
    assert mq.get_topic("events").subscriptions == []
