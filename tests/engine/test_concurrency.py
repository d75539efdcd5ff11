"""Concurrent consumers on real threads, each with its own database connection, checked
by an oracle: no message held by two live leases, none delivered after completion, none
lost; and on ordered lines, never out of order and never two in flight from one group."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from django.db import OperationalError, connections

import django_mqlite as mq

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@dataclass
class Oracle:
    lock: threading.Lock = field(default_factory=threading.Lock)
    leases: dict[int, tuple[str, float]] = field(default_factory=dict)  # seq -> (token, until)
    completed: set[int] = field(default_factory=set)
    violations: list[str] = field(default_factory=list)
    deliveries: int = 0

    def claimed(self, m: mq.Received) -> None:
        now = time.time()
        with self.lock:
            self.deliveries += 1
            if m.seq in self.completed:
                self.violations.append(f"{m.seq} delivered after completion")
            held = self.leases.get(m.seq)
            if held is not None and held[1] > now:
                self.violations.append(f"{m.seq} held by two live leases")
            assert m.locked_until is not None and m.lock_token is not None
            self.leases[m.seq] = (m.lock_token, m.locked_until.timestamp())

    def released(self, seq: int) -> None:
        with self.lock:
            self.leases.pop(seq, None)

    def done(self, seq: int) -> None:
        with self.lock:
            if seq in self.completed:
                self.violations.append(f"{seq} completed twice")
            self.completed.add(seq)


def run_threads(n: int, target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def wrapped(i: int) -> None:
        try:
            target(i)
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors


def retrying(fn: Callable[[], object]) -> object:
    """SQLite may still report a busy database under heavy contention; try again."""
    for attempt in range(50):
        try:
            return fn()
        except OperationalError:
            time.sleep(0.01 * (attempt + 1))
    return fn()


def test_four_threads_drain_without_double_delivery_or_loss() -> None:
    mq.create_queue("conc", lock_duration=60)
    total = 1200
    sent = []
    for i in range(0, total, 200):
        sent += mq.send_batch("conc", [mq.OutMessage(str(n)) for n in range(i, i + 200)])
    oracle = Oracle()
    rng = random.Random(7)

    def consumer(i: int) -> None:
        idle = 0
        while idle < 3:
            got = retrying(lambda: mq.receive("conc", max_messages=rng.choice([1, 8, 32])))
            assert isinstance(got, list)
            if not got:
                idle += 1
                time.sleep(0.02)
                continue
            idle = 0
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
