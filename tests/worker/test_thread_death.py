"""A handler thread that dies for any reason is noticed: its delivery is failed (not left
running with a renewed lease) and a new thread takes its place."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.worker import Worker
from django_mqlite.worker.pool import Pool

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_dead_handler_thread_fails_its_delivery_and_is_replaced(
    make_queue: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    q = make_queue("dies", max_delivery_count=5).name
    mq.send(q, {"n": 1})
    mq.send(q, {"n": 2})
    handled: list[int] = []
    registry = Registry()
    registry.register(q, lambda msg: handled.append(msg.json()["n"]))

    real_execute = Pool._execute
    killed: list[int] = []

    def execute(self: Pool, d: Any) -> None:
        if not killed:  # the first delivery's thread dies outside the handler
            killed.append(d.msg.seq)
            raise SystemExit("thread killed")
        real_execute(self, d)

    monkeypatch.setattr(Pool, "_execute", execute)
    worker = Worker(
        burst=True, install_signals=False, reaper=False, registry=registry, concurrency=1
    )
    done = threading.Event()
    t = threading.Thread(target=lambda: (worker.run(), done.set()), daemon=True)
    t.start()
    t.join(30)
    assert done.is_set(), "the worker wedged on a delivery whose thread died"
    (dead,) = killed
    peeked = {p.seq: p for p in mq.peek(q, limit=10)}
    # The dead thread's delivery was failed (an attempt that counts, retried later) ...
    assert peeked[dead].state in ("scheduled", "active")
    assert peeked[dead].delivery_count == 1
    assert "handler thread died" in (peeked[dead].last_error or "")
    # ... and a replacement thread ran the other message (concurrency 1).
    assert handled == [2]
    assert mq.stats(q).counts["locked"] == 0
