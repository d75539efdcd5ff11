"""Every engine call for a queue declared on another database runs there without
``using=``; a contradicting ``using=`` is refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command

import django_mqlite as mq
from tests.settings import SECOND

from .conftest import BOTH, FAR, NEAR, queue_names, rows

pytestmark = [pytest.mark.django_db(databases=BOTH), pytest.mark.usefixtures("declared")]


def test_migrate_creates_each_declared_queue_on_its_own_database() -> None:
    assert FAR in queue_names(SECOND) and FAR not in queue_names("default")
    assert NEAR in queue_names("default") and NEAR not in queue_names(SECOND)
    assert mq.get_queue(FAR).max_delivery_count == 2
    assert mq.database_of(FAR) == SECOND and mq.database_of(NEAR) == "default"


def test_migrate_on_one_database_touches_only_its_queues(settings: Any) -> None:
    mq.delete_queue(FAR)
    mq.delete_queue(NEAR)
    call_command("migrate", database=SECOND, verbosity=0)
    assert queue_names(SECOND) >= {FAR}
    assert NEAR not in queue_names("default")


def test_send_receive_settle_without_using_run_on_the_declared_database() -> None:
    seq = mq.send(FAR, {"n": 1})
    assert rows(SECOND, FAR) == 1
    assert rows("default", FAR) == 0
    (msg,) = mq.receive(FAR)
    assert msg.seq == seq and msg.using == SECOND
    assert rows(SECOND, FAR, "locked") == 1
    msg.renew()
    msg.abandon()
    (again,) = mq.receive(FAR)
    mq.defer(FAR, again.seq, again.lock_token or "")
    (deferred,) = mq.receive_deferred(FAR, [again.seq])
    mq.complete(FAR, deferred.seq, deferred.lock_token or "")
    assert rows(SECOND, FAR) == 0
    assert mq.stats(FAR).totals["completed"] == 1


def test_batches_peek_stats_redrive_purge_and_cancel() -> None:
    seqs = mq.send_batch(FAR, [mq.OutMessage(n) for n in range(3)])
    assert [p.seq for p in mq.peek(FAR)] == seqs
    got = mq.receive(FAR, max_messages=3)
    assert mq.renew_batch(FAR, [(m.seq, m.lock_token or "") for m in got]) == [True] * 3
    for m in got:
        mq.reject(FAR, m.seq, m.lock_token or "", "Bad")
    assert mq.stats(FAR).counts["dead_lettered"] == 3
    assert mq.redrive(FAR, seqs=seqs[:1]) == 1
    assert mq.purge(FAR) == 2
    assert rows(SECOND, FAR, "active") == 1
    later = mq.send(FAR, "later", delay=60)
    assert mq.cancel_scheduled(FAR, later) is True
    assert rows("default", FAR) == 0


def test_listing_calls_cover_every_queue_database() -> None:
    mq.send(FAR, "x")
    names = [q.name for q in mq.list_queues()]
    assert FAR in names and NEAR in names
    assert set(mq.stats()) >= {FAR, NEAR}
    assert mq.stats()[FAR].counts["active"] == 1
    assert FAR not in {q.name for q in mq.list_queues(using="default")}
    assert [q.name for q in mq.list_queues(using=SECOND)] == [FAR]


def test_reap_without_using_covers_every_queue_database() -> None:
    with mq.clock.frozen() as clock:
        mq.send(FAR, "x")
        mq.receive(FAR, lock_duration=1)
        clock.advance(2)
        assert mq.reap()["expired_locks"] == 1
    assert rows(SECOND, FAR, "active") == 1


def test_using_the_declared_database_explicitly_is_fine() -> None:
    seq = mq.send(FAR, "x", using=SECOND)
    assert mq.peek(FAR, using=SECOND)[0].seq == seq


CALLS: list[tuple[str, Callable[[], Any]]] = [
    ("send", lambda: mq.send(FAR, "x", using="default")),
    ("send_batch", lambda: mq.send_batch(FAR, [mq.OutMessage("x")], using="default")),
    ("receive", lambda: mq.receive(FAR, using="default")),
    ("complete", lambda: mq.complete(FAR, 1, "t", using="default")),
    ("abandon", lambda: mq.abandon(FAR, 1, "t", using="default")),
    ("peek", lambda: mq.peek(FAR, using="default")),
    ("stats", lambda: mq.stats(FAR, using="default")),
    ("redrive", lambda: mq.redrive(FAR, using="default")),
    ("purge", lambda: mq.purge(FAR, using="default")),
    ("get_queue", lambda: mq.get_queue(FAR, using="default")),
    ("create_queue", lambda: mq.create_queue(FAR, using="default")),
    ("cancel_scheduled", lambda: mq.cancel_scheduled(FAR, 1, using="default")),
]


@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=[n for n, _ in CALLS])
def test_a_contradicting_using_is_refused(call: Callable[[], Any]) -> None:
    with pytest.raises(mq.InvalidArgumentError, match="lives on database"):
        call()
    assert rows("default", FAR) == 0 and FAR not in queue_names("default")


def test_redrive_across_databases_is_refused() -> None:
    with pytest.raises(mq.InvalidArgumentError, match="lives on database"):
        mq.redrive(NEAR, to_queue=FAR)
    with pytest.raises(mq.QueueNotFoundError):  # no queue of that name on FAR's database
        mq.redrive(FAR, to_queue=NEAR)


def test_an_unknown_declared_database_fails_the_system_check(settings: Any) -> None:
    from django_mqlite.checks import check_database

    settings.MQLITE = {"QUEUES": {"lost": {"database": "nowhere"}}}
    assert [e.id for e in check_database()] == ["django_mqlite.E006"]


def test_runreaper_without_database_reaps_every_queue_database() -> None:
    import json
    from io import StringIO

    with mq.clock.frozen() as clock:
        mq.send(FAR, "x")
        mq.receive(FAR, lock_duration=1)
        clock.advance(2)
        out = StringIO()
        call_command("runreaper", "--once", stdout=out)
    assert json.loads(out.getvalue())["expired_locks"] == 1
    assert rows(SECOND, FAR, "active") == 1
