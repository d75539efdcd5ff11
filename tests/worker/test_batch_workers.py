"""Batches drained by real worker processes, one of them SIGKILLed mid-batch: every
batch's callbacks are enqueued exactly once, as its children's outcomes say, though
the killed worker's children came back by its stale heartbeat and ran again."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import django_mqlite as mq
from tests.support.procs import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST_HEARTBEAT = {"HEARTBEAT_INTERVAL": 0.2, "WORKER_STALE_AFTER": 1.0, "REAP_INTERVAL": 0.2}
BATCHES = 30


def test_sigkill_mid_batch_fires_each_callback_once(workers: Any) -> None:
    mq.create_queue("work", lock_duration=600)
    mq.create_queue("slow")
    mq.create_queue("callbacks")  # no consumer: the callbacks stay to be counted
    failing: set[int] = set()
    for n in range(BATCHES):
        with mq.batch(
            on_complete=mq.Callback("callbacks", "complete"),
            on_success=mq.Callback("callbacks", "success"),
            on_failure=mq.Callback("callbacks", "failure"),
        ) as b:
            for i in range(4):
                body: dict[str, Any] = {"sleep": 0.05}
                if n % 5 == 0 and i == 3:
                    body = {"reject": "poison"}
                b.send("work", body)
        if n % 5 == 0:
            failing.add(b.id)
    victim = workers.start("--concurrency", "4", overrides=FAST_HEARTBEAT)
    wait_for(lambda: len(workers.events("done")) >= 10, timeout=60, what="ten children done")
    victim.kill()
    victim.wait()
    survivor = workers.start("--concurrency", "4", overrides=FAST_HEARTBEAT)
    wait_for(
        lambda: mq.stats("callbacks").counts.get("active", 0) >= BATCHES + BATCHES,
        timeout=90,
        what="every batch's callbacks",
    )
    code, _out, err = workers.stop(survivor)
    assert code == 0, err
    seen = Counter(
        (p.properties["batch_id"], p.properties["batch_callback"])
        for p in mq.peek("callbacks", limit=1000)
    )
    batch_ids = {bid for bid, _ in seen}
    assert len(batch_ids) == BATCHES
    for bid in batch_ids:
        assert seen[(bid, "on_complete")] == 1
        assert seen[(bid, "on_success")] == (0 if bid in failing else 1)
        assert seen[(bid, "on_failure")] == (1 if bid in failing else 0)
        assert mq.get_batch(bid).state == "finished"
    assert sum(seen.values()) == 2 * BATCHES
    assert mq.stats("work").totals["reclaimed"] >= 1  # the kill did leave children behind
