"""Unique keys held while pending (``unique_while="pending"``): at most one message per
queue and key that waits and was never claimed; the first claim frees the key, so a new
message may wait while the previous one runs. The transitions that bring a claimed
message back to waiting (retry, snooze, release, redrive) never collide with the next
holder, and live and pending keys are separate key spaces."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

import django_mqlite as mq
from django_mqlite.models import Message

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def queue() -> None:
    mq.create_queue("jobs", max_delivery_count=3)


def send(body: str = "b", **options: object) -> int:
    return mq.send("jobs", body, unique_key="k", unique_while="pending", **options)


def pending_holders(key: str = "k") -> list[int]:
    """Never-claimed waiting messages with ``key`` as a pending key (at most one): no
    delivery counted, none given back by a snooze."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT seq FROM mqlite_message WHERE pending_key = %s AND snooze_count = 0 "
            "AND state IN ('active', 'scheduled') AND delivery_count = 0 ORDER BY seq",
            [key],
        )
        return [row[0] for row in cursor.fetchall()]


def test_a_waiting_holder_skips_the_next_send() -> None:
    first = send()
    assert send() == first
    assert pending_holders() == [first]


def test_the_first_claim_frees_the_key() -> None:
    first = send("one")
    [running] = mq.receive("jobs")
    second = send("two")  # the first runs: a second may wait
    assert second != first
    assert send("three") == second  # but only one waits
    assert pending_holders() == [second]
    running.complete()
    assert send("four") == second


def test_a_scheduled_holder_holds_the_key() -> None:
    first = send(delay=60)
    assert send() == first
    assert mq.peek("jobs")[0].state == "scheduled"


@pytest.mark.parametrize("back", ["abandon", "snooze", "release", "lease expiry"])
def test_a_claimed_message_coming_back_never_collides_with_the_next_holder(
    back: str, clock: mq.clock.FrozenClock
) -> None:
    first = send("one")
    [running] = mq.receive("jobs", lock_duration=10)
    second = send("two")
    if back == "abandon":
        running.abandon()
    elif back == "snooze":
        running.snooze(0)
    elif back == "release":
        assert running.lock_token is not None
        assert mq.release("jobs", [(running.seq, running.lock_token)]) == [True]
    else:
        clock.advance(11)
        mq.reap()
    states = {p.seq: p.state for p in mq.peek("jobs")}
    assert states == {first: "active", second: "active"}
    assert pending_holders() == [second]  # the one that came back holds nothing
    assert send("three") == second


def test_a_released_message_alone_does_not_take_its_key_back() -> None:
    first = send()
    [claimed] = mq.receive("jobs")
    assert claimed.lock_token is not None
    mq.release("jobs", [(claimed.seq, claimed.lock_token)])
    assert send() != first  # the claim freed it for good


def test_a_redriven_dead_letter_comes_back_without_its_key() -> None:
    first = send()
    [m] = mq.receive("jobs")
    m.reject("Bad")
    second = send()
    assert mq.redrive("jobs") == 1
    assert sorted(p.seq for p in mq.peek("jobs", state="active")) == [first, second]
    assert pending_holders() == [second]


@pytest.mark.parametrize("policy", ["replace", "debounce"])
def test_replace_writes_into_the_waiting_holder_never_the_running_one(policy: str) -> None:
    first = send("one")
    assert send("one-b", on_conflict=policy) == first
    [running] = mq.receive("jobs")
    assert running.text() == "one-b"
    second = send("two", on_conflict=policy)  # not UniqueKeyLockedError: nothing waits
    assert second != first
    assert send("two-b", on_conflict=policy) == second
    assert [p.text() for p in mq.peek("jobs", state="active")] == ["two-b"]


def test_live_and_pending_keys_are_separate_key_spaces() -> None:
    pending = send()
    live = mq.send("jobs", "b", unique_key="k")
    assert live != pending
    assert mq.send("jobs", "b", unique_key="k", unique_while="live") == live
    assert send() == pending


def test_a_batch_takes_each_pending_key_once() -> None:
    seqs = mq.send_batch(
        "jobs",
        [
            mq.OutMessage("a", unique_key="x", unique_while="pending"),
            mq.OutMessage("b", unique_key="y", unique_while="pending"),
            mq.OutMessage("c", unique_key="x", unique_while="pending"),
            mq.OutMessage("d", unique_key="x"),  # a live key: another space
        ],
    )
    assert seqs[2] == seqs[0] and len(set(seqs)) == 3


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"unique_key": "k", "unique_while": "running"}, "unique_while must be one of"),
        ({"unique_while": "pending"}, "unique_while needs a unique_key"),
    ],
)
def test_bad_windows_are_refused_with_nothing_written(options: dict[str, str], says: str) -> None:
    with pytest.raises(mq.InvalidArgumentError, match=says):
        mq.send("jobs", "b", **options)
    with pytest.raises(mq.InvalidArgumentError, match=says):
        mq.send_batch("jobs", [mq.OutMessage("ok"), mq.OutMessage("b", **options)])
    assert mq.peek("jobs") == []


def test_a_pending_key_on_a_message_with_dependencies_is_refused() -> None:
    """A message waiting on dependencies is outside the pending keys' index, so its
    release could make a second pending holder: the combination is refused, nothing
    written."""
    first = mq.send("jobs", "dep")
    before = [m.seq for m in mq.peek("jobs")]
    with pytest.raises(mq.InvalidArgumentError, match="depends_on"):
        send(depends_on=[first])
    assert [m.seq for m in mq.peek("jobs")] == before
    assert mq.send("jobs", "ok", unique_key="k", depends_on=[first]) > first  # 'live' is fine


def test_the_database_itself_refuses_a_second_pending_holder() -> None:
    """The window is the database's rule, not only the send's: a second row written
    straight into the table with a held pending key is refused by the unique index (a
    partial one on SQLite and PostgreSQL, one over a generated column on MariaDB,
    migration 0022); once the holder is claimed, the same row is taken."""
    first = send()
    queue_id = Message.objects.get(seq=first).queue_id

    def another(state: str = "active") -> None:
        Message.objects.create(
            queue_id=queue_id,
            state=state,
            visible_at=0,
            enqueued_at=0,
            body=b"x",
            pending_key="k",
        )

    for state in ("active", "scheduled"):
        with pytest.raises(IntegrityError), transaction.atomic():
            another(state)
    assert pending_holders() == [first]
    another("deferred")  # outside the window: no clash
    mq.receive("jobs")
    another()
    assert len(pending_holders()) == 1
