"""Batches under concurrency, on real threads with their own connections: children of
many batches settled by several threads at once (complete, reject, abandon up to the
last delivery, a batch settle spanning batches), while a checker thread takes the
callbacks as they become visible. The oracle: every batch's ``on_complete`` exactly
once, ``on_success`` exactly when every child completed, ``on_failure`` exactly when one
died; no callback visible while a child of its batch is still live."""

from __future__ import annotations

import contextvars
import random
import threading
import time
from collections import Counter

import pytest
from django.db import connection

import django_mqlite as mq
from django_mqlite.engine.batch import current as current_batch
from tests.support.concurrency import receive_until_idle, retrying, run_threads, start_threads

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

BATCHES = 120
CHILDREN = 5


def live_children(batch_id: int) -> int:
    with connection.cursor() as c:
        c.execute(
            "SELECT COUNT(*) FROM mqlite_message WHERE batch_id = %s "
            "AND state NOT IN ('completed', 'dead_lettered')",
            [batch_id],
        )
        return int(c.fetchone()[0])


def test_every_batch_fires_once_and_never_early() -> None:
    mq.create_queue("kids", lock_duration=60, max_delivery_count=2)
    mq.create_queue("done", lock_duration=60)
    children: dict[int, list[int]] = {}
    for _ in range(BATCHES):
        with mq.batch(
            on_complete=mq.Callback("done", "complete"),
            on_success=mq.Callback("done", "success"),
            on_failure=mq.Callback("done", "failure"),
        ) as b:
            seqs = b.send_batch("kids", [mq.OutMessage(str(i)) for i in range(CHILDREN)])
        children[b.id] = seqs
    outcome: dict[int, str] = {}  # child seq -> "completed" / "failed"
    lock = threading.Lock()
    early: list[tuple[int, str]] = []
    seen: Counter[tuple[int, str]] = Counter()
    settling = threading.Event()

    def settler(i: int) -> None:
        rng = random.Random(i)
        for got in receive_until_idle("kids", [1, 4, 16], rng, idle_rounds=5):
            keep = []
            for m in got:
                r = rng.random()
                if r < 0.08:
                    retrying(lambda m=m: m.reject("no"))
                    with lock:
                        outcome[m.seq] = "failed"
                elif r < 0.2:
                    retrying(m.abandon)
                    if m.delivery_count >= 2:
                        with lock:
                            outcome[m.seq] = "failed"
                else:
                    keep.append(m)
            if keep:  # one settle across the children of several batches
                retrying(
                    lambda keep=keep: mq.complete_batch(
                        "kids", [(m.seq, m.lock_token) for m in keep]
                    )
                )
                with lock:
                    outcome.update({m.seq: "completed" for m in keep})

    def checker() -> None:
        while True:
            got = retrying(lambda: mq.receive("done", max_messages=32))
            assert isinstance(got, list)
            for m in got:
                key = (m.properties["batch_id"], m.properties["batch_callback"])
                seen[key] += 1
                if live_children(key[0]):
                    early.append(key)
                retrying(m.complete)
            if not got:
                if not settling.is_set():
                    return
                time.sleep(0.02)

    settling.set()
    errors: list[BaseException] = []
    (check,) = start_threads(1, lambda _: checker(), errors)
    try:
        run_threads(4, settler)
    finally:
        settling.clear()
        check.join(60)
    assert not errors, errors
    assert early == []
    assert len(outcome) == BATCHES * CHILDREN  # every child settled for good
    for bid, seqs in children.items():
        results = [outcome[s] for s in seqs]
        assert seen[(bid, "on_complete")] == 1, bid
        assert seen[(bid, "on_success")] == (1 if all(r == "completed" for r in results) else 0), (
            bid
        )
        assert seen[(bid, "on_failure")] == (1 if "failed" in results else 0), bid
        info = mq.get_batch(bid)
        assert (info.state, info.pending) == ("finished", 0)
        assert info.completed + info.failed == CHILDREN
    assert max(seen.values()) == 1  # no callback twice


def test_a_send_from_another_thread_never_joins_an_open_batch() -> None:
    mq.create_queue("kids")
    errors: list[BaseException] = []

    def via_context() -> object:
        found = current_batch()  # how the Tasks backend finds the batch
        assert found is not None
        return found.send("kids", "inherited")

    with mq.batch() as b:
        b.send("kids", "mine")
        # A thread handed the batch, and one running in a copy of the block's context
        # (as sync_to_async(thread_sensitive=False) or copy_context().run carry it).
        context = contextvars.copy_context()
        for send in (lambda _: b.send("kids", "direct"), lambda _: context.run(via_context)):
            (t,) = start_threads(1, send, errors)  # what they raise is asserted below
            t.join(60)
    assert [type(e) for e in errors] == [mq.InvalidArgumentError] * 2, errors
    assert all("thread" in str(e) for e in errors), errors
    assert mq.get_batch(b.id).total == 1
    assert [p.body for p in mq.peek("kids")] == [b"mine"]
