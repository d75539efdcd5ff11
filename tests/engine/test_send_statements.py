"""A single send is one statement: on PostgreSQL a CTE (queue lookup, insert, lifetime
counter and NOTIFY), on SQLite an INSERT that resolves the queue, whose trigger adds to
the counter; no savepoint on the common path, one NOTIFY per queue and transaction, and
everything that needs more (dedup, ordered lines, errors) still works."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq
from tests.support.features import has, requires
from tests.support.triggers import triggers

pytestmark = pytest.mark.django_db(transaction=True)

CONTROL = ("BEGIN", "COMMIT", "ROLLBACK")


def statements(ctx: CaptureQueriesContext) -> list[str]:
    """The statements run, less transaction control (BEGIN/COMMIT are not round trips
    of their own on PostgreSQL's client and are not statements of the send)."""
    return [q["sql"] for q in ctx.captured_queries if not q["sql"].startswith(CONTROL)]


def expected_count() -> int:
    return 1


@pytest.fixture(autouse=True)
def prepared_once() -> None:
    """On PostgreSQL the send is prepared once per session (engine/prepared.py): send
    once with and once without a NOTIFY first, so the counts below are the steady ones."""
    mq.create_queue("warm-up")
    with transaction.atomic():
        mq.send("warm-up", "a")
        mq.send("warm-up", "b")


def is_notify(sql: str) -> bool:
    return "pg_notify" in sql or sql.startswith("EXECUTE mqlite_send_notify_")


def test_send_in_autocommit_is_one_statement() -> None:
    mq.create_queue("one")
    with CaptureQueriesContext(connection) as ctx:
        seq = mq.send("one", {"a": 1})
    sql = statements(ctx)
    assert len(sql) == expected_count(), sql
    assert not any("SAVEPOINT" in s for s in sql)
    [m] = mq.peek("one")
    assert (m.seq, m.state, m.json()) == (seq, "active", {"a": 1})
    assert mq.stats("one").totals["enqueued"] == 1


def test_sends_in_a_transaction_need_no_savepoint_and_notify_once() -> None:
    mq.create_queue("one")
    mq.create_queue("two")
    with CaptureQueriesContext(connection) as ctx, transaction.atomic():
        mq.send("one", "a")
        mq.send("one", "b")
        mq.send("two", "c")
    sql = statements(ctx)
    assert len(sql) == 3 * expected_count(), sql
    assert not any("SAVEPOINT" in s for s in sql)
    if has("listen_notify"):
        notifies = [s for s in sql if is_notify(s)]
        assert len(notifies) == 2, sql  # one per queue, not one per send
    assert mq.stats("one").totals["enqueued"] == 2 and mq.stats("two").totals["enqueued"] == 1


@requires("listen_notify")
def test_a_rolled_back_savepoint_takes_its_notify_along() -> None:
    """The NOTIFY of a send inside a savepoint that rolls back is discarded by the
    database; the next send in the transaction must NOTIFY again."""
    mq.create_queue("one")
    with CaptureQueriesContext(connection) as ctx, transaction.atomic():
        try:
            with transaction.atomic():
                mq.send("one", "gone")
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        mq.send("one", "kept")
    notifies = [s for s in statements(ctx) if is_notify(s)]
    assert len(notifies) == 2, statements(ctx)
    assert [m.text() for m in mq.peek("one")] == ["kept"]


@requires("listen_notify")
@pytest.mark.skipif(
    "os.environ.get('MQLITE_TEST_DB') == 'pgbouncer'",
    reason="LISTEN needs a session; through a transaction-pooling PgBouncer it hears nothing "
    "(tests/worker/test_listen.py covers that path)",
)
def test_listeners_hear_one_notify_per_committed_transaction() -> None:
    import psycopg

    mq.create_queue("one")
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as listener:
        listener.execute("LISTEN mqlite")
        with transaction.atomic():
            for i in range(3):
                mq.send("one", i)
        with transaction.atomic():
            mq.send("one", "rolled back")
            transaction.set_rollback(True)
        got = [n.payload for n in listener.notifies(timeout=1.0)]
    assert got == ["one"]


@requires("listen_notify")
@pytest.mark.skipif(
    "os.environ.get('MQLITE_TEST_DB') == 'pgbouncer'",
    reason="LISTEN needs a session; through a transaction-pooling PgBouncer it hears nothing "
    "(tests/worker/test_listen.py covers that path)",
)
def test_the_general_path_notifies_at_commit_too() -> None:
    import psycopg

    mq.create_queue("one")
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as listener:
        listener.execute("LISTEN mqlite")
        mq.send("one", "keyed", message_id="m")  # each in a transaction of its own
        mq.send_batch("one", [mq.OutMessage("a"), mq.OutMessage("b", group_id="g")])
        got = [n.payload for n in listener.notifies(timeout=1.0, stop_after=2)]
    assert got == ["one", "one"]


def test_tasks_enqueue_is_one_statement() -> None:
    from tests.workerproject.recorder import tasks

    tasks.add.enqueue(1, 2)  # the first creates the task queue; measure the next one
    with CaptureQueriesContext(connection) as ctx:
        result = tasks.add.enqueue(2, 3)
    sql = statements(ctx)
    assert len(sql) == expected_count(), sql
    assert int(result.id) > 0


def test_the_queue_rules_still_apply_on_the_fast_path(clock: Any) -> None:
    mq.create_queue("ttl", default_ttl=60)
    seq = mq.send("ttl", "x", delay=5)
    [m] = mq.peek("ttl")
    assert (m.seq, m.state) == (seq, "scheduled")
    assert m.visible_at is not None and m.expires_at is not None
    assert (m.expires_at - m.visible_at).total_seconds() == 60
    assert (m.visible_at - clock.now()).total_seconds() == 5
    own = mq.send("ttl", "y", ttl=10)
    [p] = [m for m in mq.peek("ttl") if m.seq == own]
    assert p.expires_at is not None and (p.expires_at - clock.now()).total_seconds() == 10


def test_everything_else_takes_the_general_path_with_the_same_answers() -> None:
    with pytest.raises(mq.QueueNotFoundError):
        mq.send("missing", "x")
    mq.create_queue("groups", ordering="group_fifo")
    with pytest.raises(mq.GroupRequiredError):
        mq.send("groups", "x")
    mq.create_queue("strict", ordering="strict_fifo")
    first, second = mq.send("strict", "a"), mq.send("strict", "b")
    [got] = mq.receive("strict", max_messages=2)
    assert got.seq == first and second > first
    mq.create_queue("content", content_dedup=True)
    assert mq.send("content", "same") == mq.send("content", "same")
    mq.create_queue("plain")
    assert mq.send("plain", "x", message_id="k") == mq.send("plain", "x", message_id="k")
    with pytest.raises(mq.DedupConflictError):
        mq.send("plain", "other", message_id="k")
    assert mq.stats("plain").totals["enqueued"] == 1
    assert mq.stats("content").totals["enqueued"] == 1


def test_the_counter_follows_every_insert_and_only_inserts() -> None:
    """Every way a message row is written counts it once (SQLite: the trigger; PostgreSQL:
    the statements), a rolled-back send counts nothing, a deduplicated one nothing more,
    and a redrive counts the target once."""
    mq.create_queue("c", max_delivery_count=1)
    mq.create_queue("back")
    mq.send("c", "one")
    mq.send_batch("c", [mq.OutMessage("two"), mq.OutMessage("three", message_id="k")])
    mq.send("c", "three", message_id="k")  # a duplicate: collapses into the original
    with transaction.atomic():
        mq.send("c", "gone")
        mq.send_batch("c", [mq.OutMessage("gone too")])
        transaction.set_rollback(True)
    assert mq.stats("c").totals["enqueued"] == 3
    [m] = mq.receive("c")
    m.reject("Bad")
    assert mq.redrive("c", to_queue="back") == 1
    assert mq.stats("back").totals["enqueued"] == 1
    assert mq.stats("c").totals["enqueued"] == 3
    assert mq.stats("c").totals["redriven"] == 1


@requires("counting_trigger")
def test_sqlite_counts_by_trigger_and_the_send_writes_no_counter() -> None:
    mq.create_queue("t")
    with CaptureQueriesContext(connection) as ctx:
        mq.send("t", "x")
        mq.send_batch("t", [mq.OutMessage("y"), mq.OutMessage("z")])
    assert not [s for s in statements(ctx) if "mqlite_totals" in s], statements(ctx)
    assert mq.stats("t").totals["enqueued"] == 3
    assert triggers() == {"mqlite_count_enqueued"}


def test_a_transaction_counts_every_send_once_savepoints_included() -> None:
    """PostgreSQL leaves the count of later sends in a transaction to a deferred trigger
    at commit (migration 0008): the totals come out exact whatever savepoints did."""
    mq.create_queue("d")
    mq.create_queue("e")
    with transaction.atomic():
        for i in range(5):
            mq.send("d", i)
        with transaction.atomic():  # released: counts
            mq.send("d", "kept")
            mq.send("e", "other queue")
        try:
            with transaction.atomic():  # rolled back: counts nothing
                mq.send("d", "gone")
                mq.send("e", "gone")
                raise RuntimeError
        except RuntimeError:
            pass
        mq.send("e", "after")
    assert mq.stats("d").totals["enqueued"] == 6 == len(mq.peek("d", limit=100))
    assert mq.stats("e").totals["enqueued"] == 2 == len(mq.peek("e", limit=100))
    with transaction.atomic():
        for i in range(3):
            mq.send("d", i)
        transaction.set_rollback(True)
    assert mq.stats("d").totals["enqueued"] == 6


def test_a_first_send_rolled_back_in_a_savepoint_leaves_the_next_to_count() -> None:
    mq.create_queue("s")
    with transaction.atomic():
        try:
            with transaction.atomic():
                mq.send("s", "gone")  # the transaction's first send to "s"
                raise RuntimeError
        except RuntimeError:
            pass
        mq.send("s", "a")  # now the first: writes the counter itself
        mq.send("s", "b")  # deferred to commit
    assert mq.stats("s").totals["enqueued"] == 2


def test_stats_inside_the_transaction_see_its_own_sends() -> None:
    mq.create_queue("own")
    with transaction.atomic():
        for i in range(4):
            mq.send("own", i)
        assert mq.stats("own").totals["enqueued"] == 4
        mq.send("own", "more")
        assert mq.stats("own").totals["enqueued"] == 5
        assert mq.history("own", minutes=1)[-1]["enqueued"] == 5
    assert mq.stats("own").totals["enqueued"] == 5


def test_a_count_after_an_early_flush_and_a_rolled_back_savepoint_is_kept() -> None:
    """After a reader fired the deferred counts early, the next send writes the counter
    row again; if that send's savepoint rolls back, the one after must not rely on it."""
    mq.create_queue("f")
    with transaction.atomic():
        mq.send("f", 1)
        mq.send("f", 2)
        assert mq.stats("f").totals["enqueued"] == 2  # fires the deferred count now
        try:
            with transaction.atomic():
                mq.send("f", "gone")  # writes the row again, then rolls back
                mq.send("f", "gone too")
                raise RuntimeError
        except RuntimeError:
            pass
        mq.send("f", 3)
        mq.send("f", 4)
    assert mq.stats("f").totals["enqueued"] == 4 == len(mq.peek("f", limit=100))


def is_deferred(sql: str) -> bool:
    """The send that leaves its count to the deferred trigger (prepared or not)."""
    return "mqlite_send_deferred_" in sql or "set_config(" in sql


@requires("deferred_counts")
def test_later_sends_in_a_transaction_leave_their_count_to_commit() -> None:
    """The transaction's first send to a queue writes its counter row; the next sends to
    that queue take the deferred statement, which does not touch the row (the deferred
    trigger adds them once, at commit); another queue starts over."""
    mq.create_queue("one")
    mq.create_queue("two")
    with CaptureQueriesContext(connection) as ctx, transaction.atomic():
        for queue in ("one", "one", "one", "two", "two"):
            mq.send(queue, "x")
    sql = statements(ctx)
    assert [is_deferred(s) for s in sql] == [False, True, True, False, True], sql
    assert mq.stats("one").totals["enqueued"] == 3 and mq.stats("two").totals["enqueued"] == 2


@requires("deferred_counts")
def test_a_read_fires_the_deferred_counts_only_when_one_waits() -> None:
    """A read of the totals inside the transaction fires the deferred counts early
    (``SET CONSTRAINTS ... IMMEDIATE``, then ``DEFERRED``) only when a count waits, and
    only once for it."""

    def fired(ctx: CaptureQueriesContext) -> list[str]:
        return [s for s in statements(ctx) if s.startswith("SET CONSTRAINTS")]

    mq.create_queue("one")
    with transaction.atomic():
        mq.send("one", 1)  # writes the counter row itself: nothing waits
        with CaptureQueriesContext(connection) as quiet:
            assert mq.stats("one").totals["enqueued"] == 1
        mq.send("one", 2)  # its count waits for commit
        with CaptureQueriesContext(connection) as first:
            assert mq.stats("one").totals["enqueued"] == 2
        with CaptureQueriesContext(connection) as again:
            assert mq.stats("one").totals["enqueued"] == 2
    assert (fired(quiet), len(fired(first)), fired(again)) == ([], 2, [])
    assert mq.stats("one").totals["enqueued"] == 2


def test_a_transaction_wakes_each_queue_once_at_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's waiters on a queue are woken once per committed transaction that
    sent to it, however many sends it made, and not before the commit."""
    from django_mqlite.engine import wakeup

    woken: list[str] = []
    monkeypatch.setattr(wakeup, "notify", woken.append)
    mq.create_queue("one")
    mq.create_queue("two")
    with transaction.atomic():
        for queue in ("one", "one", "two", "one"):
            mq.send(queue, "x")
        assert woken == []
    assert sorted(woken) == ["one", "two"]


@requires("deferred_counts")
def test_a_refused_send_leaves_no_count_marker_behind() -> None:
    """Only a send that wrote the queue's counter row marks the transaction as holding
    its deferred count: after a send to a queue that does not exist yet, the queue's
    first real send writes the row itself, so no count is lost at commit."""
    with transaction.atomic():
        with pytest.raises(mq.QueueNotFoundError):
            mq.send("later", "x")
        mq.create_queue("later")
        mq.send("later", "a")
        mq.send("later", "b")
    assert mq.stats("later").totals["enqueued"] == 2 == len(mq.peek("later"))
