"""Integrity sweep: a contiguous sequence 1..N of random bodies, their SHA-256 in a
property, consumed by real worker processes that fail, overrun their timeouts and
leases, and are SIGKILLed, frozen (SIGSTOP/SIGCONT) and SIGTERMed at random while they
work. The oracle (``harness.lease_violations``) reads the delivery log and the engine's
settlement receipts: every value delivered and completed exactly once, every body
intact, never two live leases on one message, nothing delivered after its completion,
and the lifetime counters balance.

CI size: N = 20,000, 3 workers x 4 threads. ``--long``: N = 200,000.
"""

from __future__ import annotations

import hashlib
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq

from .harness import Fleet, check_totals, lease_violations, receipts

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

LOCK_S = 1.0
MAX_DELIVERIES = 50
# Stale-worker reclaim waits more than a lease past the last heartbeat (see the oracle).
FLEET = {
    "HEARTBEAT_INTERVAL": 0.3,
    "WORKER_STALE_AFTER": 3.0,
    "REAP_INTERVAL": 0.5,
    "RETRY_BACKOFF_BASE": 0.05,
    "RETRY_BACKOFF_CAP": 0.2,
}
WORKERS = 3
THREADS = "4"


def plan(rng: random.Random) -> dict[str, Any]:
    """What the handler does on which delivery: mostly succeed at once."""
    r = rng.random()
    if r < 0.03:
        return {"fail": [1]}
    if r < 0.04:
        return {"fail": [1, 2]}
    if r < 0.043:
        return {"sleep": [1], "sleep_s": 2.0}  # past the 1.5 s timeout and the lease
    return {}


def send_sequence(n: int, rng: random.Random) -> dict[int, int]:
    """Send values 1..n; returns value -> seq."""
    seqs: dict[int, int] = {}
    batch: list[mq.OutMessage] = []
    values: list[int] = []
    for value in range(1, n + 1):
        body = rng.randbytes(rng.randint(1, 2048))
        props = {"n": value, "sha256": hashlib.sha256(body).hexdigest(), **plan(rng)}
        batch.append(mq.OutMessage(body, properties=props))
        values.append(value)
        if len(batch) == 500 or value == n:
            seqs.update(zip(values, mq.send_batch("sweep", batch), strict=True))
            batch, values = [], []
    assert sorted(seqs) == list(range(1, n + 1)) and 0 not in seqs.values()
    return seqs


def live(queue: str) -> int:
    counts = mq.stats(queue).counts
    return sum(counts[s] for s in ("active", "locked", "deferred", "scheduled"))


def chaos(fleet: Fleet, rng: random.Random, deadline: float) -> dict[str, int]:
    """Kill, freeze and stop workers at random until the queue is drained."""
    done = {"sigkill": 0, "sigstop": 0, "sigterm": 0}
    args = ("-q", "sweep", "-c", THREADS, "--shutdown-timeout", "1")
    while live("sweep"):
        assert time.monotonic() < deadline, f"not drained in time; {live('sweep')} left"
        time.sleep(rng.uniform(0.5, 1.5))
        victim = rng.choice(fleet.alive())
        action = rng.choice(["sigkill", "sigkill", "sigstop", "sigterm"])
        done[action] += 1
        if action == "sigstop":
            victim.send_signal(signal.SIGSTOP)
            time.sleep(rng.uniform(0.5, 4.0))  # sometimes past WORKER_STALE_AFTER
            victim.send_signal(signal.SIGCONT)
            continue
        if action == "sigkill":
            fleet.kill(victim)
        else:
            code = fleet.terminate(victim)
            # Before the worker has started (Django still loading) SIGTERM has its
            # default effect; nothing was claimed yet, so nothing is at stake.
            early = code == -signal.SIGTERM and "started" not in fleet.output(victim)
            assert code == 0 or early, fleet.output(victim)
        fleet.start(*args)
    return done


def test_integrity_sweep(tmp_path: Path, long_run: bool) -> None:
    n = 200_000 if long_run else 20_000
    rng = random.Random(8)
    mq.create_queue("sweep", lock_duration=LOCK_S, max_delivery_count=MAX_DELIVERIES)
    fleet = Fleet(tmp_path, FLEET)
    t0 = time.monotonic()
    try:
        seqs = send_sequence(n, rng)
        sent_s = time.monotonic() - t0
        for _ in range(WORKERS):
            fleet.start("-q", "sweep", "-c", THREADS, "--shutdown-timeout", "1")
        faults = chaos(fleet, rng, deadline=time.monotonic() + (n / 20_000) * 240)
        for proc in fleet.alive():
            fleet.wait_started(proc)  # a worker the chaos just restarted may still load
            assert fleet.terminate(proc) == 0, fleet.output(proc)
    finally:
        fleet.cleanup()
    elapsed = time.monotonic() - t0

    records = fleet.deliveries("sweep")
    assert all(r["ok"] for r in records), [r for r in records if not r["ok"]][:5]
    assert {r["n"] for r in records} == set(range(1, n + 1))
    assert {r["seq"] for r in records} == set(seqs.values())
    assert max(r["delivery"] for r in records) <= MAX_DELIVERIES
    violations = lease_violations(records, receipts(), int(LOCK_S * 1000))
    assert violations == [], violations[:20]
    totals = check_totals("sweep")
    assert totals["enqueued"] == n and totals["completed"] == n, totals
    assert totals["dead_lettered"] == 0 and totals["delivered"] >= len(records), totals
    fenced = fleet.all_output().count("finished after its timeout")
    print(
        f"\nintegrity sweep on {connection.vendor}: N={n} sent in {sent_s:.1f}s, "
        f"drained in {elapsed:.1f}s total; {len(records)} deliveries recorded, "
        f"{totals['delivered']} claimed; faults {faults}; {fenced} late settlements fenced; "
        f"totals {totals}"
    )
