"""A real deadlock (two connections locking two message rows in opposite orders), with
the engine's transaction as the one the database gives up: a settlement in a transaction
the engine opened runs again and succeeds; inside the caller's transaction the error is
the caller's, and nothing of that transaction is left (``engine/retry.py``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.db import OperationalError, connection, transaction

import django_mqlite as mq
from tests.support.concurrency import start_threads
from tests.support.features import requires

pytestmark = [pytest.mark.django_db(transaction=True), requires("deadlock_retry")]

#: Rows the other transaction changes first, so that it weighs more than the engine's
#: and the database rolls back the engine's to break the cycle (InnoDB gives up the
#: transaction that changed fewer rows).
WEIGHT = 50


def deadlocks() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SHOW GLOBAL STATUS LIKE 'Innodb_deadlocks'")
        return int(cursor.fetchone()[1])


def waiting_for_a_lock() -> bool:
    """Whether another session of the test database is in a statement on the message
    table (the settlement, waiting for the row this connection holds)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM information_schema.PROCESSLIST WHERE db = DATABASE() "
            "AND id <> CONNECTION_ID() AND command = 'Query' AND info LIKE %s",
            ["%mqlite_message%"],
        )
        return int(cursor.fetchone()[0]) > 0


def crossing(first: int, second: int, settle: Callable[[], Any]) -> Any:
    """Run ``settle`` (which locks ``first`` then ``second``) against another connection
    that holds ``second``, waits until ``settle`` waits for it, then asks for ``first``:
    a cycle. Returns what ``settle`` returned (or raises what it raised); the other
    transaction must commit."""
    holding = threading.Event()
    errors: list[BaseException] = []

    def other(_: int) -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE mqlite_message SET priority = priority + 1 WHERE subject = 'w'")
            assert cursor.rowcount == WEIGHT
            cursor.execute("SELECT seq FROM mqlite_message WHERE seq = %s FOR UPDATE", [second])
            holding.set()
            deadline = time.monotonic() + 10
            while not waiting_for_a_lock():
                assert time.monotonic() < deadline, "the settlement never waited"
                time.sleep(0.01)
            time.sleep(0.2)  # in its statement: it holds the first row, waits for this one
            cursor.execute("SELECT seq FROM mqlite_message WHERE seq = %s FOR UPDATE", [first])
            time.sleep(0.2)  # the engine's next try waits for this commit

    threads = start_threads(1, other, errors)
    assert holding.wait(10)
    try:
        return settle()
    finally:
        threads[0].join(30)
        assert not errors, errors


@pytest.fixture
def held() -> tuple[mq.Received, mq.Received]:
    mq.create_queue("dl", lock_duration=300)
    mq.send_batch("dl", [mq.OutMessage(b"w", subject="w") for _ in range(WEIGHT)])
    mq.create_queue("dl2", lock_duration=300)
    mq.send_batch("dl2", [mq.OutMessage(b"a"), mq.OutMessage(b"b")])
    first, second = sorted(mq.receive("dl2", max_messages=2), key=lambda m: m.seq)
    return first, second


def test_a_settlement_given_up_for_a_deadlock_runs_again(
    held: tuple[mq.Received, mq.Received],
) -> None:
    first, second = held
    before = deadlocks()
    items = [(first.seq, first.lock_token), (second.seq, second.lock_token)]
    done = crossing(first.seq, second.seq, lambda: mq.complete_batch("dl2", items))
    assert deadlocks() == before + 1
    assert done == [True, True]
    assert sum(mq.stats("dl2").counts.values()) == 0


def test_inside_the_callers_transaction_the_deadlock_is_the_callers(
    held: tuple[mq.Received, mq.Received],
) -> None:
    first, second = held
    items = [(first.seq, first.lock_token), (second.seq, second.lock_token)]

    def settle() -> None:
        with transaction.atomic():
            mq.send("dl2", b"written before")
            mq.complete_batch("dl2", items)

    before = deadlocks()
    with pytest.raises(OperationalError) as raised:
        crossing(first.seq, second.seq, settle)
    assert raised.value.__cause__ is not None
    assert raised.value.__cause__.args[0] == 1213
    assert deadlocks() == before + 1
    # Nothing of the caller's transaction is left: no send, both still held.
    assert mq.stats("dl2").counts["locked"] == 2
    assert sum(mq.stats("dl2").counts.values()) == 2
    assert mq.complete_batch("dl2", items) == [True, True]
