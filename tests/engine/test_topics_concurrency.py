"""Never half a fan-out: publishers on real threads while another thread swaps which
queue is subscribed (unsubscribe one, subscribe the other, in one transaction), so that
exactly one queue is subscribed at every moment. Every publish must reach exactly one
queue, and the copies in the queues must be exactly what the publishes reported."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

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


def _publish_interleaved(
    monkeypatch: pytest.MonkeyPatch, step: str, action: Callable[[], None]
) -> tuple[int, list[BaseException], bool]:
    """Publish ``"once"`` to topic ``t`` by its cached plan, running ``action`` on another
    thread when the publish reaches ``fanout.<step>`` (it is given 0.5 s, and may wait for
    the publish's commit instead); (queues reached, what the thread raised, whether the
    action finished before the publish went on)."""
    from django_mqlite.engine import fanout

    errors: list[BaseException] = []
    done = threading.Event()
    real = getattr(fanout, step)
    tried: list[threading.Thread] = []

    def act(_: int) -> None:
        action()
        done.set()

    def at_step(*args: object, **kwargs: object) -> str:
        if not tried:  # the first publish only
            tried.extend(start_threads(1, act, errors))
            done.wait(0.5)
        return str(real(*args, **kwargs))

    monkeypatch.setattr(fanout, step, at_step)
    reached = mq.publish("t", "once")
    for t in tried:
        t.join(30)
    return reached, errors, done.is_set()


def _planned_topic(*queues: str) -> None:
    """Topic ``t`` with ``queues`` made and the first subscribed, its plan cached."""
    mq.create_topic("t")
    for q in queues:
        mq.create_queue(q)
    mq.subscribe("t", queues[0])
    mq.publish("t", "plans")


@lacks("writable_cte")
def test_a_change_cannot_commit_between_a_planned_publishs_copies_and_its_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The planned publish writes its copies, then counts them under the plan's version
    (SQLite, MariaDB). A subscription change tried between the two must wait for the
    publish's commit: had it committed, the count's guard would fail after the copies
    were written, and the publish, run again by the locked path, would copy twice."""
    _planned_topic("a", "b")

    def swap() -> None:
        with transaction.atomic():
            mq.unsubscribe("t", "a")
            mq.subscribe("t", "b")

    reached, errors, _ = _publish_interleaved(monkeypatch, "count_sql", swap)
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
    _planned_topic("a")
    reached, errors, _ = _publish_interleaved(
        monkeypatch, "_sqlite_sql", lambda: mq.update_queue("a", dedup_window=1)
    )
    assert reached == 1
    assert not errors, errors
    assert mq.get_queue("a").dedup_window == 1
    assert [m.text() for m in mq.peek("a", limit=10)] == ["plans", "once"]
