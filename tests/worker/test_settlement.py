"""The worker's batched settlements (``worker.settlement``): a database error gives the
batch back to the pool (kept, leases and all, for the next flush) instead of dropping
it, a retry of a batch that did commit is an exact replay, and a delivery the worker
knows is lost is never presented."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import DatabaseError

import django_mqlite as mq
from django_mqlite.engine import settle
from django_mqlite.worker import settlement
from django_mqlite.worker.delivery import Delivery
from django_mqlite.worker.pool import Pool

pytestmark = pytest.mark.django_db


def _pool(q: str) -> Pool:
    return Pool(1, using=mq.database_of(q), backoff=lambda n: 0.0, wake=lambda: None)


def _finished(pool: Pool, q: str, n: int, *, failed: bool = False) -> list[Delivery]:
    mq.send_batch(q, [mq.OutMessage(i) for i in range(n)])
    ds = [Delivery(m, None, 30, 0) for m in mq.receive(q, max_messages=n)]  # type: ignore[arg-type]
    if failed:
        pool.failed.extend((d, 5.0, "tb") for d in ds)
    else:
        pool.done.extend(ds)
    return ds


class Flaky:
    """Wraps an engine verb: the first call fails like a dropped connection, after the
    statement (``committed``) or before it."""

    def __init__(self, verb: Any, *, committed: bool) -> None:
        self.verb, self.committed, self.calls = verb, committed, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            if self.committed:
                self.verb(*args, **kwargs)
            raise DatabaseError("server closed the connection unexpectedly")
        return self.verb(*args, **kwargs)


@pytest.mark.parametrize("committed", [False, True], ids=["before", "after-commit"])
def test_a_failed_completion_flush_keeps_the_batch(
    q: str, monkeypatch: pytest.MonkeyPatch, committed: bool
) -> None:
    pool = _pool(q)
    ds = _finished(pool, q, 3)
    monkeypatch.setattr(settle, "complete_many", Flaky(settle.complete_many, committed=committed))
    with pytest.raises(DatabaseError):
        settlement.flush_completions(pool, mq.database_of(q))
    assert pool.done == ds  # given back, to be flushed again
    assert {d for d in pool.held()} == set(ds)  # and their leases still renewed
    outcome = "replayed" if committed else "completed"
    assert settlement.flush_completions(pool, mq.database_of(q)) == {outcome: 3}
    assert mq.peek(q) == [] and mq.stats(q).totals["completed"] == 3


@pytest.mark.parametrize("committed", [False, True], ids=["before", "after-commit"])
def test_a_failed_abandon_flush_keeps_the_batch(
    q: str, monkeypatch: pytest.MonkeyPatch, committed: bool
) -> None:
    pool = _pool(q)
    ds = _finished(pool, q, 3, failed=True)
    monkeypatch.setattr(settle, "abandon_many", Flaky(settle.abandon_many, committed=committed))
    with pytest.raises(DatabaseError):
        settlement.flush_failures(pool, mq.database_of(q))
    assert [f[0] for f in pool.failed] == ds
    outcome = "replayed" if committed else "scheduled"
    assert settlement.flush_failures(pool, mq.database_of(q)) == {outcome: 3}
    assert {p.state for p in mq.peek(q)} == {"scheduled"}
    assert mq.stats(q).totals["abandoned"] == 3


def test_only_the_batches_not_written_are_given_back(
    make_queue: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = make_queue("fa").name, make_queue("fb").name
    pool = _pool(a)
    _finished(pool, a, 2)
    second = _finished(pool, b, 2)
    real = settle.complete_many

    def fail_on_b(queue: str, *args: Any, **kwargs: Any) -> Any:
        if queue == b:
            raise DatabaseError("gone")
        return real(queue, *args, **kwargs)

    monkeypatch.setattr(settle, "complete_many", fail_on_b)
    with pytest.raises(DatabaseError):
        settlement.flush_completions(pool, mq.database_of(a))
    assert pool.done == second
    assert mq.peek(a) == [] and len(mq.peek(b)) == 2


def test_a_delivery_known_lost_is_not_completed(q: str) -> None:
    """Its token may still match (a renewal that failed for another reason, a lease
    that another delivery has not taken yet): presenting it would complete a message
    this worker no longer answers for."""
    pool = _pool(q)
    lost, _kept = _finished(pool, q, 2)
    lost.lost = True
    assert settlement.flush_completions(pool, mq.database_of(q)) == {"stale": 1, "completed": 1}
    assert [(p.seq, p.state) for p in mq.peek(q)] == [(lost.msg.seq, "locked")]
    assert pool.done == []


def test_a_failure_known_lost_is_not_abandoned(q: str) -> None:
    pool = _pool(q)
    lost, kept = _finished(pool, q, 2, failed=True)
    lost.lost = True
    assert settlement.flush_failures(pool, mq.database_of(q)) == {"stale": 1, "scheduled": 1}
    states = {p.seq: p.state for p in mq.peek(q)}
    assert states == {lost.msg.seq: "locked", kept.msg.seq: "scheduled"}
