"""Idle workers are woken by NOTIFY on PostgreSQL: measure send -> handler start."""

from __future__ import annotations

import statistics
import time
from typing import Any

import pytest
from django.db import transaction

import django_mqlite as mq
from django_mqlite.models import Worker
from tests.support.procs import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("needs_notify")]


# The worker's fallback poll, in these tests: far slower than any wait below, so a
# worker that reacts in time was woken by NOTIFY (remove the NOTIFY and they fail).
SLOW_POLL_S = "60"


@pytest.fixture(autouse=True)
def slow_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MQLITE_TEST_IDLE_POLL_S", SLOW_POLL_S)


def test_notify_wakes_an_idle_worker(workers: Any) -> None:
    mq.create_queue("work")
    mq.create_queue("slow")
    proc = workers.start()
    wait_for(lambda: Worker.objects.filter(stopped_at=None).exists())
    time.sleep(0.5)  # past the worker's first (empty) claim: it is asleep now
    latencies = []
    for n in range(3):
        sent_at = time.time()
        seq = mq.send("work", {"n": n})
        start = wait_for(lambda seq=seq: workers.events("start", seq=seq), timeout=10, every=0.005)
        latencies.append((start[0]["t"] - sent_at) * 1000)
    print(
        "\nNOTIFY wake-up latency send -> handler start: "
        f"median {statistics.median(latencies):.1f} ms, max {max(latencies):.1f} ms "
        f"({', '.join(f'{x:.1f}' for x in latencies)})"
    )
    # Polling alone would take a minute here; no tight timing on a shared machine.
    assert statistics.median(latencies) < 5000
    code, _out, err = workers.stop(proc)
    assert code == 0, err


def test_rolled_back_send_wakes_nobody(workers: Any) -> None:
    mq.create_queue("work")
    mq.create_queue("slow")
    proc = workers.start()
    wait_for(lambda: Worker.objects.filter(stopped_at=None).exists())
    time.sleep(0.5)  # past the worker's first (empty) claim: it is asleep now
    with pytest.raises(RuntimeError), transaction.atomic():
        mq.send("work", {"n": 1})
        raise RuntimeError("roll back")
    seq = mq.send("work", {"n": 2})
    wait_for(lambda: workers.events("done", seq=seq), timeout=10)
    assert [e["seq"] for e in workers.events("start")] == [seq]
    code, _out, err = workers.stop(proc)
    assert code == 0, err
