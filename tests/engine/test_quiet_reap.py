"""A quiet reaper pass (``mq.reap(quiet=True)``, what the reaper runs after a pass that
found nothing): one transaction per database instead of one per statement, and each
step at most one chunk, so work that turns up anyway is never one long transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq

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


def test_a_failing_quiet_pass_changes_nothing(
    q: str, clock: mq.clock.FrozenClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One transaction: a step that fails rolls back the steps before it."""
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
    assert p.state == "locked"  # the lease return before the failure was rolled back
    monkeypatch.undo()
    assert mq.reap(using="default", quiet=True)["expired_locks"] == 1
