"""A quiet reaper pass (``mq.reap(quiet=True)``, what the reaper runs after a pass that
found nothing): one transaction per database instead of one per statement until a step
finds work; that step's one chunk commits alone and the rest run as an ordinary pass, so
no transaction holds two steps' locks (a deadlock with senders on PostgreSQL)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection, connections

import django_mqlite as mq
from tests.settings import SECOND
from tests.support.concurrency import start_threads
from tests.support.features import requires

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def commits() -> Iterator[list[int]]:
    """Counts the commits of the default connection (Django's ``commit`` runs once per
    outermost transaction)."""
    seen = [0]
    real = connection.commit

    def counting() -> None:
        seen[0] += 1
        real()

    connection.commit = counting  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        del connection.commit


def test_a_quiet_pass_over_an_idle_database_is_one_transaction(q: str) -> None:
    mq.reap(using="default")  # the first minute's history sample, out of the way
    with commits() as ordinary:
        assert not any(mq.reap(using="default").values())
    with commits() as quiet:
        assert not any(mq.reap(using="default", quiet=True).values())
    assert quiet[0] == 1
    assert ordinary[0] >= 8  # about one per statement


def test_a_quiet_pass_takes_one_chunk_a_step_and_the_next_pass_the_rest(
    q: str, settings: Any, clock: mq.clock.FrozenClock
) -> None:
    settings.MQLITE = {**getattr(settings, "MQLITE", {}), "REAP_CHUNK": 5}
    for i in range(12):
        mq.send(q, f"{i}".encode(), ttl=10)
    clock.advance(11)
    quiet = mq.reap(using="default", quiet=True)
    assert quiet["ttl_expired"] == 5
    assert mq.reap(using="default")["ttl_expired"] == 7
    assert {p.state for p in mq.peek(q)} == {"dead_lettered"}


def test_a_quiet_pass_commits_the_first_step_that_finds_work_alone(
    q: str, clock: mq.clock.FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease returned by the first step is committed before a later step runs: a
    later step's failure does not undo it (nor could it hold the first step's locks)."""
    from django_mqlite.engine import maintenance

    mq.send(q, b"x")
    mq.receive(q, lock_duration=1)
    clock.advance(2)

    def broken(alias: str) -> int:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(maintenance, "dlq_retention", broken)
    with pytest.raises(RuntimeError):
        mq.reap(using="default", quiet=True)
    (p,) = mq.peek(q)
    assert p.state == "active"


def test_a_failing_quiet_pass_that_found_nothing_changes_nothing(
    q: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Until a step finds work the steps share one transaction: a failure rolls back."""
    from django_mqlite.engine import maintenance

    mq.reap(using="default")
    before = dict(mq.stats(q).totals)

    def broken(alias: str) -> int:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(maintenance, "prune_workers", broken)
    with pytest.raises(RuntimeError):
        mq.reap(using="default", quiet=True)
    assert dict(mq.stats(q).totals) == before


def test_the_history_sample_is_taken_outside_the_quiet_transaction(
    q: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On SQLite the quiet transaction holds the write lock from its start; the sample
    counts every queue's depth, so it must not run inside it."""
    from django_mqlite.engine import history

    seen: list[bool] = []
    real = history.sample

    def sample(alias: str) -> int:
        seen.append(connection.in_atomic_block)
        return real(alias)

    monkeypatch.setattr(history, "sample", sample)
    mq.reap(using="default", quiet=True)
    assert seen == [False]


@requires("advisory_locks")
def test_a_quiet_pass_never_deadlocks_a_sender_across_steps(
    clock: mq.clock.FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line b's lease runs out on its last delivery (the first step locks line b) and
    line a's message outlives its TTL (a later step locks line a), while a send_batch
    locks a, then b. The quiet pass pauses between the steps with the sender waiting:
    had it kept line b until after the TTL step, one of the two would be killed as a
    deadlock (it was, before the first step that finds work committed alone)."""
    from django_mqlite.engine import maintenance

    q = mq.create_queue("dl", max_delivery_count=1, lock_duration=5).name
    mq.send(q, b"head-b", group_id="b")
    (m,) = mq.receive(q)
    mq.send(q, b"head-a", group_id="a", ttl=8)
    clock.advance(10)
    between, go_on = threading.Event(), threading.Event()
    real = maintenance.promote_scheduled

    def promote_then_pause(alias: str) -> int:
        between.set()
        go_on.wait(5)
        return real(alias)

    monkeypatch.setattr(maintenance, "promote_scheduled", promote_then_pause)
    errors: list[BaseException] = []

    (reaper,) = start_threads(1, lambda _: mq.reap(using="default", quiet=True), errors)
    assert between.wait(5)
    (sender,) = start_threads(
        1,
        lambda _: mq.send_batch(
            q, [mq.OutMessage(b"x", group_id="a"), mq.OutMessage(b"y", group_id="b")]
        ),
        errors,
    )
    time.sleep(0.5)
    go_on.set()
    reaper.join(30)
    sender.join(30)
    assert not errors, errors
    assert m.group_id == "b"


@contextmanager
def commits_on(alias: str) -> Iterator[list[int]]:
    """``commits`` for the connection of ``alias``."""
    seen = [0]
    conn = connections[alias]
    real = conn.commit

    def counting() -> None:
        seen[0] += 1
        real()

    conn.commit = counting  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        del conn.commit


@pytest.mark.django_db(transaction=True, databases=["default", SECOND])
def test_a_pass_runs_in_transactions_of_the_database_it_reaps() -> None:
    mq.reap(using=SECOND)  # the first minute's history sample, out of the way
    with commits_on(SECOND) as ordinary, commits_on("default") as default:
        assert not any(mq.reap(using=SECOND).values())
    with commits_on(SECOND) as quiet, commits_on("default") as quiet_default:
        assert not any(mq.reap(using=SECOND, quiet=True).values())
    assert ordinary[0] >= 8 and quiet[0] == 1
    assert default[0] == quiet_default[0] == 0
