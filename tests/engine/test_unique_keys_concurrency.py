"""Unique keys under contention: eight producers race on five keys while a consumer
completes messages, each thread on its own connection. The oracle: never two live
messages with one key (asked of the database while the race runs and at the end), and
every send got either a message of its own or the live holder's, of its own key."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict

import pytest
from django.db import connection

import django_mqlite as mq
from tests.support.concurrency import retrying, run_threads, start_threads
from tests.support.unique_keys import held_twice

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

KEYS = [f"k{i}" for i in range(5)]
PRODUCERS = 8
SENDS = 50


def test_racing_producers_never_make_two_live_messages_with_one_key() -> None:
    # Completed rows are kept, so every seq a producer got can be checked afterwards.
    mq.create_queue("uniq", lock_duration=60, keep_results=3600)
    got: dict[str, list[int]] = defaultdict(list)
    seen_doubles: list[object] = []
    lock = threading.Lock()
    producing = threading.Event()
    producing.set()

    def producer(i: int) -> None:
        rng = random.Random(i)
        for n in range(SENDS):
            key = rng.choice(KEYS)
            body = f"{i}:{n}"
            seq = retrying(lambda: mq.send("uniq", body, unique_key=key))  # noqa: B023
            assert isinstance(seq, int) and seq > 0
            with lock:
                got[key].append(seq)

    def consumer(_: int) -> None:
        while producing.is_set() or mq.stats("uniq").counts["active"]:
            received = retrying(lambda: mq.receive("uniq", max_messages=4))
            assert isinstance(received, list)
            for m in received:
                retrying(m.complete)
            doubles = retrying(held_twice)
            if doubles:
                seen_doubles.append(doubles)
            if not received:
                time.sleep(0.005)

    errors: list[BaseException] = []
    (consuming,) = start_threads(1, consumer, errors)
    run_threads(PRODUCERS, producer)
    producing.clear()
    consuming.join(120)
    assert not errors, errors
    assert seen_doubles == []
    assert held_twice() == []

    with connection.cursor() as cursor:
        cursor.execute("SELECT seq, unique_key FROM mqlite_message")
        stored = dict(cursor.fetchall())
    assert sum(len(seqs) for seqs in got.values()) == PRODUCERS * SENDS
    for key, seqs in got.items():
        # Each answer is a message of this key, and every message of the key was an answer.
        assert {stored.get(seq) for seq in seqs} == {key}
        assert set(seqs) == {seq for seq, k in stored.items() if k == key}
    # The consumer freed keys while producers sent: some keys were taken more than once,
    # and some sends were skipped.
    assert len(stored) > len(KEYS)
    assert len(stored) < PRODUCERS * SENDS
    totals = mq.stats("uniq").totals
    assert totals["enqueued"] == totals["completed"] == len(stored)


ROUNDS = 40
SHARED = [f"s{i}" for i in range(6)]


@pytest.mark.parametrize("in_batch", [True, False], ids=["mq.batch", "send_batch"])
def test_batches_with_shared_keys_in_opposite_orders_never_deadlock(in_batch: bool) -> None:
    # Two producers send the same keys each round, one in ascending order and one in
    # descending, started together: taking keys in the order given, each would hold a
    # key the other waits for (PostgreSQL: "deadlock detected"). Each also sends a key
    # of its own, so its batch always has a child.
    mq.create_queue("uniq")
    start = threading.Barrier(2, timeout=60)
    got: dict[tuple[int, str], int] = {}
    lock = threading.Lock()

    def producer(i: int) -> None:
        try:
            send_rounds(i)
        except BaseException:
            start.abort()  # the other producer stops at its next round, not at a timeout
            raise

    def send_rounds(i: int) -> None:
        for n in range(ROUNDS):
            keys = [f"{n}:{k}" for k in (SHARED if i == 0 else SHARED[::-1])]
            keys.insert(len(keys) // 2, f"{n}:own{i}")
            messages = [mq.OutMessage(f"{i}:{k}", unique_key=k) for k in keys]
            start.wait()
            if in_batch:
                with mq.batch() as b:
                    seqs = b.send_batch("uniq", messages)
            else:
                seqs = mq.send_batch("uniq", messages)
            with lock:
                for k, seq in zip(keys, seqs, strict=True):
                    assert got.setdefault((n, k), seq) == seq, (n, k)  # one holder a key

    run_threads(2, producer)
    assert len(got) == ROUNDS * (len(SHARED) + 2)
    # As many live messages as keys, each key answered with one seq: none held twice.
    assert mq.stats("uniq").counts["active"] == len(got)
    assert len(set(got.values())) == len(got)
