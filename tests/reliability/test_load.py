"""Load: 50 concurrent producers send while worker processes drain, the contention of a
real broker; nothing is lost and nothing is completed twice.

The producers call the Python API (``mq.send``) from 50 threads, each with its own
database connection. ``PRODUCE`` is the one place a producer sends: the HTTP API's
load test (50 HTTP clients against ``POST /queues/<q>/messages``) swaps it for an HTTP
client once the API is merged; the drain and the checks stay as they are.

CI: 50 x 200 messages, 3 workers x 4 threads. ``--long``: 50 x 2,000.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import OperationalError, connection, connections

import django_mqlite as mq

from .harness import Fleet, check_totals, receipts, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PRODUCERS = 50
FLEET = {"HEARTBEAT_INTERVAL": 0.5, "WORKER_STALE_AFTER": 5.0, "REAP_INTERVAL": 0.5}


def send_python(producer: int, i: int) -> int:
    return mq.send("drain", {"p": producer, "i": i}, message_id=f"{producer}-{i}")


PRODUCE: Callable[[int, int], int] = send_python


def produce(producer: int, count: int, out: dict[str, int], errors: list[BaseException]) -> None:
    try:
        for i in range(count):
            for attempt in range(100):
                try:
                    # A retry after an error is safe: message_id dedups a send that did
                    # commit before its reply was lost.
                    out[f"{producer}-{i}"] = PRODUCE(producer, i)
                    break
                except OperationalError:  # SQLite: busy under heavy contention
                    if attempt == 99:
                        raise
                    time.sleep(0.01 * (attempt + 1))
    except BaseException as exc:
        errors.append(exc)
    finally:
        connections.close_all()


def test_fifty_producers_while_workers_drain(tmp_path: Path, long_run: bool) -> None:
    per = 2_000 if long_run else 200
    total = PRODUCERS * per
    mq.create_queue("drain", lock_duration=10)
    fleet = Fleet(tmp_path, FLEET)
    sent: dict[str, int] = {}
    errors: list[BaseException] = []
    t0 = time.monotonic()
    try:
        for _ in range(3):
            fleet.start("-q", "drain", "-c", "4")
        threads = [
            threading.Thread(target=produce, args=(p, per, sent, errors)) for p in range(PRODUCERS)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        produced_s = time.monotonic() - t0
        assert not errors, errors[:3]
        wait_until(
            lambda: mq.stats("drain").totals["completed"] >= total,
            total / 50,
            what="drained",
        )
        for proc in fleet.alive():
            assert fleet.terminate(proc) == 0, fleet.output(proc)
    finally:
        fleet.cleanup()
    elapsed = time.monotonic() - t0
    assert len(sent) == total and len(set(sent.values())) == total
    records = fleet.deliveries("drain")
    assert {r["seq"] for r in records} == set(sent.values())
    settled = receipts()
    completes = Counter(
        r["seq"] for r in records for v, _t in settled.get(r["token"], []) if v == "complete"
    )
    assert set(completes.values()) == {1} and len(completes) == total
    t = check_totals("drain")
    assert t["enqueued"] == total and t["completed"] == total, t
    print(
        f"\nload on {connection.vendor}: {PRODUCERS} producers x {per} = {total} sent in "
        f"{produced_s:.1f}s while draining; all completed after {elapsed:.1f}s; "
        f"{len(records)} deliveries"
    )
