"""Crash injection in a worker: SIGKILL mid-handler and mid-settle. The orphaned lock
returns to ``active`` (through lease expiry, or the stale-worker pass), or to the DLQ
when that was the message's last allowed delivery: a crash never buys an extra
delivery. Mid-settle is made deterministic by holding the database lock the settlement
needs (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL and MariaDB: the message row ``FOR
UPDATE``; ``tests/support/dbfaults.py``), killing
the worker while its settlement waits, then letting go.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings

import django_mqlite as mq
from tests.support.dbfaults import message_locked, settlement_waiting

from .harness import Fleet, check_totals, receipts, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FLEET = {"HEARTBEAT_INTERVAL": 0.2, "WORKER_STALE_AFTER": 1.0, "REAP_INTERVAL": 0.2}
MAX = 2


def state(seq: int) -> mq.Peeked | None:
    got = [m for m in mq.peek("crash", limit=10) if m.seq == seq]
    return got[0] if got else None


def reclaimed_by(path: str) -> Any:
    """Reap until the message is no longer locked; returns the pass that freed it."""
    done: list[str] = []

    def step() -> bool:
        counts = mq.reap()
        done.extend(k for k in ("expired_locks", "stale_worker_locks") if counts[k])
        return bool(done)

    with override_settings(MQLITE={"QUEUES": {}, "WORKER_STALE_AFTER": 1.0}):
        wait_until(step, 30, every=0.2, what="the orphaned lock reclaimed")
    assert done == [path], done


def delivered(fleet: Fleet, seq: int, delivery: int) -> bool:
    return any(d["seq"] == seq and d["delivery"] == delivery for d in fleet.deliveries("crash"))


@pytest.mark.parametrize("reclaim", ["lease", "stale_worker"])
def test_sigkill_mid_handler_returns_the_lock_then_buries_at_the_last_delivery(
    tmp_path: Path, reclaim: str
) -> None:
    # A short lease comes back by expiry; a long one only through the stale heartbeat.
    lease_s = 0.5 if reclaim == "lease" else 600
    mq.create_queue("crash", lock_duration=lease_s, max_delivery_count=MAX)
    seq = mq.send("crash", {}, properties={"hang": [1, 2]})
    fleet = Fleet(tmp_path, FLEET)
    try:
        for delivery in (1, 2):
            worker = fleet.start("-q", "crash", "--no-reaper")
            wait_until(lambda d=delivery: delivered(fleet, seq, d), 30, what="a delivery")
            fleet.kill(worker)
            m = state(seq)
            assert m is not None and m.state == "locked" and m.delivery_count == delivery
            reclaimed_by("expired_locks" if reclaim == "lease" else "stale_worker_locks")
            m = state(seq)
            assert m is not None and m.delivery_count == delivery
            if delivery < MAX:
                assert m.state == "active"
            else:
                assert m.state == "dead_lettered"
                assert m.dead_letter_reason == "MaxDeliveryCountExceeded"
    finally:
        fleet.cleanup()
    assert [d["delivery"] for d in fleet.deliveries("crash")] == [1, 2]  # never a third
    t = check_totals("crash")
    assert t["delivered"] == 2 and t["reclaimed"] == 2 and t["exhausted"] == 1, t


@pytest.mark.parametrize("verb", ["complete", "abandon"])
@pytest.mark.parametrize("last", [False, True], ids=["retry", "last_delivery"])
def test_sigkill_mid_settle_never_buys_an_extra_delivery(
    tmp_path: Path, verb: str, last: bool
) -> None:
    mq.create_queue("crash", lock_duration=5, max_delivery_count=1 if last else MAX)
    # The first attempt runs 1.5 s: time for the test to take the lock its settlement
    # (the worker's batched complete, or the handler thread's abandon) will need.
    props: dict[str, Any] = {"sleep": [1], "sleep_s": 1.5}
    if verb == "abandon":
        props["fail"] = [1]  # after the sleep
    seq = mq.send("crash", {}, properties=props)
    fleet = Fleet(tmp_path, FLEET)
    try:
        worker = fleet.start("-q", "crash", "--no-reaper")
        wait_until(lambda: delivered(fleet, seq, 1), 30, what="delivery 1")
        with message_locked(connection, seq):
            if settlement_waiting(connection) is None:
                time.sleep(2.5)  # the handler is done; its settlement waits for the lock
            else:
                wait_until(
                    lambda: bool(settlement_waiting(connection)),
                    30,
                    what="settlement waiting on the lock",
                )
            fleet.kill(worker)
        token = fleet.deliveries("crash")[0]["token"]
        assert token not in receipts(), "the killed settlement committed"
        reclaimed_by("stale_worker_locks")  # its lease (5 s) has not run out yet
        m = state(seq)
        assert m is not None and m.delivery_count == 1
        if last:
            assert m.state == "dead_lettered"
            assert m.dead_letter_reason == "MaxDeliveryCountExceeded"
        else:
            assert m.state == "active"
            again = fleet.start("-q", "crash", "--burst")
            assert again.wait(60) == 0, fleet.output(again)
            assert state(seq) is None
    finally:
        fleet.cleanup()
    deliveries = [d["delivery"] for d in fleet.deliveries("crash")]
    assert deliveries == ([1] if last else [1, 2])
    t = check_totals("crash")
    assert t["completed"] == (0 if last else 1) and t["reclaimed"] == 1, t
