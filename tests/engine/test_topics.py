"""Topics: fan-out counts, copies are ordinary messages of their queues, the outbox (a
rolled-back publish reaches nobody), deleted queues, declared topics, bad input."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection, transaction

import django_mqlite as mq
from django_mqlite.engine import wakeup

pytestmark = pytest.mark.django_db


def rows() -> int:
    with connection.cursor() as c:
        c.execute("SELECT count(*) FROM mqlite_message")
        return int(c.fetchone()[0])


@pytest.fixture
def fanout() -> list[str]:
    mq.create_topic("events")
    names = [f"sub{i}" for i in range(5)]
    for name in names:
        mq.create_queue(name)
        mq.subscribe("events", name)
    return names


def test_a_publish_reaches_every_subscribed_queue(fanout: list[str]) -> None:
    mq.create_queue("bystander")
    assert mq.publish("events", {"k": 1}, subject="s", properties={"p": 2}) == 5
    seqs = set()
    for name in fanout:
        (m,) = mq.receive(name, max_messages=5)
        assert (m.json(), m.subject, m.properties) == ({"k": 1}, "s", {"p": 2})
        assert m.content_type == "application/json"
        seqs.add(m.seq)
        assert mq.stats(name).totals["enqueued"] == 1
    assert len(seqs) == 5  # each copy is a message of its own
    assert mq.receive("bystander") == []


def test_a_topic_without_subscriptions_reaches_nobody() -> None:
    mq.create_topic("quiet")
    assert mq.publish("quiet", "x") == 0
    assert rows() == 0


def test_a_rolled_back_publish_reaches_nobody(fanout: list[str]) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        assert mq.publish("events", "x") == 5
        assert rows() == 5
        raise RuntimeError
    assert rows() == 0
    assert all(mq.stats(n).totals["enqueued"] == 0 for n in fanout)


def test_a_committed_publish_wakes_each_queue_once(
    fanout: list[str], django_capture_on_commit_callbacks: Any
) -> None:
    before = wakeup.generations(fanout)
    with django_capture_on_commit_callbacks(execute=True):
        mq.publish("events", "a")
        mq.publish("events", "b")
        assert wakeup.generations(fanout) == before  # nothing before the commit
    assert wakeup.generations(fanout) == {n: g + 1 for n, g in before.items()}


def test_counters_add_up_with_sends_in_one_transaction(fanout: list[str]) -> None:
    with transaction.atomic():
        mq.send("sub0", "before")
        mq.publish("events", "x")
        mq.send("sub0", "after")
        mq.publish("events", "y")
    assert mq.stats("sub0").totals["enqueued"] == 4
    assert mq.stats("sub1").totals["enqueued"] == 2


def test_copies_follow_their_queues_rules() -> None:
    mq.create_topic("t")
    mq.create_queue("plain")
    mq.create_queue("short", default_ttl=5)
    mq.create_queue("lines", ordering="strict_fifo")
    mq.create_queue("grouped", ordering="group_fifo")
    for name in ("plain", "short", "lines"):
        mq.subscribe("t", name)
    assert mq.publish("t", "one", priority=3, delay=0) == 3
    assert mq.publish("t", "two") == 3
    first = mq.receive("lines", max_messages=2)
    assert [m.text() for m in first] == ["one"]  # strict FIFO: one in flight
    assert mq.peek("short")[0].expires_at is not None
    assert mq.peek("plain")[0].expires_at is None
    mq.subscribe("t", "grouped")
    with pytest.raises(mq.GroupRequiredError):
        mq.publish("t", "three")  # the general send's rule, and nothing written
    assert rows() == 6
    assert mq.publish("t", "four", group_id="g") == 4


def test_a_duplicate_publish_is_deduplicated_per_queue(fanout: list[str]) -> None:
    assert mq.publish("events", "x", message_id="m-1") == 5
    assert mq.publish("events", "x", message_id="m-1") == 5
    assert rows() == 5
    with pytest.raises(mq.DedupConflictError):
        mq.publish("events", "other body", message_id="m-1")
    assert rows() == 5


def test_filters_choose_the_queues(fanout: list[str]) -> None:
    mq.subscribe("events", "sub0", {"subject": "order.paid"})
    mq.subscribe("events", "sub1", {"properties.total": {"gte": 100}})
    mq.subscribe("events", "sub2", {"not": {"subject": {"prefix": "order."}}})
    assert mq.publish("events", "a", subject="order.paid", properties={"total": 5}) == 3
    assert mq.publish("events", "b", subject="user.new", properties={"total": 500}) == 4
    assert mq.publish("events", "c") == 3
    assert [len(mq.peek(n, limit=10)) for n in fanout] == [1, 1, 2, 3, 3]


def test_a_deleted_queues_subscription_goes_with_it(fanout: list[str]) -> None:
    mq.publish("events", "x")
    mq.delete_queue("sub0", force=True)
    assert [s.queue for s in mq.get_topic("events").subscriptions] == fanout[1:]
    assert mq.publish("events", "y") == 4
    mq.create_queue("sub0")  # the same name later: not subscribed
    assert mq.publish("events", "z") == 4
    assert mq.peek("sub0") == []


def test_unsubscribe_and_delete_topic(fanout: list[str]) -> None:
    assert mq.unsubscribe("events", "sub0") is True
    assert mq.unsubscribe("events", "sub0") is False
    assert mq.publish("events", "x") == 4
    mq.delete_topic("events")
    with pytest.raises(mq.TopicNotFoundError):
        mq.publish("events", "y")
    assert mq.list_topics() == []
    assert mq.get_queue("sub0").name == "sub0"  # the queues stay


def test_subscribe_replaces_the_filter(fanout: list[str]) -> None:
    mq.subscribe("events", "sub0", {"subject": "a"})
    sub = mq.subscribe("events", "sub0", {"subject": "b"})
    assert sub.filter == {"subject": "b"}
    (found,) = [s for s in mq.get_topic("events").subscriptions if s.queue == "sub0"]
    assert found.filter == {"subject": "b"}
    assert mq.publish("events", "x", subject="a") == 4


BAD_CALLS: list[tuple[str, Any, type[Exception]]] = [
    ("unknown topic", lambda: mq.publish("nope", "x"), mq.TopicNotFoundError),
    ("bad topic name", lambda: mq.publish("no pe", "x"), mq.InvalidArgumentError),
    ("bad body", lambda: mq.publish("events", {"x": float("nan")}), mq.InvalidArgumentError),
    ("bad properties", lambda: mq.publish("events", "x", properties=[1]), mq.InvalidArgumentError),
    ("bad subject", lambda: mq.publish("events", "x", subject=""), mq.InvalidArgumentError),
    ("too large", lambda: mq.publish("events", b"x" * (1024 * 1024 + 1)), mq.MessageTooLargeError),
    ("subscribe unknown topic", lambda: mq.subscribe("nope", "sub0"), mq.TopicNotFoundError),
    ("subscribe unknown queue", lambda: mq.subscribe("events", "nope"), mq.QueueNotFoundError),
    (
        "subscribe bad filter",
        lambda: mq.subscribe("events", "sub0", {"x": 1}),
        mq.InvalidArgumentError,
    ),
    ("unsubscribe unknown topic", lambda: mq.unsubscribe("nope", "sub0"), mq.TopicNotFoundError),
    ("delete unknown topic", lambda: mq.delete_topic("nope"), mq.TopicNotFoundError),
    ("topic exists", lambda: mq.create_topic("events"), mq.TopicExistsError),
    ("bad new topic name", lambda: mq.create_topic("a/b"), mq.InvalidArgumentError),
]


@pytest.mark.parametrize(("what", "call", "error"), BAD_CALLS, ids=[b[0] for b in BAD_CALLS])
def test_bad_input_is_a_typed_error_and_writes_nothing(
    fanout: list[str], what: str, call: Any, error: type[Exception]
) -> None:
    before = mq.get_topic("events")
    with pytest.raises(error):
        call()
    assert rows() == 0
    assert mq.get_topic("events") == before
    assert [t.name for t in mq.list_topics()] == ["events"]


def test_declared_topics_are_created_by_migrate(settings: Any) -> None:
    settings.MQLITE = {
        **settings.MQLITE,
        "QUEUES": {"billing": {}, "shipping": {}},
        "TOPICS": {
            "orders": {"subscriptions": {"billing": {"subject": "paid"}, "shipping": None}},
        },
    }
    call_command("migrate", verbosity=0)
    topic = mq.get_topic("orders")
    assert [(s.queue, s.filter) for s in topic.subscriptions] == [
        ("billing", {"subject": "paid"}),
        ("shipping", None),
    ]
    call_command("migrate", verbosity=0)  # again: nothing changes
    assert mq.get_topic("orders") == topic
    assert mq.publish("orders", "x", subject="paid") == 2


def test_a_bad_declaration_is_refused(settings: Any) -> None:
    from django_mqlite.engine.declared_topics import sync_declared

    with pytest.raises(mq.InvalidArgumentError):
        sync_declared({"orders": {"subscribers": {}}})
    with pytest.raises(mq.InvalidArgumentError):
        sync_declared({"orders": {"subscriptions": {"q": {"bad": 1}}}})
