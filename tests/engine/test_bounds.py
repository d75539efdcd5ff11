"""Bounds every surface gets from the engine: lease lengths, how far ahead a message
may be scheduled, whole-string queue names, finite JSON; and receipts that answer only
for their own queue."""

from __future__ import annotations

import datetime as dt

import pytest

import django_mqlite as mq

pytestmark = pytest.mark.django_db

TWELVE_HOURS = 12 * 3600


def test_leases_are_capped_at_twelve_hours(q: str) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        mq.create_queue("long", lock_duration=TWELVE_HOURS + 1)
    assert mq.create_queue("long", lock_duration=TWELVE_HOURS).lock_duration == TWELVE_HOURS
    mq.send(q, b"x")
    with pytest.raises(mq.InvalidArgumentError):
        mq.receive(q, lock_duration=dt.timedelta(days=3650))
    (m,) = mq.receive(q)
    with pytest.raises(mq.InvalidArgumentError):
        m.renew(lock_duration=TWELVE_HOURS + 1)
    with pytest.raises(mq.InvalidArgumentError):
        mq.renew_batch(q, [(m.seq, m.lock_token or "")], lock_duration=10 * 365 * 86400)
    with pytest.raises(mq.InvalidArgumentError):
        mq.update_queue(q, lock_duration=10 * 365 * 86400)
    m.complete()


def test_scheduled_at_far_ahead_is_refused_and_nothing_is_unpeekable(q: str) -> None:
    far = dt.datetime(9999, 12, 31, tzinfo=dt.UTC)
    with pytest.raises(mq.InvalidArgumentError):
        mq.send(q, b"x", scheduled_at=far, ttl=3600)
    with pytest.raises(mq.InvalidArgumentError):
        mq.send_batch(q, [mq.OutMessage(b"x", scheduled_at=far)])
    soon = dt.datetime.now(dt.UTC) + dt.timedelta(days=365)
    seq = mq.send(q, b"x", scheduled_at=soon, ttl=3600)
    assert [p.seq for p in mq.peek(q)] == [seq]


@pytest.mark.parametrize("name", ["work\n", "\nwork", "work ", " work", "wo\trk"])
def test_queue_names_are_matched_whole_and_never_trimmed(name: str) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        mq.create_queue(name)
    assert mq.list_queues() == []


@pytest.mark.parametrize(
    "properties", [{"x": float("nan")}, {"x": float("inf")}, {"x": [1e400]}, {"x": "y" * 70_000}]
)
def test_properties_must_be_finite_bounded_json(q: str, properties: dict[str, object]) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        mq.send(q, b"x", properties=properties)
    assert mq.stats(q).totals["enqueued"] == 0


def test_a_receipt_answers_only_for_its_own_queue(make_queue: object, q: str) -> None:
    mq.create_queue("other")
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    token = m.lock_token or ""
    mq.complete(q, m.seq, token)
    mq.complete(q, m.seq, token)  # an exact replay succeeds
    with pytest.raises(mq.LockLostError):
        mq.complete("other", m.seq, token)
    assert mq.complete_batch("other", [(m.seq, token)]) == [False]
