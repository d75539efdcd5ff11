"""SIGKILL of a worker in the middle of a prefetched batch: the worker holds several
claimed messages (waiting for its thread), some finished ones waiting for the group
commit, and one running. Nothing is lost, no message ever has two live leases, and
each message completes exactly once."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings

import django_mqlite as mq

from .harness import Fleet, check_totals, lease_violations, live_messages, receipts, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FLEET = {"HEARTBEAT_INTERVAL": 0.2, "WORKER_STALE_AFTER": 1.0, "REAP_INTERVAL": 0.2}
N = 300
# The held leases come back through lease expiry (the reap below waits longer than that
# for a stale worker), so the oracle's rule holds: a lease ends no earlier than its
# locked_until unless it was settled.
LOCK_S = 2


def locked() -> int:
    return sum(1 for m in live_messages("crash") if m.state == "locked")


def test_sigkill_mid_batch_loses_nothing_and_never_double_leases(tmp_path: Path) -> None:
    mq.create_queue("crash", lock_duration=LOCK_S)
    # 5 ms per first delivery: the prefetch policy then holds about 20 per claim.
    seqs = mq.send_batch(
        "crash", [mq.OutMessage({}, properties={"sleep": [1], "sleep_s": 0.005}) for _ in range(N)]
    )
    fleet = Fleet(tmp_path, FLEET)
    try:
        worker = fleet.start("-q", "crash", "--no-reaper")
        wait_until(lambda: len(fleet.deliveries("crash")) >= N // 3, 60, what="a third run")
        fleet.kill(worker)
        held = locked()
        assert held > 1, f"the worker held {held} message(s): no batch was prefetched"
        with override_settings(MQLITE={"QUEUES": {}, "WORKER_STALE_AFTER": 600}):
            wait_until(lambda: mq.reap() is not None and not locked(), 30, every=0.2)
        again = fleet.start("-q", "crash", "--burst", "--no-reaper")
        assert again.wait(120) == 0, fleet.output(again)
    finally:
        fleet.cleanup()
    assert live_messages("crash") == []
    deliveries = fleet.deliveries("crash")
    assert {d["seq"] for d in deliveries} == set(seqs), "a message was never delivered"
    bad = lease_violations(deliveries, receipts(), LOCK_S * 1000)
    assert bad == [], bad[:5]
    t = check_totals("crash")
    assert t["completed"] == N and t["reclaimed"] == held, t
