"""Group batches (``receive(..., group_batch=True)``, what SQS FIFO receives ask): on a
``group_fifo`` queue each head brings the active messages behind it in its group, in
order, up to ``max_messages``; every other queue and receive claim as before."""

from __future__ import annotations

import pytest

import django_mqlite as mq

pytestmark = pytest.mark.django_db(transaction=True)


def texts(got: list[mq.Received]) -> list[str]:
    return [m.text() for m in got]


@pytest.fixture
def groups() -> None:
    mq.create_queue("g", ordering="group_fifo", lock_duration=30)
    for i in range(4):
        mq.send("g", f"a{i}", group_id="A")
    mq.send("g", "b0", group_id="B")
    mq.send("g", "b1", group_id="B")


def test_a_group_is_taken_whole_before_the_next(groups: None) -> None:
    assert texts(mq.receive("g", max_messages=3, group_batch=True)) == ["a0", "a1", "a2"]
    # A's next waits behind the batch; B comes whole.
    assert texts(mq.receive("g", max_messages=10, group_batch=True)) == ["b0", "b1"]
    assert mq.receive("g", max_messages=10, group_batch=True) == []


def test_groups_fill_the_batch_in_claim_order(groups: None) -> None:
    got = mq.receive("g", max_messages=10, group_batch=True)
    assert texts(got) == ["a0", "a1", "a2", "a3", "b0", "b1"]
    assert all(m.delivery_count == 1 and m.lock_token for m in got)


def test_the_next_of_a_group_follows_when_the_batch_is_settled(groups: None) -> None:
    first = mq.receive("g", max_messages=2, group_batch=True)
    assert texts(first) == ["a0", "a1"]
    first[1].complete()  # out of order: a0 still holds the line
    assert texts(mq.receive("g", max_messages=10, group_batch=True)) == ["b0", "b1"]
    first[0].complete()
    assert texts(mq.receive("g", max_messages=10, group_batch=True)) == ["a2", "a3"]


def test_an_expired_batch_comes_back_in_order(groups: None, clock: mq.clock.FrozenClock) -> None:
    assert texts(mq.receive("g", max_messages=2, group_batch=True)) == ["a0", "a1"]
    clock.advance(31)
    assert texts(mq.receive("g", max_messages=1)) == ["a0"]  # the head first
    clock.advance(31)
    again = mq.receive("g", max_messages=3, group_batch=True)
    assert texts(again) == ["a0", "a1", "a2"]
    assert [m.delivery_count for m in again] == [3, 2, 1]


def test_a_message_not_active_ends_the_run(clock: mq.clock.FrozenClock) -> None:
    mq.create_queue("g", ordering="group_fifo")
    mq.send("g", "a0", group_id="A")
    mq.send("g", "a1", group_id="A", delay=60)  # scheduled, in the line
    mq.send("g", "a2", group_id="A")
    assert texts(mq.receive("g", max_messages=10, group_batch=True)) == ["a0"]


def test_the_byte_budget_still_takes_a_prefix(groups: None) -> None:
    got = mq.receive("g", max_messages=10, group_batch=True, max_bytes=1)
    assert texts(got) == ["a0"]


@pytest.mark.parametrize("ordering", ["standard", "strict_fifo"])
def test_other_orderings_ignore_it(ordering: str) -> None:
    mq.create_queue("o", ordering=ordering)
    for i in range(3):
        mq.send("o", f"a{i}", group_id="A")
    assert texts(mq.receive("o", max_messages=10, group_batch=True)) == ["a0"]


def test_without_it_a_receive_takes_one_per_group(groups: None) -> None:
    assert texts(mq.receive("g", max_messages=10)) == ["a0", "b0"]


def test_the_async_twin_takes_it_too(groups: None) -> None:
    from asgiref.sync import async_to_sync

    got = async_to_sync(mq.areceive)("g", max_messages=2, group_batch=True)
    assert texts(got) == ["a0", "a1"]


@pytest.mark.parametrize("attempt", [None, "attempt-1"])
def test_a_group_batch_of_one_is_the_head_alone(groups: None, attempt: str | None) -> None:
    """One message asked: the head, as a plain claim (with an attempt, through the
    general claim, whose group pick would otherwise ask for -1 followers)."""
    got = mq.receive("g", max_messages=1, group_batch=True, attempt_id=attempt)
    assert texts(got) == ["a0"]
    assert texts(mq.receive("g", max_messages=1, group_batch=True)) == ["b0"]
