"""``runworker --burst`` drains what is there and exits 0."""

from __future__ import annotations

import time
from typing import Any

import pytest

import django_mqlite as mq

pytestmark = pytest.mark.django_db(transaction=True)


def test_burst_drains_and_exits_zero(workers: Any) -> None:
    mq.create_queue("work")
    mq.create_queue("slow")
    seqs = mq.send_batch("work", [mq.OutMessage({"n": n}) for n in range(20)])
    proc = workers.start("--burst", "--concurrency", "4", "--queue", "work")
    code, _out, err = workers.finish(proc)
    assert code == 0, err
    done = sorted(e["seq"] for e in workers.events("done"))
    assert done == sorted(seqs)
    stats = mq.stats("work")
    assert stats.counts["active"] == 0 and stats.counts["locked"] == 0
    assert stats.totals["completed"] == 20
    assert "burst" in err


def test_burst_on_empty_queues_exits_at_once(workers: Any) -> None:
    mq.create_queue("work")
    mq.create_queue("slow")
    code, _out, err = workers.finish(workers.start("--burst"))
    assert code == 0, err
    assert workers.events() == []


def test_a_burst_ends_only_on_an_empty_claim_made_while_nothing_ran() -> None:
    """A handler that snoozes (no delay) gives its message back as it ends. When it ends
    after the worker's claim was skipped or found nothing (the one thread was busy) and
    before the out-of-work check, the burst claims again instead of ending with the
    message left behind (seen once in CI under load, with a snoozing task)."""
    from django_mqlite.consumers import Registry
    from django_mqlite.worker import Worker

    mq.create_queue("snooze")
    mq.send("snooze", "x")
    runs: list[int] = []

    def handle(msg: mq.Received) -> None:
        runs.append(msg.delivery_count)
        if len(runs) == 1:
            raise mq.Snooze(0)

    registry = Registry()
    registry.register("snooze", handle)
    worker = Worker(["snooze"], burst=True, reaper=False, install_signals=False, registry=registry)
    real = worker._claim

    def claim(only: set[str] | None = None) -> int:
        busy = worker.pool.busy()
        got = real(only)
        if not got and busy:
            # The race, made certain: the handler ends after the claim, before the check.
            deadline = time.monotonic() + 5
            while worker.pool.busy() and time.monotonic() < deadline:
                time.sleep(0.005)
        return got

    worker._claim = claim  # type: ignore[method-assign]
    worker.run()
    assert runs == [1, 1]  # run again after its snooze, which used up no delivery
    assert mq.stats("snooze").totals["completed"] == 1
