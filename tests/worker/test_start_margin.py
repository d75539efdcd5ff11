"""A handler never starts a prefetched delivery whose lease is (nearly) spent: a worker
paused past its leases (SIGSTOP, a VM pause) releases them, without counting an
attempt, instead of running side effects another worker may already have run
(``django_mqlite/worker/prefetch.py``, "Start margin")."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.engine import settle
from django_mqlite.worker import Worker, background, runner, settlement
from django_mqlite.worker.prefetch import start_margin_s
from tests.support import dbfaults
from tests.support.procs import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_margin_is_a_tenth_of_the_lease_at_least_a_second_at_most_a_quarter() -> None:
    assert start_margin_s(60) == 6
    assert start_margin_s(5) == 1
    assert start_margin_s(2) == 0.5
    assert start_margin_s(30) == 3


@override_settings(MQLITE={"WORKER_STALE_AFTER": 3600})  # the heartbeat runs on real time
def test_a_worker_paused_past_its_leases_starts_no_stale_handler(
    clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five messages under 30 s leases: one runs, four wait for the only thread. The
    worker is 'paused' (its renewals stop) while 28 s pass: the four have 2 s left, less
    than the 3 s margin, so none is started; each is released with its attempt given
    back, claimed again and run once."""
    mq.create_queue("hold", lock_duration=30)
    mq.send_batch("hold", [mq.OutMessage(i) for i in range(5)])
    started, release = threading.Event(), threading.Event()
    runs: list[tuple[int, int]] = []
    lease_left: list[float] = []

    def handle(msg: mq.Received) -> None:
        runs.append((msg.seq, msg.delivery_count))
        assert msg.locked_until is not None
        lease_left.append((msg.locked_until - clock.now()).total_seconds())
        if len(runs) == 1:
            started.set()
            release.wait(30)

    registry = Registry()
    registry.register("hold", handle)
    worker = Worker(["hold"], burst=True, reaper=False, install_signals=False, registry=registry)
    worker.prefetch.observe(0.001)  # short handlers so far: prefetch all five
    paused = threading.Event()
    renew = settlement.renew_due
    monkeypatch.setattr(
        settlement,
        "renew_due",
        lambda *a, **k: None if paused.is_set() else renew(*a, **k),
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        assert started.wait(30)
        wait_for(lambda: sum(m.state == "locked" for m in mq.peek("hold")) == 5, what="5 held")
        paused.set()
        clock.advance(28)
        release.set()  # the thread is free: the four waiting ones are stale now
        wait_for(lambda: worker.pool.stale_skipped == 4, what="four released unstarted")
        paused.clear()
    finally:
        release.set()
        thread.join(30)
    assert sorted(s for s, _ in runs) == sorted({s for s, _ in runs}), runs  # each once
    assert len(runs) == 5 and all(count == 1 for _, count in runs), runs  # no attempt lost
    # Every start had at least the margin left: the four ran from a fresh claim.
    assert min(lease_left) >= start_margin_s(30), lease_left
    totals = mq.stats("hold").totals
    assert totals["completed"] == 5 and totals["reclaimed"] == 0, totals


@override_settings(MQLITE={"WORKER_STALE_AFTER": 3600})
def test_a_pause_right_after_the_claim_commits_starts_nothing_of_it(
    clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker is 'paused' between the claim's commit and reading its own clock (the
    engine's clock moves 40 s inside ``receive``, past the 30 s leases): the leases end
    when their rows say, so none of that batch is started on it (they come back as any
    lease that ran out does); the others run once each."""
    mq.create_queue("late", lock_duration=30)
    mq.send_batch("late", [mq.OutMessage(i) for i in range(3)])
    sent = [m.seq for m in mq.peek("late")]
    runs: list[tuple[int, int]] = []
    registry = Registry()
    registry.register("late", lambda msg: runs.append((msg.seq, msg.delivery_count)))
    real_receive = runner.receive
    paused: list[int] = []  # the seqs of the batch claimed just before the pause

    def receive_then_pause(*args: Any, **kwargs: Any) -> list[mq.Received]:
        got = real_receive(*args, **kwargs)
        if got and not paused:
            paused.extend(m.seq for m in got)
            clock.advance(40)
        return got

    monkeypatch.setattr(runner, "receive", receive_then_pause)
    worker = Worker(["late"], burst=True, reaper=False, install_signals=False, registry=registry)
    thread = threading.Thread(target=worker.run)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    assert paused and worker.pool.stale_skipped == len(paused), (paused, worker.pool.stale_skipped)
    # None of the paused batch ran on its spent lease: if one ran at all, it was from a
    # later claim, after the lease ran out and the engine returned it (a receive returns
    # its queue's expired leases), so as its second delivery. The rest ran once each.
    assert all(count >= 2 for seq, count in runs if seq in paused), (runs, paused)
    assert sorted(s for s, c in runs if s not in paused) == sorted(set(sent) - set(paused))
    assert all(count == 1 for seq, count in runs if seq not in paused), runs


def test_a_pause_inside_the_check_after_its_clock_reading_is_after_the_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``start_checked_at`` is the clock reading the lease was checked against: a
    handler thread paused after the lease check read the time (a SIGSTOP there, even
    before the check returns, is one between the check and the start) records a check
    time before the pause, so the fault suite's history explains that start by the
    freeze. Read after the check, it fell after the pause, and the freeze explained
    nothing (the fault suite's "unexplained duplicate side effects", its check time
    equal to its start)."""
    from django_mqlite.worker import pool as pool_module

    mq.create_queue("checked")
    mq.send("checked", 1)
    read_at: list[float] = []
    real_now_ms = pool_module.now_ms

    def now_ms_then_pause() -> int:
        got = real_now_ms()
        if threading.current_thread().name.startswith("mqlite-handler"):
            read_at.append(time.time())
            time.sleep(0.05)  # paused right after the lease check read the clock
        return got

    monkeypatch.setattr(pool_module, "now_ms", now_ms_then_pause)
    checked: list[float | None] = []
    registry = Registry()
    registry.register("checked", lambda msg: checked.append(msg.start_checked_at))
    worker = Worker(["checked"], burst=True, reaper=False, install_signals=False, registry=registry)
    thread = threading.Thread(target=worker.run)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    assert len(checked) == 1 and len(read_at) == 1, (checked, read_at)
    assert checked[0] is not None and checked[0] <= read_at[0], (checked, read_at)


@override_settings(MQLITE={"WORKER_STALE_AFTER": 1.0, "HEARTBEAT_INTERVAL": 0.1})
def test_messages_claimed_before_a_pause_past_the_stale_limit_are_not_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The leases (30 s) still have time, but the worker's heartbeats stopped for longer
    than WORKER_STALE_AFTER: the stale-worker pass may have reclaimed what it held, so
    the four waiting messages are released, not started."""
    mq.create_queue("gap", lock_duration=30)
    mq.send_batch("gap", [mq.OutMessage(i) for i in range(5)])
    started, release, beating = threading.Event(), threading.Event(), threading.Event()
    beating.set()
    runs: list[tuple[int, int]] = []

    def handle(msg: mq.Received) -> None:
        runs.append((msg.seq, msg.delivery_count))
        if len(runs) == 1:
            started.set()
            release.wait(30)

    real_heartbeat = background.heartbeat

    def heartbeat(*args: Any, **kwargs: Any) -> None:
        beating.wait(30)
        real_heartbeat(*args, **kwargs)

    monkeypatch.setattr(background, "heartbeat", heartbeat)
    registry = Registry()
    registry.register("gap", handle)
    worker = Worker(["gap"], burst=True, reaper=False, install_signals=False, registry=registry)
    worker.prefetch.observe(0.001)
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        assert started.wait(30)
        wait_for(lambda: sum(m.state == "locked" for m in mq.peek("gap")) == 5, what="5 held")
        beating.clear()
        time.sleep(1.2)  # no heartbeat for longer than the stale limit
        beating.set()
        time.sleep(0.3)  # the next beat notes the gap
        release.set()
        wait_for(lambda: worker.pool.stale_skipped == 4, what="four released unstarted")
    finally:
        beating.set()
        release.set()
        thread.join(30)
    assert len(runs) == 5 and all(count == 1 for _, count in runs), runs
    assert mq.stats("gap").totals["completed"] == 5


def test_a_worker_resumed_from_sigstop_starts_no_stale_handler(workers: Any) -> None:
    """A real ``runworker`` holding prefetched messages is frozen (SIGSTOP) past their
    2 s leases, three times; meanwhile the test reclaims and completes what it held.
    Resumed (SIGCONT), the worker starts none of them."""
    mq.create_queue("work", lock_duration=2)
    # 20 ms handlers: the worker's main thread settles and claims between idle waits, so
    # a SIGSTOP can land outside its transactions (freeze_holding_prefetched). With 5 ms
    # ones it settled back to back, and on MariaDB, where a settlement is a transaction
    # of several statements, nearly every stop landed inside one (100 of 100 tries).
    mq.send_batch("work", [mq.OutMessage({"sleep": 0.02}) for _ in range(3000)])
    proc = workers.start("-q", "work", "-c", "2", overrides={"WORKER_STALE_AFTER": 3600})
    taken: set[int] = set()
    rounds: list[tuple[float, float, set[int]]] = []
    try:
        wait_for(lambda: len(workers.events("done")) >= 30, what="the worker under way")
        for _ in range(3):
            held = freeze_holding_prefetched(proc, threads=2)
            frozen_at = time.time()
            time.sleep(2.5)  # every lease it holds runs out
            mq.reap()
            got = mq.receive("work", max_messages=100)
            for m in got:
                assert m.lock_token is not None
                if m.seq in held:
                    m.complete()
                    taken.add(m.seq)
                else:
                    settle.release("work", [(m.seq, m.lock_token)])
            resumed_at = time.time()
            proc.send_signal(signal.SIGCONT)
            rounds.append((frozen_at, resumed_at, held))
            time.sleep(1.5)  # time to start whatever it still held
    finally:
        proc.send_signal(signal.SIGCONT)
        workers.stop(proc)
    starts = workers.events("start")
    stale = []
    for frozen_at, resumed_at, held in rounds:
        before = {e["seq"] for e in starts if e["t"] < frozen_at}
        # A start whose margin check passed before the freeze (a fresh lease) and whose
        # handler began after SIGCONT was stopped between the two: that window is not
        # the rule's to close (a lease can run out mid-handler too; settles are fenced).
        # What the rule forbids is a check made after the resume passing.
        stale += [
            e
            for e in starts
            if e["t"] >= resumed_at
            and e["seq"] in held & taken
            and e["seq"] not in before
            and not (e["checked"] is not None and e["checked"] < frozen_at)
        ]
    assert taken, "the test completed nothing while the worker was frozen"
    assert stale == [], f"{len(stale)} stale handler(s) started after SIGCONT: {stale[:3]}"


def freeze_holding_prefetched(proc: Any, threads: int) -> set[int]:
    """SIGSTOP ``proc`` at a moment it holds more messages than it runs (some wait for
    a thread) and has no transaction open; returns the seqs it holds.

    Between tries the worker runs for 0.2 s: long enough that its handler times are
    mostly measured without a stop inside them. Resumed for only a few milliseconds, it
    timed most handlers across the next stop, its prefetch (sized by those times) fell
    to one message per thread, and every later try found nothing prefetched."""
    seen = []
    for _ in range(100):
        proc.send_signal(signal.SIGSTOP)
        time.sleep(0.05)  # let the stop land
        held = {m.seq for m in mq.peek("work", limit=1000) if m.state == "locked"}
        busy = in_a_transaction()
        if len(held) > threads and not busy:
            return held
        seen.append((len(held), busy))
        proc.send_signal(signal.SIGCONT)
        time.sleep(0.2)
    raise AssertionError(f"the worker never held prefetched messages: (held, busy) {seen}")


def in_a_transaction() -> bool:
    """True when another connection to the test database sits inside a transaction,
    i.e. the frozen worker was stopped mid-settle: the reclaim below would wait on its
    row locks until SIGCONT, which comes only after the reclaim (PostgreSQL, MariaDB), or
    fail on its write lock (SQLite). Such a freeze is retried."""
    return dbfaults.another_transaction_open(connection)


@override_settings(MQLITE={"WORKER_STALE_AFTER": 3600})
@pytest.mark.parametrize("slow_release", [False, True])
def test_the_margin_is_checked_after_the_connection_check(
    clock: Any, monkeypatch: pytest.MonkeyPatch, slow_release: bool
) -> None:
    """The handler thread's connection check (``db_health.refresh``: a probe, perhaps a
    reconnect) is where a thread can block, or a process be frozen, between taking a
    delivery and starting it. Here the lease runs (nearly) out during that check: the
    margin, checked after it, sees that and releases the delivery; it runs once, from a
    fresh claim. ``slow_release``: the release takes a while to be written, and the
    burst worker, which looks meanwhile, still holds the message and does not end."""
    from django_mqlite.worker import db_health
    from django_mqlite.worker import pool as pool_module

    if slow_release:
        real_release = pool_module.settle.release

        def release(*args: Any, **kwargs: Any) -> Any:
            time.sleep(0.3)
            return real_release(*args, **kwargs)

        monkeypatch.setattr(pool_module.settle, "release", release)

    mq.create_queue("late", lock_duration=30)
    mq.send("late", 1)
    runs: list[tuple[int, float]] = []

    def handle(msg: mq.Received) -> None:
        assert msg.locked_until is not None
        runs.append((msg.delivery_count, (msg.locked_until - clock.now()).total_seconds()))

    paused = threading.Event()
    renew = settlement.renew_due
    monkeypatch.setattr(
        settlement, "renew_due", lambda *a, **k: None if paused.is_set() else renew(*a, **k)
    )
    real_refresh = db_health.refresh
    blocked = []

    def refresh() -> int:
        if threading.current_thread().name.startswith("mqlite-handler") and not blocked:
            blocked.append(1)
            paused.set()
            clock.advance(28)  # 2 s of the 30 s lease left: under the 3 s margin
            paused.clear()
        return real_refresh()

    monkeypatch.setattr(db_health, "refresh", refresh)
    registry = Registry()
    registry.register("late", handle)
    # With a second thread free, the main loop keeps looking while the release is written.
    worker = Worker(
        ["late"],
        burst=True,
        reaper=False,
        install_signals=False,
        registry=registry,
        concurrency=2 if slow_release else 1,
    )
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        wait_for(lambda: len(runs) == 1, what="the message run")
    finally:
        thread.join(30)
    assert worker.pool.stale_skipped == 1
    assert runs[0][0] == 1 and runs[0][1] >= start_margin_s(30), runs  # attempt given back
    assert mq.stats("late").totals["completed"] == 1
