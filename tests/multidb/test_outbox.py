"""A send to a queue on another database joins that database's transaction."""

from __future__ import annotations

import pytest
from django.db import transaction

import django_mqlite as mq
from tests.settings import SECOND
from tests.support.features import requires

from .conftest import BOTH, FAR, rows

pytestmark = [pytest.mark.django_db(databases=BOTH), pytest.mark.usefixtures("declared")]


class BoomError(Exception):
    pass


def test_rollback_on_the_queues_database_leaves_nothing() -> None:
    with pytest.raises(BoomError), transaction.atomic(using=mq.database_of(FAR)):
        mq.send(FAR, "a")
        mq.send_batch(FAR, [mq.OutMessage("b")])
        assert rows(SECOND, FAR) == 2  # visible inside the transaction only
        raise BoomError
    assert rows(SECOND, FAR) == 0
    assert mq.stats(FAR).totals["enqueued"] == 0


def test_commit_on_the_queues_database_keeps_it() -> None:
    with transaction.atomic(using=SECOND):
        seq = mq.send(FAR, "a")
    assert [p.seq for p in mq.peek(FAR)] == [seq]


def test_rollback_on_another_database_does_not_undo_the_send() -> None:
    with pytest.raises(BoomError), transaction.atomic(using="default"):
        seq = mq.send(FAR, "a")
        raise BoomError
    assert [p.seq for p in mq.peek(FAR)] == [seq]


@pytest.mark.django_db(databases=BOTH, transaction=True)  # a real commit runs on_commit
def test_the_wake_up_waits_for_the_commit_of_the_queues_own_database(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A send to a queue on the second database wakes this process's waiters when that
    database's transaction commits: not at once because the default database is in
    autocommit, and not at all when it rolls back."""
    from django_mqlite.engine import wakeup

    woken: list[str] = []
    monkeypatch.setattr(wakeup, "notify", woken.append)
    with transaction.atomic(using=SECOND):
        mq.send(FAR, "x")
        mq.send(FAR, "y")
        assert woken == []
    assert woken == [FAR]
    with transaction.atomic(using=SECOND):
        mq.send(FAR, "z")
        transaction.set_rollback(True, using=SECOND)
    assert woken == [FAR]


@requires("deferred_counts", using=SECOND)
@pytest.mark.django_db(databases=BOTH, transaction=True)
def test_later_sends_on_the_second_database_leave_their_count_to_its_commit() -> None:
    """The deferred count (tests/engine/test_send_statements.py) works per database: the
    marker of the first send is kept by the queue's own database's transaction."""
    from django.db import connections
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connections[SECOND]) as ctx, transaction.atomic(using=SECOND):
        for body in ("a", "b", "c"):
            mq.send(FAR, body)
    sql = [q["sql"] for q in ctx.captured_queries if not q["sql"].startswith("PREPARE")]
    sends = [s for s in sql if "EXECUTE mqlite_send" in s or "INSERT INTO mqlite_message" in s]
    deferred = ["mqlite_send_deferred_" in s or "set_config(" in s for s in sends]
    assert deferred == [False, True, True], sends
    assert mq.stats(FAR).totals["enqueued"] == 3
