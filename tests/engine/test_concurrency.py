"""Concurrent consumers on real threads, each with its own database connection, checked
by an oracle: no message held by two live leases, none delivered after completion, none
lost; and on ordered lines, never out of order and never two in flight from one group."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict

import pytest

import django_mqlite as mq
from tests.support.concurrency import Oracle, receive_until_idle, retrying, run_threads

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_four_threads_drain_without_double_delivery_or_loss() -> None:
    mq.create_queue("conc", lock_duration=60)
    total = 1200
    sent = []
    for i in range(0, total, 200):
        sent += mq.send_batch("conc", [mq.OutMessage(str(n)) for n in range(i, i + 200)])
    oracle = Oracle()
    rng = random.Random(7)

    def consumer(i: int) -> None:
        for got in receive_until_idle("conc", [1, 8, 32], rng, idle_rounds=3):
            for m in got:
                oracle.claimed(m)
            for m in got:
                if rng.random() < 0.1:
                    oracle.released(m.seq)
                    retrying(m.abandon)
                else:
                    retrying(m.complete)
                    oracle.done(m.seq)
                    oracle.released(m.seq)

    run_threads(4, consumer)
    assert oracle.violations == []
    assert oracle.completed == set(sent), f"lost: {sorted(set(sent) - oracle.completed)[:10]}"
    s = mq.stats("conc")
    assert s.counts["active"] == s.counts["locked"] == 0
    assert s.totals["delivered"] == oracle.deliveries
    assert s.totals["completed"] == total


def test_groups_stay_in_order_with_concurrent_claimers() -> None:
    mq.create_queue("grp", lock_duration=60)
    groups = [f"g{i}" for i in range(8)]
    per_group = 40
    expected: dict[str, list[int]] = defaultdict(list)
    batch = [mq.OutMessage(f"{g}:{n}", group_id=g) for n in range(per_group) for g in groups]
    for msg, seq in zip(batch, mq.send_batch("grp", batch), strict=True):
        assert msg.group_id is not None
        expected[msg.group_id].append(seq)
    seen: dict[str, list[int]] = defaultdict(list)
    in_flight: set[str] = set()
    lock = threading.Lock()
    violations: list[str] = []
    rng = random.Random(11)

    def consumer(i: int) -> None:
        idle = 0
        while idle < 5:
            got = retrying(lambda: mq.receive("grp", max_messages=4))
            assert isinstance(got, list)
            if not got:
                idle += 1
                time.sleep(0.01)
                continue
            idle = 0
            with lock:
                for m in got:
                    g = m.group_id or ""
                    if g in in_flight:
                        violations.append(f"two in flight from {g}")
                    in_flight.add(g)
            for m in got:
                g = m.group_id or ""
                if rng.random() < 0.1:
                    with lock:
                        in_flight.discard(g)
                    retrying(m.abandon)  # the head must come back first
                    continue
                with lock:
                    seen[g].append(m.seq)
                    in_flight.discard(g)
                retrying(m.complete)

    run_threads(4, consumer)
    assert violations == []
    assert dict(seen) == dict(expected)
