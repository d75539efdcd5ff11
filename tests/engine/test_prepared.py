"""The send is a server-side prepared statement on PostgreSQL (engine/prepared.py): one
PREPARE per session, EXECUTE after it, the same stored message as the plain statement,
and off where a session's statements may not be there next time (PgBouncer)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq
from django_mqlite.engine import prepared
from tests.support.features import lacks, requires

pytestmark = pytest.mark.django_db(transaction=True)
prepared_sends = requires("prepare")


def sent(ctx: CaptureQueriesContext) -> list[str]:
    return [
        q["sql"] for q in ctx.captured_queries if q["sql"].startswith(("PREPARE", "EXEC", "WITH"))
    ]


@pytest.fixture
def fresh_session() -> Iterator[None]:
    """A new database session: nothing prepared on it yet."""
    connection.close()
    yield
    connection.close()


@lacks("prepare")
def test_off_where_the_database_has_no_prepare() -> None:
    assert not prepared.enabled("default")
    mq.create_queue("p")
    with CaptureQueriesContext(connection) as ctx:
        mq.send("p", {"n": 1})
    assert not [q["sql"] for q in ctx.captured_queries if q["sql"].startswith("PREPARE")]


@prepared_sends
@pytest.mark.skipif(
    "connection.settings_dict.get('DISABLE_SERVER_SIDE_CURSORS')",
    reason="behind a transaction-pooling PgBouncer the send is never prepared (tested below)",
)
def test_prepared_once_per_session_and_kept_across_rollbacks(fresh_session: None) -> None:
    mq.create_queue("p")
    with CaptureQueriesContext(connection) as ctx:
        first = mq.send("p", {"n": 1})
        with transaction.atomic():
            mq.send("p", {"n": 2})
            transaction.set_rollback(True)  # a rollback does not drop a prepared statement
        third = mq.send("p", {"n": 3})
    got = sent(ctx)
    assert [s.split(" ", 1)[0] for s in got] == ["PREPARE", "EXECUTE", "EXECUTE", "EXECUTE"], got
    assert [m.json() for m in mq.peek("p")] == [{"n": 1}, {"n": 3}]
    assert third > first
    connection.close()  # a new session prepares again
    with CaptureQueriesContext(connection) as ctx:
        mq.send("p", {"n": 4})
    assert [s.split(" ", 1)[0] for s in sent(ctx)] == ["PREPARE", "EXECUTE"]
    assert mq.stats("p").totals["enqueued"] == 3


def _stored(queue: str) -> list[tuple[Any, ...]]:
    return [
        (
            m.body,
            m.subject,
            m.properties,
            m.correlation_id,
            m.reply_to,
            m.content_type,
            m.priority,
            m.state,
            m.expires_at is None,
        )
        for m in mq.peek(queue)
    ]


@prepared_sends
@pytest.mark.skipif(
    "connection.settings_dict.get('DISABLE_SERVER_SIDE_CURSORS')",
    reason="forcing PREPARE through a transaction-pooling PgBouncer is what must not be done",
)
def test_the_prepared_send_stores_what_the_plain_statement_stores(clock: Any) -> None:
    def send_all(queue: str) -> None:
        mq.create_queue(queue, default_ttl=60)
        mq.send(queue, b"\x00\xffbinary")
        mq.send(queue, {"j": [1, 2]}, subject="s", properties={"k": "v", "n": 1},
                correlation_id="c", reply_to="r", content_type="text/x", priority=7)  # fmt: skip
        mq.send(queue, "later", delay=5, ttl=10)

    with override_settings(MQLITE={"PREPARED_STATEMENTS": True}):
        send_all("on")
    with override_settings(MQLITE={"PREPARED_STATEMENTS": False}):
        with CaptureQueriesContext(connection) as ctx:
            send_all("off")
    assert not [s for s in sent(ctx) if s.startswith(("PREPARE", "EXECUTE"))]
    assert _stored("on") == _stored("off")
    assert len(_stored("on")) == 3


@prepared_sends
def test_off_behind_a_transaction_pooler(fresh_session: None) -> None:
    """DISABLE_SERVER_SIDE_CURSORS is Django's setting for a transaction-pooling
    PgBouncer, where the next transaction may run on a session that never saw the
    PREPARE: the send is then the plain statement."""
    mq.create_queue("pooled")
    saved = connection.settings_dict.get("DISABLE_SERVER_SIDE_CURSORS", False)
    connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] = True
    try:
        assert not prepared.enabled("default")
        with CaptureQueriesContext(connection) as ctx:
            mq.send("pooled", "x")
        [statement] = sent(ctx)
        assert statement.startswith("WITH q AS")
        with override_settings(MQLITE={"PREPARED_STATEMENTS": True}):
            assert prepared.enabled("default")  # the explicit setting wins
    finally:
        connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] = saved
    assert [m.text() for m in mq.peek("pooled")] == ["x"]


def test_placeholders_are_numbered_and_counted() -> None:
    name, body, count, call = prepared._compile("t", "SELECT %s, '100%%', %s")
    assert (body, count) == ("SELECT $1, '100%', $2", 2)
    assert call == f"EXECUTE {name}(%s, %s)"
    assert (
        name.startswith("mqlite_t_") and name == prepared._compile("t", "SELECT %s, '100%%', %s")[0]
    )
    assert name != prepared._compile("t", "SELECT %s")[0]


@prepared_sends
@pytest.mark.skipif(
    "connection.settings_dict.get('DISABLE_SERVER_SIDE_CURSORS')",
    reason="behind a transaction-pooling PgBouncer the publish is never prepared",
)
def test_publish_statements_are_bounded_across_subscription_changes(fresh_session: None) -> None:
    # Each subscription set is its own publish text: without the bound every change
    # leaves one more statement prepared on the session for good.
    changes = prepared.PER_LABEL * 2
    mq.create_topic("t")
    for i in range(changes + 1):
        mq.create_queue(f"q{i}")
    mq.subscribe("t", "q0")

    def held() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'mqlite_publish%%'"
            )
            return int(cursor.fetchone()[0])

    for n in range(changes):
        mq.subscribe("t", f"q{n + 1}")  # one more subscription: a new publish text
        mq.publish("t", {"n": n})  # plans it
        mq.publish("t", {"n": n})  # runs the plan: prepared
    assert held() == prepared.PER_LABEL
    assert len(mq.peek("q0", limit=1000)) == changes * 2
