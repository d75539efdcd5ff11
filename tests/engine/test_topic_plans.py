"""The planned publish: one statement guarded by the topic's version, re-planned when
the topic or a subscribed queue changed (in this process or another), and the topic
counters it keeps (published per topic, copies per subscription)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq
from django_mqlite.engine import fanout
from django_mqlite.engine.dialects import dialect_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def topic() -> str:
    mq.create_topic("ev")
    for q in ("a", "b"):
        mq.create_queue(q)
        mq.subscribe("ev", q, {"subject": {"prefix": "x"}} if q == "b" else None)
    return "ev"


def test_a_planned_publish_is_one_statement(topic: str) -> None:
    assert mq.publish(topic, 1, subject="x1") == 2  # plans
    with transaction.atomic(), CaptureQueriesContext(connection) as seen:
        assert mq.publish(topic, 2, subject="x2") == 2
        assert mq.publish(topic, 3, subject="y") == 1
    sqls = [q["sql"] for q in seen.captured_queries]
    writes = [q for q in sqls if "mqlite_" in q and not q.startswith("PREPARE")]
    # PostgreSQL: the copies, their totals, the topic's counters and NOTIFY in one; SQLite
    # (no writable CTE): the copies, then the counters; MariaDB (no writable CTE, writers
    # side by side): the topic's row locked shared first.
    d = dialect_for(connection.alias)
    per_publish = 1 if d.writable_cte else 3 if d.concurrent_writers else 2
    assert len(writes) == 2 * per_publish, writes
    assert [m.body for m in mq.peek("a")] == [b"1", b"2", b"3"]
    assert [m.body for m in mq.peek("b")] == [b"1", b"2"]


def test_a_change_in_another_process_makes_the_plan_stale(topic: str) -> None:
    assert mq.publish(topic, 1) == 1
    stale = fanout.cached(connection.alias, topic)
    assert stale is not None
    mq.create_queue("c")
    mq.subscribe(topic, "c")
    fanout.remember(connection.alias, topic, stale)  # as another process still has it
    assert mq.publish(topic, 2) == 2  # the guard failed, the publish re-planned
    assert [m.body for m in mq.peek("c")] == [b"2"]
    fresh = fanout.cached(connection.alias, topic)
    assert fresh is not None and fresh.version != stale.version
    # A filter replaced elsewhere: the old plan's filter is not applied.
    mq.subscribe(topic, "c", {"subject": "only"})
    fanout.remember(connection.alias, topic, fresh)
    assert mq.publish(topic, 3) == 1
    assert [m.body for m in mq.peek("c")] == [b"2"]


def test_a_queue_whose_ordering_changes_takes_the_general_send(topic: str) -> None:
    assert mq.publish(topic, 1) == 1
    mq.receive("a")[0].complete()
    plan = fanout.cached(connection.alias, topic)
    mq.update_queue("a", ordering="group_fifo")
    fanout.remember(connection.alias, topic, plan)  # another process's plan
    with pytest.raises(mq.GroupRequiredError):
        mq.publish(topic, 2)  # as mq.send("a", 2) would: nothing written anywhere
    assert mq.peek("a") == [] and mq.peek("b") == []
    assert mq.publish(topic, 3, group_id="g") == 1
    assert [(m.body, m.group_id) for m in mq.peek("a")] == [(b"3", "g")]


def test_a_deleted_topic_is_not_found_with_a_plan(topic: str) -> None:
    mq.publish(topic, 1)
    plan = fanout.cached(connection.alias, topic)
    mq.delete_topic(topic)
    fanout.remember(connection.alias, topic, plan)
    with pytest.raises(mq.TopicNotFoundError):
        mq.publish(topic, 2)
    assert len(mq.peek("a")) == 1


def test_counters(topic: str) -> None:
    mq.publish(topic, 1, subject="x")  # both
    mq.publish(topic, 2, subject="y")  # a only
    mq.publish(topic, 3, message_id="m1")  # a only, by the general send
    with transaction.atomic():
        mq.publish(topic, 4, subject="x")
        transaction.set_rollback(True)  # counts nowhere
    mq.create_topic("empty")
    mq.publish("empty", 5)
    totals = mq.topic_totals()
    assert totals["ev"] == {"published": 3, "delivered": {"a": 3, "b": 1}}
    assert totals["empty"] == {"published": 1, "delivered": {}}
    mq.unsubscribe(topic, "b")
    assert mq.topic_totals()["ev"]["delivered"] == {"a": 3}
    mq.subscribe(topic, "b")
    assert mq.topic_totals()["ev"]["delivered"] == {"a": 3, "b": 0}
    mq.delete_queue("a", force=True)
    assert mq.topic_totals()["ev"] == {"published": 3, "delivered": {"b": 0}}
    mq.delete_topic(topic)
    assert "ev" not in mq.topic_totals()
    with connection.cursor() as c:
        c.execute("SELECT count(*) FROM mqlite_topic_totals WHERE queue_id <> 0")
        assert c.fetchone()[0] == 0


def test_a_plan_is_read_afresh_after_its_ttl(topic: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert mq.publish(topic, 1) == 1
    mq.create_queue("c")
    with connection.cursor() as c:  # a change that sets no version (an older release)
        c.execute(
            "INSERT INTO mqlite_subscription (topic_id, queue_id, filter, created_at) "
            "SELECT t.id, q.id, NULL, 0 FROM mqlite_topic t, mqlite_queue q "
            "WHERE t.name = 'ev' AND q.name = 'c'"
        )
    assert mq.publish(topic, 2) == 1  # the plan still holds
    monkeypatch.setattr(fanout, "PLAN_TTL_S", 0.0)
    assert mq.publish(topic, 3) == 2
    assert [m.body for m in mq.peek("c")] == [b"3"]
