"""What a worker costs the database when there is little or nothing to do, as counts of
transactions (not times: the machine is shared): an idle worker commits at most two
transactions a second on average, and a trickle of messages (one every 50 ms) a claim
and a completion per message and little else (at most 2.5 a message: the claim, the
completion, and on SQLite the claim's own lease-expiry statement at most every 250 ms;
PostgreSQL's one-statement claim asks whether a lease lapsed instead; a worker that
restarted its poll at 10 ms after each message made about five).

The worker is woken the way a worker in another process is (NOTIFY on PostgreSQL, the
commit watcher on SQLite): the in-process wake-up of a send is turned off. Its reaper,
heartbeat and periodic ticker run as in production.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.engine import send_one
from django_mqlite.worker import Worker
from tests.support.features import requires
from tests.support.inprocess import Running, first_and_standby
from tests.support.procs import wait_for
from tests.support.transactions import Transactions, counting

pytestmark = [pytest.mark.django_db(transaction=True), requires("wake_ups")]

PRODUCER = "MainThread"


@pytest.fixture
def remote_sends(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Sends of this process wake the worker only as another process's would."""
    monkeypatch.setattr(send_one.Wake, "__call__", lambda self: None)
    yield


def _report(counted: Transactions, what: str) -> str:
    return f"{what}: {dict(counted.by_thread)} {dict(counted.statements)}"


def test_an_idle_worker_commits_at_most_two_transactions_a_second(remote_sends: None) -> None:
    mq.create_queue("idle")
    registry = Registry()
    registry.register("idle", lambda msg: None)
    worker = Worker(["idle"], install_signals=False, registry=registry)
    with Running(worker):
        wait_for(lambda: worker.worker_id is not None, timeout=10, what="the worker's start")
        time.sleep(3.0)  # start-up is over: the first claims, the reaper's first passes
        with counting() as counted:
            time.sleep(IDLE_S)
        n = counted.total()
        own = counted.total(skip=(TICKER,))
    print(_report(counted, f"idle {IDLE_S}s: {n}"))
    # A heartbeat (every 5 s) is one transaction, its clock-skew reading included (it
    # was two on PostgreSQL, where a query outside a transaction is one of its own).
    beats = counted.by_thread["mqlite-heartbeat"]
    assert beats <= IDLE_S / 5 + 1, _report(counted, f"{beats} heartbeat transactions")
    # The claim loop, heartbeat and reaper: about one a second (measured 0.9-1.0).
    assert own <= 1.5 * IDLE_S, _report(counted, f"{own} transactions in {IDLE_S}s")
    # The periodic ticker keeps the stored schedules it read until a change is announced
    # (PostgreSQL; it read them every second, one more transaction a second, before).
    assert n - own <= 0.2 * IDLE_S + 1, _report(counted, f"{n} transactions in {IDLE_S}s")


TICKER = "mqlite-periodic"


IDLE_S = 10


def test_a_trickle_costs_a_claim_and_a_completion_a_message(remote_sends: None) -> None:
    mq.create_queue("trickle")
    done: list[int] = []
    registry = Registry()
    registry.register("trickle", lambda msg: done.append(int(msg.body)))
    worker = Worker(["trickle"], install_signals=False, registry=registry)
    counted = _trickle(worker, "trickle", lambda: len(done) == TASKS)
    n = counted.total(skip=(PRODUCER,))
    print(_report(counted, f"trickle {TASKS}: {n}"))
    assert n <= 2.5 * TASKS + 4, _report(counted, f"{n} transactions for {TASKS} tasks")
    # The claim loop: a claim and a completion a message, and nothing else. No
    # lease-expiry transaction (PostgreSQL's one-statement claim asks whether a lease
    # lapsed, SQLite's claim returns leases in its own transaction: each took one every
    # 250 ms before, 45 and 50 for 20 messages), and no empty claim after a completion
    # (on SQLite the commit watcher sees the worker's own completion: 5-10 empty claims
    # for 20 messages before ``wakeup.noted``).
    loop = counted.by_thread["mqlite-worker-main"]
    assert loop <= 2 * TASKS + 2, _report(counted, f"{loop} claim-loop transactions")


TASKS = 20


def _trickle(worker: Worker, queue: str, done: Callable[[], bool] | None = None) -> Transactions:
    """Start ``worker``, let it settle, and count the transactions while ``TASKS``
    messages are sent to ``queue`` one every 50 ms (and, with ``done``, until it says
    they are handled and the last completion flushed)."""
    with Running(worker):
        wait_for(lambda: worker.worker_id is not None, timeout=10, what="the worker's start")
        time.sleep(1.0)
        with counting() as counted:
            for i in range(TASKS):
                mq.send(queue, i)
                time.sleep(0.05)
            if done is not None:
                wait_for(done, timeout=10, what="every task")
                time.sleep(0.1)  # the last completion's flush
    return counted


def test_a_send_to_one_queue_claims_that_queue_only(
    remote_sends: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker consuming two queues, woken by NOTIFYs of sends to one of them, claims
    that one: the other is claimed by the poll (every 5 s), not once per message."""
    from django_mqlite.worker import runner

    for name in ("busy", "quiet"):
        mq.create_queue(name)
    done: list[str] = []
    registry = Registry()
    registry.register("busy", lambda msg: done.append(msg.body))
    registry.register("quiet", lambda msg: None)
    claimed: list[str] = []
    real = runner.receive

    def receive(queue: str, **kwargs: object) -> object:
        claimed.append(queue)
        return real(queue, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "receive", receive)
    worker = Worker(["busy", "quiet"], install_signals=False, registry=registry)
    with Running(worker):
        wait_for(lambda: "quiet" in claimed, timeout=10, what="the first claim")
        time.sleep(0.5)
        claimed.clear()
        for i in range(5):
            mq.send("busy", str(i))
            wait_for(lambda i=i: len(done) > i, timeout=10, every=0.005, what=f"message {i}")
            time.sleep(0.05)
    assert claimed.count("busy") >= 5, claimed
    # NOTIFY names the queue; SQLite's commit watcher cannot tell the queues apart, but
    # the read before a woken claim (``engine.claimable``) finds nothing in the other
    # (one claim of it a send before, 5-7 here): either way it waits for the poll.
    assert "quiet" not in claimed, claimed


def test_commits_that_put_nothing_in_its_queues_make_no_claim(remote_sends: None) -> None:
    """Sends to a queue the worker does not consume, and other connections' commits
    (on SQLite the commit watcher hears every one): the worker claims nothing for them.
    On SQLite a claim is a write transaction even when it finds nothing; before the
    read that says where a claim could take something (``engine.claimable``), each
    such commit cost one (20 here)."""
    mq.create_queue("mine")
    mq.create_queue("theirs")
    registry = Registry()
    registry.register("mine", lambda msg: None)
    worker = Worker(["mine"], install_signals=False, registry=registry)
    counted = _trickle(worker, "theirs")
    loop = counted.by_thread["mqlite-worker-main"]
    print(_report(counted, f"{TASKS} sends elsewhere: {loop}"))
    # The poll (every 5 s) may fall in the second the sends take: one claim.
    assert loop <= 1, _report(counted, f"{loop} claim-loop transactions")


def test_a_standby_process_leaves_a_trickle_to_the_first(remote_sends: None) -> None:
    """``runworker`` with two processes at a trickle: the standby one, whose last claim
    found nothing, leaves the wake-ups to the first; it does not race it for every
    message (``prefork.Siblings``; measured 42-49 transactions of its own for 20
    messages when it follows every wake-up, 0 when it stands by)."""
    mq.create_queue("shared")
    done: list[int] = []
    registry = Registry()
    registry.register("shared", lambda msg: done.append(int(msg.body)))
    first, standby = first_and_standby(registry, "shared")
    runs = [Running(first), Running(standby)]
    runs[1].thread.name = "mqlite-standby-main"
    with runs[0], runs[1]:
        wait_for(
            lambda: first.worker_id is not None and standby.worker_id is not None,
            timeout=10,
            what="both workers' start",
        )
        time.sleep(1.0)
        with counting() as counted:
            for i in range(TASKS):
                mq.send("shared", i)
                time.sleep(0.05)
            wait_for(lambda: len(done) == TASKS, timeout=10, what="every task")
            time.sleep(0.1)
    by_standby = counted.by_thread["mqlite-standby-main"]
    print(_report(counted, f"trickle {TASKS} with a standby: {by_standby}"))
    # At most a claim that finds nothing and a completion of what one took, now and
    # then; not one or two a message.
    assert by_standby <= 6, _report(counted, f"the standby: {by_standby}")
