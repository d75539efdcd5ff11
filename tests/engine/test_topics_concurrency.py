"""Never half a fan-out: publishers on real threads while another thread swaps which
queue is subscribed (unsubscribe one, subscribe the other, in one transaction), so that
exactly one queue is subscribed at every moment. Every publish must reach exactly one
queue, and the copies in the queues must be exactly what the publishes reported."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from django.db import transaction

import django_mqlite as mq
from tests.support.concurrency import retrying, start_threads
from tests.support.features import lacks

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PUBLISHERS = 3
PUBLISHES = 60


def test_a_subscription_change_is_never_half_seen_by_a_publish() -> None:
    mq.create_topic("t")
    mq.create_queue("a")
    mq.create_queue("b")
    mq.subscribe("t", "a")
    errors: list[BaseException] = []
    reached: dict[str, int] = {}
    done = threading.Event()

    def swapper(_: int) -> None:
        current, other = "a", "b"
        while not done.is_set():

            def swap(current: str = current, other: str = other) -> None:
                with transaction.atomic():
                    mq.unsubscribe("t", current)
                    time.sleep(0.001)  # widen the window a publish could fall into
                    mq.subscribe("t", other)

            retrying(swap)
            current, other = other, current

    def publisher(i: int) -> None:
        for n in range(PUBLISHES):
            body = f"{i}-{n}"
            reached[body] = retrying(lambda body=body: mq.publish("t", body))

    (swap_thread,) = start_threads(1, swapper, errors)
    threads = start_threads(PUBLISHERS, publisher, errors)
    for t in threads:
        t.join(300)
    done.set()
    swap_thread.join(60)
    assert not errors, errors
    assert Counter(reached.values()) == {1: PUBLISHERS * PUBLISHES}
    copies = Counter(m.text() for q in ("a", "b") for m in mq.peek(q, limit=1000))
    assert copies == dict.fromkeys(reached, 1)


@lacks("writable_cte")
def test_a_change_cannot_commit_between_a_planned_publishs_copies_and_its_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The planned publish writes its copies, then counts them under the plan's version
    (SQLite, MariaDB). A subscription change tried between the two must wait for the
    publish's commit: had it committed, the count's guard would fail after the copies
    were written, and the publish, run again by the locked path, would copy twice."""
    from django_mqlite.engine import fanout

    mq.create_topic("t")
    mq.create_queue("a")
    mq.create_queue("b")
    mq.subscribe("t", "a")
    mq.publish("t", "plans")  # the plan is now cached
    errors: list[BaseException] = []
    swapped = threading.Event()
    real = fanout.count_sql
    tried: list[threading.Thread] = []

    def swap(_: int) -> None:
        with transaction.atomic():
            mq.unsubscribe("t", "a")
            mq.subscribe("t", "b")
        swapped.set()

    def count_sql(*args: object, **kwargs: object) -> str:
        if not tried:  # between the copies and the count of the first publish
            tried.extend(start_threads(1, swap, errors))
            swapped.wait(0.5)  # it may not commit now
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fanout, "count_sql", count_sql)
    reached = mq.publish("t", "once")
    for t in tried:
        t.join(30)
    assert not errors, errors
    copies = [m.text() for q in ("a", "b") for m in mq.peek(q, limit=10)]
    assert copies.count("once") == 1
    assert reached == 1


@lacks("writable_cte")
def test_a_queue_change_waits_for_a_planned_publish_without_deadlock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A planned publish holds its topic, then its copies' key checks lock the queue rows
    they point at; ``update_queue`` takes the same two in the same order (the topic to
    re-plan its publishers first, then the queue), so it waits for the publish instead of
    deadlocking with it (MariaDB's 1213, which neither side retries)."""
    from django_mqlite.engine import fanout

    mq.create_topic("t")
    mq.create_queue("a")
    mq.subscribe("t", "a")
    mq.publish("t", "plans")  # the plan is now cached
    errors: list[BaseException] = []
    changed = threading.Event()
    real = fanout._sqlite_sql
    tried: list[threading.Thread] = []

    def change(_: int) -> None:
        mq.update_queue("a", dedup_window=1)
        changed.set()

    def copies_sql(*args: object, **kwargs: object) -> str:
        if not tried:  # the topic is held; the copies are not written yet
            tried.extend(start_threads(1, change, errors))
            changed.wait(0.5)  # it may not finish now
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fanout, "_sqlite_sql", copies_sql)
    assert mq.publish("t", "once") == 1
    for t in tried:
        t.join(30)
    assert not errors, errors
    assert changed.is_set()
    assert [m.text() for m in mq.peek("a", limit=10)] == ["plans", "once"]
