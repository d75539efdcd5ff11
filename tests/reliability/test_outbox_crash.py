"""Crash injection in a producer: each item writes a business row and enqueues its
message in one ``transaction.atomic()`` (``manage.py outbox_produce``), and the producer
is SIGKILLed again and again: deterministically with the transaction held open between
its two writes (row first, and message first), and at random moments. After recovery
the set of business rows equals the set of messages, exactly.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection, transaction

import django_mqlite as mq

from .harness import Fleet, live_messages, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

TABLE = "reliability_order"


@pytest.fixture
def outbox() -> Iterator[None]:
    mq.create_queue("outbox")
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE {TABLE} (ref varchar(100) PRIMARY KEY)")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE {TABLE}")


def rows() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT ref FROM {TABLE}")
        return sorted(r[0] for r in cursor.fetchall())


def messages() -> list[str]:
    return sorted(json.loads(m.body)["ref"] for m in live_messages("outbox"))


def snapshot() -> tuple[list[str], list[str]]:
    """The business rows and the messages, read in one snapshot. Two separate reads can
    straddle a commit: a producer SIGKILLed while its COMMIT is in flight is gone from
    the machine, yet the server may still apply that commit a moment later, between the
    read of the rows and the read of the messages. The guarantee is that no snapshot
    shows one without the other."""
    with transaction.atomic():
        if connection.vendor in ("postgresql", "mysql"):
            # Django reads committed on both; one snapshot for the transaction instead.
            # (SQLite's read transaction is one snapshot from its first read.)
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        return rows(), messages()


def test_outbox_killed_between_its_two_writes(tmp_path: Path, outbox: None) -> None:
    fleet = Fleet(tmp_path)
    try:
        for round_ in range(6):
            gate = tmp_path / f"gate-{round_}"
            args = ["--prefix", f"d{round_}", "--hold-at", "3", "--gate", str(gate)]
            if round_ % 2:
                args.append("--send-first")
            proc = fleet.start(*args, command="outbox_produce")
            wait_until(gate.exists, 60, every=0.02, what="the producer held mid-transaction")
            fleet.kill(proc)
            got, sent = snapshot()
            assert got == sent
            assert len(got) == 3 * (round_ + 1), got
    finally:
        fleet.cleanup()


def test_outbox_killed_at_random(tmp_path: Path, outbox: None, long_run: bool) -> None:
    rng = random.Random(8)
    fleet = Fleet(tmp_path)
    kills = 40 if long_run else 8
    try:
        for round_ in range(kills):
            args = ["--prefix", f"r{round_}"]
            if rng.random() < 0.5:
                args.append("--send-first")
            proc = fleet.start(*args, command="outbox_produce")
            # Past start-up (about a second), then at a random point of the loop.
            wait_until(lambda r=round_: any(x.startswith(f"r{r}-") for x in rows()), 60)
            time.sleep(rng.uniform(0.0, 0.5))
            fleet.kill(proc)
    finally:
        fleet.cleanup()
    got, sent = snapshot()
    assert got == sent
    assert len(got) == len(set(got)) and len(got) >= kills
    print(f"\noutbox on {connection.vendor}: {kills} kills, {len(got)} rows == messages")


def test_the_two_reads_share_one_snapshot(outbox: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row committed by another connection between ``snapshot()``'s two reads is not
    seen by the second (on SQLite the writer waits out the read, or is refused)."""
    committed: list[bool] = []

    def insert_then_read() -> list[str]:
        def other() -> None:
            from django.db import connection as theirs

            try:
                with theirs.cursor() as cursor:
                    if theirs.vendor == "sqlite":
                        cursor.execute("PRAGMA busy_timeout = 100")
                    cursor.execute(f"INSERT INTO {TABLE} VALUES ('late')")
                committed.append(True)
            except Exception:
                committed.append(False)
            finally:
                theirs.close()

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(60)
        return rows()

    monkeypatch.setattr(sys.modules[__name__], "messages", insert_then_read)
    before, after = snapshot()
    assert before == after == []
    assert rows() == (["late"] if committed == [True] else [])
    # SQLite's atomic() begins IMMEDIATE: the read holds the write lock, the insert waits.
    assert committed == [connection.vendor != "sqlite"]
