"""One key under contention, in each window: eight producers send the same key while a
consumer claims, holds and completes, each thread on its own connection. The oracle,
asked of the database while the race runs and at the end: never two live messages with
the key (``unique_while="live"``), never two waiting never-claimed ones (``"pending"``,
where one may wait while another runs); every send got a message of the key."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

import django_mqlite as mq
from tests.support.concurrency import retrying, run_threads, start_threads

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PRODUCERS = 8
SENDS = 40
KEY = "the-key"
#: The rows that hold the key, per window (what its partial unique index must keep at 1).
HOLDING = {
    "live": ("unique_key = %s AND state IN ('active', 'locked', 'deferred', 'scheduled')"),
    "pending": (
        "pending_key = %s AND state IN ('active', 'scheduled') AND delivery_count = 0 "
        "AND snooze_count = 0"
    ),
}


def holders(window: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM mqlite_message WHERE {HOLDING[window]}", [KEY])
        return int(cursor.fetchone()[0])


@pytest.mark.parametrize("window", ["live", "pending"])
def test_racing_producers_on_one_key_never_make_two_holders(window: str) -> None:
    mq.create_queue("uniq", lock_duration=60, keep_results=3600)
    got: list[int] = []
    seen: list[int] = []
    lock = threading.Lock()
    producing = threading.Event()
    producing.set()
    # Half-way the producers wait for the consumer's first completion, so the key is
    # taken again while they send (on SQLite eight producers can otherwise keep the
    # consumer from the write lock until they are done: one message, and no re-take).
    completed = threading.Event()

    def producer(i: int) -> None:
        for n in range(SENDS):
            if n == SENDS // 2:
                assert completed.wait(60), "the consumer completed nothing"
            seq = retrying(
                lambda: mq.send("uniq", f"{i}:{n}", unique_key=KEY, unique_while=window)  # noqa: B023
            )
            assert isinstance(seq, int) and seq > 0
            with lock:
                got.append(seq)

    def consumer(_: int) -> None:
        while producing.is_set() or mq.stats("uniq").counts["active"]:
            received = retrying(lambda: mq.receive("uniq", max_messages=1))
            assert isinstance(received, list)
            for m in received:
                time.sleep(0.002)  # running: producers send meanwhile
                seen.append(int(retrying(lambda: holders(window))))  # type: ignore[arg-type]
                retrying(m.complete)
                completed.set()
            seen.append(int(retrying(lambda: holders(window))))  # type: ignore[arg-type]
            if not received:
                time.sleep(0.002)

    errors: list[BaseException] = []
    (consuming,) = start_threads(1, consumer, errors)
    run_threads(PRODUCERS, producer)
    producing.clear()
    consuming.join(120)
    assert not errors, errors
    assert max(seen) <= 1
    assert holders(window) == 0  # all done

    column = "unique_key" if window == "live" else "pending_key"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT seq, {column} FROM mqlite_message")
        stored = dict(cursor.fetchall())
    assert len(got) == PRODUCERS * SENDS
    assert {stored.get(seq) for seq in got} == {KEY}  # each answer a message of the key
    assert set(got) == set(stored)  # and each message of the key an answer
    assert 1 < len(stored) < PRODUCERS * SENDS  # the key was taken again, sends skipped
