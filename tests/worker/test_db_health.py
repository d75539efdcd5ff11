"""A worker thread whose database connection is lost gets a fresh one on its next
message, keeps its connection across messages under the default ``CONN_MAX_AGE = 0``,
and honours a positive ``CONN_MAX_AGE`` (``django_mqlite/worker/db_health.py``)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection
from django.db.backends.signals import connection_created
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.worker import Worker
from tests.support.dbfaults import break_connection, break_wrapper, session_of
from tests.support.inprocess import burst
from tests.support.procs import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def run(queue: str, handle: Any, **options: Any) -> Worker:
    registry = Registry()
    registry.register(queue, handle)
    return burst(registry, queue, **options)


@override_settings(MQLITE={"RETRY_BACKOFF_BASE": 0, "RETRY_BACKOFF_CAP": 0})
def test_a_handler_thread_recovers_from_a_lost_connection() -> None:
    """The first message's handler loses its connection mid-work (a terminated backend
    on PostgreSQL): that attempt fails, and every later message on the same thread gets
    a fresh connection. Kept broken, every later message fails until it is dead-lettered
    (the bug this pins)."""
    mq.create_queue("h", max_delivery_count=3)
    mq.send_batch("h", [mq.OutMessage(i) for i in range(10)])
    broke = threading.Event()
    ran: list[int] = []

    def handle(msg: mq.Received) -> None:
        if not broke.is_set():
            broke.set()
            break_connection()
        mq.get_queue("h")  # the handler's own query, on its thread's connection
        ran.append(msg.seq)

    worker = run("h", handle)
    totals = mq.stats("h").totals
    assert totals["completed"] == 10 and totals["dead_lettered"] == 0, totals
    assert worker.pool.failures == 1 and len(ran) == 10


def test_a_reject_after_a_lost_connection_is_settled_on_a_fresh_one() -> None:
    """A handler that loses its connection and then rejects: the handler thread
    settles the reject itself, on a fresh connection."""
    mq.create_queue("r")
    seq = mq.send("r", {"x": 1})

    def handle(msg: mq.Received) -> None:
        break_connection()
        raise mq.Reject("bad", "rejected after its connection was lost")

    run("r", handle)
    [dead] = mq.peek("r", state="dead_lettered")
    assert dead.seq == seq and dead.dead_letter_reason == "bad"


def test_idle_threads_check_their_connections_once_one_is_found_lost() -> None:
    """Every session of the worker ends while its threads are idle (a server restart,
    ``pg_terminate_backend`` of all): the main loop finds its connection lost, and every
    handler thread then checks its own before its next message, so none of the next
    messages fails its first delivery. Without the check each idle handler thread failed
    one message on its broken connection (the fault suite's canary round)."""
    mq.create_queue("idle-lost", max_delivery_count=5)
    opened: list[tuple[str, Any, int | None]] = []

    def record(sender: Any, connection: Any, **kwargs: Any) -> None:
        if threading.current_thread() is not test_thread:  # the worker's threads
            # The session is read here, on the thread that owns the connection: later
            # that thread may be in a query (the main loop polls on MariaDB).
            name = threading.current_thread().name
            opened.append((name, connection, session_of(connection)))

    test_thread = threading.current_thread()

    deliveries: list[tuple[int, int]] = []

    def handle(msg: mq.Received) -> None:
        mq.get_queue("idle-lost")  # the handler's own query, on its thread's connection
        if msg.delivery_count == 1 and int(msg.body) < 20:
            time.sleep(0.02)  # the first round spreads over every handler thread
        deliveries.append((int(msg.body), msg.delivery_count))

    registry = Registry()
    registry.register("idle-lost", handle)
    worker = Worker(
        ["idle-lost"], reaper=False, install_signals=False, registry=registry, concurrency=4
    )
    connection_created.connect(record)
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        mq.send_batch("idle-lost", [mq.OutMessage(i) for i in range(20)])
        wait_for(lambda: len(deliveries) == 20, timeout=30, what="the first round")
        handlers = {name for name, _c, _s in opened if name.startswith("mqlite-handler")}
        assert len(handlers) == 4, f"every handler thread has its connection: {opened}"
        time.sleep(0.2)  # the threads are idle, their connections open
        for _name, wrapper, session in opened:  # every session of the worker ends
            break_wrapper(wrapper, session)
        mq.send_batch("idle-lost", [mq.OutMessage(i) for i in range(20, 40)])
        wait_for(lambda: len(deliveries) == 40, timeout=30, what="the second round")
    finally:
        worker.stop()
        thread.join(30)
        connection_created.disconnect(record)
    assert worker.pool.failures == 0, deliveries
    assert sorted(deliveries) == [(i, 1) for i in range(40)]


def test_a_worker_thread_keeps_its_connection_across_messages() -> None:
    """With the default CONN_MAX_AGE = 0 a handler thread opens one connection, not one
    per message (Django's per-request close_old_connections would)."""
    assert connection.settings_dict["CONN_MAX_AGE"] == 0
    mq.create_queue("k")
    mq.send_batch("k", [mq.OutMessage(i) for i in range(40)])
    opened = count_connections()

    def handle(msg: mq.Received) -> None:
        mq.get_queue("k")

    try:
        run("k", handle, concurrency=2)
    finally:
        connection_created.disconnect(opened.record)
    assert mq.stats("k").totals["completed"] == 40
    # Two handler threads and the main loop (burst: no heartbeat, reaper or listener
    # ran long enough to matter, but allow them).
    assert opened.in_threads("mqlite-handler") <= 2, opened.names


def test_a_positive_conn_max_age_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0.05)
    mq.create_queue("m")
    mq.send_batch("m", [mq.OutMessage(i) for i in range(6)])
    opened = count_connections()
    stop = threading.Event()

    def handle(msg: mq.Received) -> None:
        mq.get_queue("m")
        stop.wait(0.1)  # older than CONN_MAX_AGE by the next message

    try:
        run("m", handle)
    finally:
        connection_created.disconnect(opened.record)
    assert opened.in_threads("mqlite-handler") >= 5, opened.names


class count_connections:  # noqa: N801 - used like a function
    """Records the thread name of every connection opened from now on."""

    def __init__(self) -> None:
        self.names: list[str] = []
        connection_created.connect(self.record)

    def record(self, sender: Any, connection: Any, **kwargs: Any) -> None:
        self.names.append(threading.current_thread().name)

    def in_threads(self, prefix: str) -> int:
        return sum(n.startswith(prefix) for n in self.names)
