"""History under concurrency, on real threads with their own connections: racing
samplers write one row per queue and minute, and under live traffic every minute's
sample lies between the totals just before and just after its minute ended."""

from __future__ import annotations

import datetime as dt
import random
import threading
import time

import pytest
from django.db import connection

import django_mqlite as mq
from django_mqlite.engine import history
from tests.support.concurrency import retrying
from tests.support.concurrency import start_threads as start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

T0 = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)
MINUTES = 4


def test_racing_samplers_write_one_row_per_queue_and_minute() -> None:
    with mq.clock.frozen(T0) as clock:
        for i in range(5):
            mq.create_queue(f"h{i}")
            mq.send(f"h{i}", b"x")
        clock.advance(60)
        barrier = threading.Barrier(6)
        written: list[int] = []
        errors: list[BaseException] = []

        def sampler(i: int) -> None:
            barrier.wait()
            written.append(retrying(lambda: history.sample("default")))

        for t in start(6, sampler, errors):
            t.join(60)
    assert not errors, errors
    assert sorted(written, reverse=True)[0] >= 1 and sum(written) == 5
    with connection.cursor() as c:
        c.execute(
            "SELECT queue_id, minute, count(*), max(enqueued) FROM mqlite_history "
            "GROUP BY queue_id, minute"
        )
        got = c.fetchall()
    assert len(got) == 5 and {(n, e) for _, _, n, e in got} == {(1, 1)}


def test_minutes_match_the_totals_under_concurrent_traffic() -> None:
    errors: list[BaseException] = []
    stop = threading.Event()
    with mq.clock.frozen(T0) as clock:
        q = mq.create_queue("busy", max_delivery_count=3, lock_duration=25).name

        def producer(i: int) -> None:
            while not stop.is_set():
                retrying(lambda: mq.send_batch(q, [mq.OutMessage(f"{i}")] * 3))
                time.sleep(0.002)

        def consumer(i: int) -> None:
            rng = random.Random(i)
            while not stop.is_set():
                for m in retrying(lambda: mq.receive(q, max_messages=4)):
                    r = rng.random()
                    try:
                        if r < 0.7:
                            retrying(m.complete)
                        elif r < 0.8:
                            retrying(m.abandon)
                        elif r < 0.85:
                            retrying(lambda m=m: m.reject("Bad"))
                        # else: left locked, for the reaper to reclaim
                    except mq.LockLostError:
                        pass  # its lease ran out as the clock moved: reclaimed
                time.sleep(0.002)

        def reaper(i: int) -> None:
            while not stop.is_set():
                retrying(mq.reap)
                time.sleep(0.005)

        threads = start(2, producer, errors) + start(2, consumer, errors)
        threads += start(2, reaper, errors)
        lower, upper = [], []
        for _ in range(MINUTES):
            for _ in range(5):
                time.sleep(0.1)
                clock.advance(10)
                retrying(mq.reap)
            lower.append(mq.stats(q).totals)  # just before the minute ends
            clock.advance(10)
            retrying(mq.reap)  # the minute's sample exists once this returns
            upper.append(mq.stats(q).totals)
        stop.set()
        for t in threads:
            t.join(60)
        assert not errors, errors
        # At least one lease left behind for the last reap to reclaim, whatever the
        # consumers' last rounds left (under load, on MariaDB, once none).
        mq.send(q, "left behind")
        assert retrying(lambda: mq.receive(q))
        quiet = mq.stats(q)
        clock.advance(60)
        mq.reap()  # samples the last minute, then reclaims the leases left behind
        final = mq.stats(q)
        buckets = mq.history(q, minutes=MINUTES + 2)

    names = list(final.totals)
    running = dict.fromkeys(names, 0)
    for i, b in enumerate(buckets):
        assert all(b[n] >= 0 for n in names), b
        # Invariants of the totals hold minute by minute: every sample is one reading.
        assert b["abandoned"] + b["reclaimed"] == b["retried"] + b["exhausted"], b
        assert b["dead_lettered"] == b["exhausted"] + b["rejected"], b
        running = {n: running[n] + b[n] for n in names}
        if i < MINUTES:
            assert all(lower[i][n] <= running[n] <= upper[i][n] for n in names), (i, b)
        if i == MINUTES:
            assert running == quiet.totals and b["depth"] == quiet.counts
    assert running == final.totals  # the minutes add up to the lifetime totals
    assert buckets[-1]["depth"] == final.counts
    assert buckets[-1]["reclaimed"] == final.totals["reclaimed"] - quiet.totals["reclaimed"] > 0
    busy = [b for b in buckets[:MINUTES] if b["enqueued"] and b["completed"]]
    assert len(busy) >= 2, buckets  # the traffic really spanned several minutes
