"""Every settlement of a queue on another database runs there, in one transaction of
that database: for a queue declared there (no ``using=``) and one named by ``using=``,
each verb, its batch form and the release at shutdown."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections

import django_mqlite as mq
from django_mqlite.engine import databases, settle
from tests.settings import SECOND

from .conftest import BOTH, FAR

pytestmark = pytest.mark.django_db(transaction=True, databases=BOTH)


@pytest.fixture
def atomic_on_second(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each cursor an engine call takes on the second database, whether it was
    taken inside a transaction there."""
    seen: list[bool] = []
    real = databases.ctx

    def ctx(alias: str) -> Any:
        if alias == SECOND:
            seen.append(connections[SECOND].in_atomic_block)
        return real(alias)

    monkeypatch.setattr(databases, "ctx", ctx)
    return seen


def settle_every_verb(queue: str, using: str | None, seen: list[bool]) -> None:
    mq.send_batch(queue, [mq.OutMessage(i) for i in range(11)], using=using)
    ms = mq.receive(queue, max_messages=11, using=using)
    assert len(ms) == 11 and {m.using for m in ms} == {SECOND}
    seen.clear()  # from here on, settlements only

    def pair(k: int) -> tuple[int, str]:
        return ms[k].seq, ms[k].lock_token or ""

    u = {"using": using}
    renewed = mq.renew(queue, *pair(0), **u)
    assert (mq.renew_lease(queue, *pair(0), **u).locked_until or renewed) >= renewed
    mq.complete(queue, *pair(0), **u)
    settle.complete_with_result(queue, *pair(1), {"r": 1}, **u)
    mq.abandon(queue, *pair(2), **u)
    assert mq.snooze(queue, *pair(3), 60, **u).outcome.value == "snoozed"
    mq.reject(queue, *pair(4), "Bad", **u)
    mq.defer(queue, *pair(5), **u)
    assert mq.complete_batch(queue, [pair(6)], **u) == [True]
    assert mq.renew_batch(queue, [pair(7)], **u) == [True]
    assert mq.release(queue, [pair(7)], **u) == [True]
    assert [r.ok for r in settle.abandon_many(queue, [pair(8)], **u)] == [True]
    assert mq.release(queue, [pair(9), pair(10)], **u) == [True, True]
    assert len(seen) >= 12 and all(seen)


@pytest.mark.usefixtures("declared")
def test_a_declared_queue_is_settled_on_its_database(atomic_on_second: list[bool]) -> None:
    settle_every_verb(FAR, None, atomic_on_second)
    assert mq.stats(FAR).totals["completed"] == 3


def test_a_queue_named_by_using_is_settled_there(atomic_on_second: list[bool]) -> None:
    mq.create_queue("there", using=SECOND)
    settle_every_verb("there", SECOND, atomic_on_second)
    assert mq.stats("there", using=SECOND).totals["completed"] == 3
