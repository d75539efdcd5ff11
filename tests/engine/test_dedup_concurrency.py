"""Producer dedup under contention: two producers send batches that share their
message ids in opposite orders, over and over. Each batch takes its dedup keys in one
fixed order, so neither ever waits on the other in a cycle (on PostgreSQL a deadlock
error, each holding one key's uncommitted index entry), and every id ends up with
exactly one message, which both producers were answered with."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import OperationalError, connection

import django_mqlite as mq
from tests.support.concurrency import run_threads

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

ROUNDS = 25
KEYS = 30


def _busy_retrying(fn: object) -> list[int]:
    """Retry SQLite's busy database only: any other error (a deadlock) is the test's."""
    assert callable(fn)
    for attempt in range(50):
        try:
            return list(fn())
        except OperationalError as exc:
            if "database is locked" not in str(exc):
                raise
            time.sleep(0.01 * (attempt + 1))
    return list(fn())


def test_batches_sharing_message_ids_in_opposite_orders_never_deadlock() -> None:
    mq.create_queue("dedup-race")
    barrier = threading.Barrier(2)
    answers: list[dict[str, int]] = [{}, {}]

    def producer(i: int) -> None:
        for n in range(ROUNDS):
            ids = [f"r{n}-m{k}" for k in range(KEYS)]
            if i:
                ids.reverse()
            batch = [mq.OutMessage(m, message_id=m) for m in ids]
            barrier.wait(30)
            seqs = _busy_retrying(lambda: mq.send_batch("dedup-race", batch))  # noqa: B023
            answers[i].update(zip(ids, seqs, strict=True))

    run_threads(2, producer)
    assert answers[0] == answers[1]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(DISTINCT m.message_id) FROM mqlite_message m "
            "JOIN mqlite_queue q ON q.id = m.queue_id WHERE q.name = 'dedup-race'"
        )
        assert cursor.fetchone() == (ROUNDS * KEYS, ROUNDS * KEYS)
    assert sorted(answers[0].values()) == sorted(m.seq for m in mq.peek("dedup-race", limit=1000))
