"""The first process of ``runworker --processes N`` while it polls: before its commit
watcher or listener is up, while one retries after losing the database, and always on a
database with neither (MariaDB). A backlog it finds is shared with the standby
processes all the same (``Worker._tell_backlog``), not drained by the first alone while
the others wait for their minute's poll; a single message is still its own."""

from __future__ import annotations

import os
import time

import pytest

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.worker import Worker
from django_mqlite.worker.prefork import Siblings
from tests.support.inprocess import Running
from tests.support.procs import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def polling(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wake-ups down, as while a watcher or listener retries: every tick polls."""
    monkeypatch.setattr(Worker, "_woken", lambda self: False)


def _first(queue: str, done: list[int], siblings: Siblings) -> Worker:
    registry = Registry()

    def handle(msg: mq.Received) -> None:
        time.sleep(0.005)  # long enough that ticks find every thread busy
        done.append(int(msg.body))

    registry.register(queue, handle)
    return Worker(
        [queue],
        install_signals=False,
        registry=registry,
        reaper=False,
        periodic=False,
        siblings=siblings,
    )


def test_a_polling_first_process_tells_the_standby_of_a_backlog() -> None:
    mq.create_queue("polled")
    done: list[int] = []
    siblings = Siblings(1)
    os.set_blocking(siblings._r, False)
    worker = _first("polled", done, siblings)
    mq.send_batch("polled", [mq.OutMessage(i) for i in range(200)])
    with Running(worker):
        wait_for(lambda: len(done) == 200, timeout=30, what="the backlog")
    told = os.read(siblings._r, 64)
    assert told and set(told) == {ord("!")}


def test_a_polling_first_process_tells_nobody_of_a_single_message() -> None:
    mq.create_queue("polled_one")
    done: list[int] = []
    siblings = Siblings(1)
    os.set_blocking(siblings._r, False)
    worker = _first("polled_one", done, siblings)
    with Running(worker):
        time.sleep(0.3)
        mq.send("polled_one", 1)
        wait_for(lambda: done == [1], timeout=10, what="the message")
    with pytest.raises(BlockingIOError):
        os.read(siblings._r, 64)
