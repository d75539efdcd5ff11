"""Chains and dependencies under concurrency, on real threads with their own
connections.

Dependencies: many dependents, each waiting for a few of many upstream messages that
several threads complete or reject at once (single settlements and batch settlements
that span dependents' upstreams), while a consumer thread takes dependents as they
become claimable. The oracle: a dependent is never claimable while one of its
dependencies is live or dead (checked in the database at the moment it is received);
each is received exactly once when all its dependencies completed, and dead-lettered
``DependencyFailed`` (never received) when one was rejected.

Chains: many chains whose steps several threads receive, sometimes abandon (a retry)
and complete with a result. The oracle: every step of every chain enqueued exactly once
(one seq), in order (each step carries the previous step's result), and every chain
finished."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter, defaultdict
from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq
from django_mqlite.engine import settle
from tests.support.concurrency import receive_until_idle, retrying, run_threads, start_threads

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

UPSTREAM = 300
DEPENDENTS = 200
CHAINS = 60
STEPS = 4


def not_done(seqs: list[int]) -> int:
    """How many of ``seqs`` are still live or dead-lettered (a completed upstream is
    removed: its queue keeps no results)."""
    marks = ", ".join(["%s"] * len(seqs))
    with connection.cursor() as c:
        c.execute(f"SELECT COUNT(*) FROM mqlite_message WHERE seq IN ({marks})", seqs)
        return int(c.fetchone()[0])


def test_dependents_are_released_once_and_never_early() -> None:
    mq.create_queue("up", lock_duration=60)
    mq.create_queue("down", lock_duration=60)
    rng = random.Random(7)
    ups = mq.send_batch("up", [mq.OutMessage(str(i)) for i in range(UPSTREAM)])
    doomed = set(rng.sample(ups, 15))  # rejected by the settlers
    deps: dict[int, list[int]] = {}
    for i in range(DEPENDENTS):
        wanted = rng.sample(ups, rng.randint(1, 4))
        deps[mq.send("down", str(i), depends_on=wanted)] = wanted
    received: Counter[int] = Counter()
    early: list[int] = []
    lock = threading.Lock()
    settling = threading.Event()

    def settler(i: int) -> None:
        r = random.Random(i)
        for got in receive_until_idle("up", [1, 3, 8], r, idle_rounds=5):
            keep = [m for m in got if m.seq not in doomed]
            for m in got:
                if m.seq in doomed:
                    retrying(lambda m=m: m.reject("no"))
            if keep:
                retrying(
                    lambda keep=keep: mq.complete_batch("up", [(m.seq, m.lock_token) for m in keep])
                )

    def consumer() -> None:
        while True:
            got = retrying(lambda: mq.receive("down", max_messages=16))
            assert isinstance(got, list)
            for m in got:
                if not_done(deps[m.seq]):
                    early.append(m.seq)
                with lock:
                    received[m.seq] += 1
                retrying(m.complete)
            if not got:
                if not settling.is_set():
                    return
                time.sleep(0.01)

    settling.set()
    errors: list[BaseException] = []
    (watch,) = start_threads(1, lambda _: consumer(), errors)
    try:
        run_threads(4, settler)
    finally:
        settling.clear()
        watch.join(60)
    assert not errors, errors
    assert early == []
    dead = {p.seq: p for p in mq.peek("down", state="dead_lettered", limit=1000)}
    for seq, wanted in deps.items():
        if doomed & set(wanted):
            assert received[seq] == 0, seq
            assert dead[seq].dead_letter_reason == "DependencyFailed"
        else:
            assert received[seq] == 1, seq
    assert max(received.values()) == 1
    assert mq.stats("down").counts["waiting"] == 0


def test_every_chain_step_is_enqueued_once_and_in_order() -> None:
    mq.create_queue("steps", lock_duration=60, max_delivery_count=50)
    for c in range(CHAINS):
        chain = mq.Chain([mq.Step("steps", {"chain": c, "step": k}) for k in range(STEPS)])
        chain.send()
    seqs: dict[tuple[int, int], set[int]] = defaultdict(set)
    previous: dict[tuple[int, int], Any] = {}
    lock = threading.Lock()

    def worker(i: int) -> None:
        r = random.Random(i)
        for got in receive_until_idle("steps", [1, 4, 16], r, idle_rounds=8):
            done = []
            for m in got:
                body = m.json()
                key = (body["chain"], body["step"])
                with lock:
                    seqs[key].add(m.seq)
                    previous[key] = m.properties.get("chain_result")
                if r.random() < 0.15:
                    retrying(m.abandon)  # runs again: still one step
                else:
                    done.append((m, body))
            if done:
                retrying(
                    lambda done=done: settle.complete_many(
                        "steps",
                        [(m.seq, m.lock_token or "") for m, _ in done],
                        completions=[mq.Completion(result=body) for _, body in done],
                    )
                )

    run_threads(4, worker)
    assert len(seqs) == CHAINS * STEPS  # every step of every chain ran
    assert all(len(s) == 1 for s in seqs.values())  # each enqueued once
    for (c, k), prev in previous.items():
        assert prev == (None if k == 0 else {"chain": c, "step": k - 1}), (c, k)
    assert mq.stats("steps").counts["active"] == 0
