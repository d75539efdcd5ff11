"""The standby processes of ``runworker --processes`` (``worker/prefork.py``): after a
claim that found nothing, a standby worker leaves the wake-ups to the first process and
claims at its poll or when the first tells it of a backlog (``Siblings``); the first
tells when a claim of its took all it asked for. The poll is held at a minute, so a
claim that only a poll would make fails the test."""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator

import pytest

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.engine import listen, send_one, wakeup
from django_mqlite.worker import Worker, runner
from django_mqlite.worker.prefork import TELL_EVERY_S, Siblings
from tests.support.features import requires
from tests.support.inprocess import Running, first_and_standby
from tests.support.procs import wait_for

pytestmark = [
    pytest.mark.django_db(transaction=True),
    requires("wake_ups"),
    pytest.mark.skipif(
        os.environ.get("MQLITE_TEST_DB") == "pgbouncer",
        reason="behind a transaction-pooling PgBouncer LISTEN hears nothing: the wake-up "
        "tests run on PostgreSQL directly",
    ),
]


@pytest.fixture(autouse=True)
def long_poll(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(send_one.Wake, "__call__", lambda self: None)
    monkeypatch.setattr(runner, "IDLE_MAX_LISTENING_S", 60.0)
    yield


def test_a_standby_worker_claims_when_told_not_on_every_wake_up() -> None:
    mq.create_queue("standby")
    done: list[int] = []
    registry = Registry()
    registry.register("standby", lambda msg: done.append(int(msg.body)))
    siblings = Siblings(1)
    worker = Worker(
        ["standby"],
        install_signals=False,
        registry=registry,
        reaper=False,
        periodic=False,
        standby=True,
        siblings=siblings,
    )
    with Running(worker):
        wait_for(lambda: not worker._found, timeout=10, what="its first, empty claim")
        mq.send("standby", 1)  # wakes the queue, as another process's send does
        time.sleep(1.0)
        assert done == []  # the first process's to take
        assert mq.peek("standby")[0].state == "active"  # not claimed
        siblings.tell()  # the first process found a backlog
        wait_for(lambda: done == [1], timeout=5, what="the claim after being told")


def test_the_first_process_tells_the_standby_of_a_backlog() -> None:
    mq.create_queue("first")
    done: list[int] = []
    registry = Registry()
    registry.register("first", lambda msg: done.append(int(msg.body)))
    siblings = Siblings(1)
    os.set_blocking(siblings._r, False)
    worker = Worker(["first"], install_signals=False, registry=registry, siblings=siblings)
    with Running(worker):
        # The backlog arrives once wake-ups work, so the tell is the woken path's (a
        # polling first process's: ``test_standby_polling``).
        wait_for(worker._woken, timeout=10, what="its wake-ups")
        mq.send_batch("first", [mq.OutMessage(i) for i in range(200)])
        wait_for(lambda: len(done) == 200, timeout=30, what="the backlog")
    told = os.read(siblings._r, 64)
    assert told and set(told) == {ord("!")}


def test_the_first_process_tells_nobody_of_a_single_message() -> None:
    mq.create_queue("single")
    done: list[int] = []
    registry = Registry()
    registry.register("single", lambda msg: done.append(int(msg.body)))
    siblings = Siblings(1)
    os.set_blocking(siblings._r, False)
    worker = Worker(["single"], install_signals=False, registry=registry, siblings=siblings)
    with Running(worker):
        time.sleep(0.5)
        mq.send("single", 1)
        wait_for(lambda: done == [1], timeout=10, what="the message")
    with pytest.raises(BlockingIOError):
        os.read(siblings._r, 64)


@pytest.mark.parametrize("standby", [True, False])
def test_a_standby_worker_polls_seldom_once_it_found_nothing(
    monkeypatch: pytest.MonkeyPatch, standby: bool
) -> None:
    """The poll that catches what time makes claimable is the first process's: a
    standby whose claim found nothing polls every ``STANDBY_POLL_S``, not every
    ``IDLE_MAX_LISTENING_S`` (each poll is a claim and a lease-expiry statement per
    queue: 0.8 transactions a second for two queues)."""
    monkeypatch.setattr(runner, "IDLE_MAX_LISTENING_S", 0.2)
    monkeypatch.setattr(runner, "STANDBY_POLL_S", 60.0)
    mq.create_queue("seldom")
    registry = Registry()
    registry.register("seldom", lambda msg: None)
    claims: list[str] = []
    real = runner.receive

    def receive(queue: str, **kwargs: object) -> object:
        claims.append(queue)
        return real(queue, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "receive", receive)
    worker = Worker(
        ["seldom"],
        install_signals=False,
        registry=registry,
        reaper=False,
        periodic=False,
        standby=standby,
        siblings=Siblings(1),
    )
    with Running(worker):
        wait_for(lambda: claims, timeout=10, what="the first claim")
        time.sleep(0.5)  # start-up's claims (before and once wake-ups work) are over
        started = len(claims)
        time.sleep(2.0)
    polls = len(claims) - started
    if standby:
        assert polls == 0, claims
    else:
        assert polls >= 5, claims  # the first process polls every 0.2 s here


def test_a_standby_claims_on_its_wake_ups_while_the_first_process_is_full() -> None:
    """The first process's only thread is busy with a slow message when the next one is
    sent: the first passes the wake-up on (``Worker._pass_on``) and the standby takes
    it at once instead of it waiting for the slow one to end (it waited, before
    ``Siblings.first_busy_for``: a process's cold first task held the next pickup for
    20-100 ms). The poll is held at a minute, so only the wake-up makes the standby
    claim. On SQLite the standby watches no commits of its own: the first's watcher
    hears for both."""
    mq.create_queue("passed")
    release = threading.Event()
    ran: dict[int, str] = {}

    def handle(msg: mq.Received) -> None:
        ran[int(msg.body)] = threading.current_thread().name
        if int(msg.body) == 1:
            release.wait(30)

    registry = Registry()
    registry.register("passed", handle)
    first, standby = first_and_standby(registry, "passed")
    try:
        with Running(first), Running(standby):
            wait_for(
                lambda: first._woken() and standby._woken() and not standby._found,
                timeout=10,
                what="both workers' wake-ups, and the standby's first, empty claim",
            )
            if listen.watched_file(first.using) is not None:
                assert first._watcher is not None and standby._watcher is None
            mq.send("passed", 1)
            wait_for(lambda: 1 in ran, timeout=10, what="the slow message's start")
            mq.send("passed", 2)
            wait_for(lambda: 2 in ran, timeout=5, what="the next message, while 1 runs")
            assert mq.peek("passed", limit=1)[0].state == "locked"  # 1 is still running
            release.set()
            wait_for(
                lambda: first.outcomes["completed"] + standby.outcomes["completed"] == 2,
                timeout=10,
                what="both completed",
            )
    finally:
        release.set()
    assert standby.claimed == 1 and first.claimed == 1, (first.claimed, standby.claimed)


def test_the_first_passes_a_wake_up_on_once_it_has_been_busy_long_enough(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``Worker._pass_on``: a wake-up that comes while every thread of the first process
    has been busy for less than ``FIRST_BUSY_S`` is looked at again then, not passed on
    (a trickle of quick tasks is the first's alone); it is passed on to the standby
    processes once the first has been busy that long, and only once; a later wake-up is
    passed on again; nothing is without a wake-up; a tell refused because the standby
    processes were told a moment ago is tried again when one may be made."""
    busy = {"for": 0.0}
    told: list[float] = []
    refuse = {"tell": False}

    class Shared(Siblings):
        def first_busy_for(self) -> float:
            return busy["for"]

        def tell(self) -> bool:
            if refuse["tell"]:
                return False
            told.append(time.monotonic())
            return True

    registry = Registry()
    registry.register("q", lambda msg: None)
    worker = Worker(["q"], install_signals=False, registry=registry, siblings=Shared(1))
    worker._heard = {"q": 0}
    heard = {"q": 0}
    monkeypatch.setattr(wakeup, "generations", lambda keys: {k: heard[k] for k in keys})
    now = time.monotonic()
    busy["for"] = runner.FIRST_BUSY_S
    worker._pass_on(now)
    assert told == [] and worker._first_check_at == math.inf  # no wake-up: nothing
    heard["q"] = 1  # woken
    busy["for"] = runner.FIRST_BUSY_S / 3
    worker._pass_on(now)
    assert told == []
    assert worker._first_check_at == pytest.approx(now + runner.FIRST_BUSY_S * 2 / 3)
    busy["for"] = runner.FIRST_BUSY_S
    worker._pass_on(worker._first_check_at)
    assert len(told) == 1
    assert worker._first_check_at == math.inf  # the look that was due is done
    worker._pass_on(now)
    assert len(told) == 1  # that wake-up was passed on already
    heard["q"] = 2  # another
    refuse["tell"] = True
    worker._pass_on(now)
    assert len(told) == 1
    assert worker._first_check_at == pytest.approx(now + TELL_EVERY_S)
    refuse["tell"] = False
    worker._pass_on(worker._first_check_at)
    assert len(told) == 2
    standby = Worker(
        ["q"], install_signals=False, registry=registry, standby=True, siblings=Shared(1)
    )
    standby._heard = {"q": 0}
    standby._pass_on(now)
    assert len(told) == 2  # only the first passes wake-ups on
    heard["q"] = 3
    busy["for"] = runner.FIRST_BUSY_S / 3
    worker._pass_on(now)
    assert worker._first_check_at < math.inf
    assert worker._want() > 0  # a thread of the first is free again: it claims itself,
    worker._claim_due()
    assert worker._first_check_at == math.inf  # and no look is left due (a busy loop)
