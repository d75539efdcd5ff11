"""The worker with no flags claims in batches and completes in batches (adaptive
prefetch, group commit), and keeps every held lease (running or prefetched) alive on
the engine's clock."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.engine import settle
from django_mqlite.worker import Worker, runner
from django_mqlite.worker.prefetch import GROUP_COMMIT_S, MAX_BATCH, Prefetch, flush_due
from tests.support.inprocess import burst
from tests.support.procs import wait_for


def test_prefetch_starts_at_one_per_thread_and_follows_handler_times() -> None:
    p = Prefetch(threads=4)
    assert p.target() == 4 and p.want(pending=0, running=0) == 4
    p.observe(0.001)  # 1 ms handlers: 100 ms of work is far more than a batch
    assert p.target() == MAX_BATCH
    assert p.want(pending=0, running=4) == MAX_BATCH - 4
    assert p.want(pending=MAX_BATCH - 10, running=4) == 0  # most of it still waiting
    for _ in range(50):
        p.observe(0.5)  # slow handlers: one per free thread
    assert p.target() == 4
    assert p.want(pending=0, running=3) == 1 and p.want(pending=1, running=3) == 0


def test_group_commit_waits_a_few_ms_unless_the_batch_is_full_or_nothing_runs() -> None:
    assert not flush_due(0, 1.0, 0)
    assert not flush_due(3, GROUP_COMMIT_S / 2, unfinished=5)
    assert flush_due(3, GROUP_COMMIT_S, unfinished=5)
    assert flush_due(MAX_BATCH, 0.0, unfinished=5)
    assert flush_due(1, 0.0, unfinished=0)


class Counting:
    """Wraps an engine verb and records the size of each call's batch."""

    def __init__(self, func: Any, size: Any) -> None:
        self.func, self.size, self.calls = func, size, []  # type: ignore[var-annotated]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        got = self.func(*args, **kwargs)
        self.calls.append(self.size(args, kwargs, got))
        return got


@pytest.mark.django_db(transaction=True)
def test_one_thread_claims_and_completes_short_handlers_in_batches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    n = 400
    mq.create_queue("pf")
    mq.send_batch("pf", [mq.OutMessage(i) for i in range(n)])
    claims = Counting(runner.receive, lambda a, k, got: len(got))
    completes = Counting(settle.complete_many, lambda a, k, got: len(got))
    monkeypatch.setattr(runner, "receive", claims)
    monkeypatch.setattr(settle, "complete_many", completes)
    seen: list[int] = []
    registry = Registry()
    registry.register("pf", lambda msg: seen.append(msg.seq))
    burst(registry, "pf")
    assert len(seen) == n and mq.stats("pf").totals["completed"] == n
    assert sum(claims.calls) == n and sum(completes.calls) == n
    # Without prefetch one thread claims one message per claim (n claims), and without
    # batching each completion is a call of its own (n calls). How large the batches
    # grow depends on the machine's pace (a loaded, slow one flushes smaller batches:
    # 52 calls for 200 seen in CI), so the bound is half a call a message.
    assert max(claims.calls) > 8 and len(claims.calls) < n / 2, claims.calls
    assert len(completes.calls) < n / 2, completes.calls


@pytest.mark.django_db(transaction=True)
@override_settings(MQLITE={"WORKER_STALE_AFTER": 3600})  # the heartbeat runs on real time
def test_running_and_prefetched_leases_are_renewed_on_the_engine_clock(clock: Any) -> None:
    """The lease is 30 s of frozen time; the test moves the clock 70 s while the handler
    holds the first message and the others wait for the (only) thread. Renewals follow
    the clock, so nothing is reclaimed; without them the reaper takes all of them."""
    mq.create_queue("hold", lock_duration=30)
    mq.send_batch("hold", [mq.OutMessage(i) for i in range(5)])
    started, release = threading.Event(), threading.Event()

    def handle(msg: mq.Received) -> None:
        started.set()
        release.wait(30)

    registry = Registry()
    registry.register("hold", handle)
    worker = Worker(["hold"], burst=True, reaper=False, install_signals=False, registry=registry)
    worker.prefetch.observe(0.001)  # short handlers so far: prefetch all five
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        assert started.wait(30)
        wait_for(lambda: sum(m.state == "locked" for m in mq.peek("hold")) == 5, what="5 held")
        for _ in range(7):
            clock.advance(10)
            worker._wake()
            wait_for(lambda: _all_leases_ahead(clock, 15), what="renewed on the clock")
            reaped = mq.reap()
            assert reaped["expired_locks"] == reaped["stale_worker_locks"] == 0
    finally:
        release.set()
        thread.join(30)
    totals = mq.stats("hold").totals
    assert totals["completed"] == 5 and totals["reclaimed"] == 0 and totals["delivered"] == 5


def _all_leases_ahead(clock: Any, seconds: float) -> bool:
    """Every held lease ends more than ``seconds`` after the (frozen) now."""
    held = [m for m in mq.peek("hold") if m.state == "locked"]
    return all(
        m.locked_until is not None and (m.locked_until - clock.now()).total_seconds() > seconds
        for m in held
    )


@pytest.mark.django_db(transaction=True)
@override_settings(MQLITE={"RETRY_BACKOFF_BASE": 60.0})
def test_failures_are_abandoned_in_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    n = 200
    mq.create_queue("fail", max_delivery_count=5)
    mq.send_batch("fail", [mq.OutMessage(i) for i in range(n)])
    batches = Counting(settle.abandon_many, lambda a, k, got: len(got))
    monkeypatch.setattr(settle, "abandon_many", batches)

    def handle(msg: mq.Received) -> None:
        raise ValueError("no")

    registry = Registry()
    registry.register("fail", handle)
    burst(registry, "fail")
    # One call a failure without batching; half as many at most with it (see above).
    assert sum(batches.calls) == n and len(batches.calls) < n / 2, batches.calls
    states = {p.state for p in mq.peek("fail", limit=n)}
    assert states == {"scheduled"}  # each parked for its retry, its error kept
    t = mq.stats("fail").totals
    assert t["abandoned"] == t["retried"] == n
