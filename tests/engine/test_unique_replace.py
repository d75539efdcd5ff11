"""Unique keys with ``on_conflict="replace"`` and ``"debounce"``: the send's content goes
into the live holder of its key (debounce also moves its visible time), unless a consumer
holds it, which is ``UniqueKeyLockedError`` with nothing written."""

from __future__ import annotations

import pytest

import django_mqlite as mq
from tests.support.unique_keys import live_with

pytestmark = pytest.mark.django_db


def test_replace_overwrites_the_holders_content(q: str) -> None:
    first = mq.send(q, b"a", unique_key="k", message_id="m-1", subject="old", priority=1)
    again = mq.send(
        q,
        {"v": 2},
        unique_key="k",
        on_conflict="replace",
        subject="new",
        properties={"p": 1},
        priority=5,
    )
    assert again == first
    assert live_with(q, "k") == [first]
    (p,) = mq.peek(q)
    assert (p.body, p.content_type, p.subject, p.properties, p.priority) == (
        b'{"v":2}',
        "application/json",
        "new",
        {"p": 1},
        5,
    )
    assert p.message_id == "m-1"  # the holder keeps its identity
    assert mq.stats(q).totals["enqueued"] == 1


def test_replace_keeps_the_holders_visible_time(q: str, clock: mq.clock.FrozenClock) -> None:
    first = mq.send(q, b"a", unique_key="k", delay=60)
    clock.advance(10)
    assert mq.send(q, b"b", unique_key="k", on_conflict="replace", delay=5) == first
    (p,) = mq.peek(q)
    assert (p.state, p.body) == ("scheduled", b"b")
    assert p.visible_at == mq.clock.from_ms(clock.now_ms() + 50_000)


def test_debounce_moves_the_visible_time_to_the_sends(q: str, clock: mq.clock.FrozenClock) -> None:
    first = mq.send(q, b"a", unique_key="k", delay=10)
    clock.advance(8)
    assert mq.send(q, b"b", unique_key="k", on_conflict="debounce", delay=10) == first
    (p,) = mq.peek(q)
    assert (p.state, p.body) == ("scheduled", b"b")
    assert p.visible_at == mq.clock.from_ms(clock.now_ms() + 10_000)
    clock.advance(9)
    mq.reap()
    assert mq.receive(q) == []  # the first delay would have ended by now
    # A debounce without a delay makes it visible now.
    assert mq.send(q, b"c", unique_key="k", on_conflict="debounce") == first
    (m,) = mq.receive(q)
    assert (m.seq, m.body) == (first, b"c")


@pytest.mark.parametrize("policy", ["replace", "debounce"])
@pytest.mark.parametrize("state", ["locked", "deferred"])
def test_a_holder_a_consumer_has_is_never_changed(q: str, policy: str, state: str) -> None:
    first = mq.send(q, b"a", unique_key="k")
    (m,) = mq.receive(q)
    if state == "deferred":
        m.defer()
    with pytest.raises(mq.UniqueKeyLockedError) as caught:
        mq.send(q, b"b", unique_key="k", on_conflict=policy, delay=30)
    assert caught.value.code == "already_exists"
    # A batch with such a slot writes nothing at all.
    with pytest.raises(mq.UniqueKeyLockedError):
        mq.send_batch(
            q,
            [mq.OutMessage(b"x"), mq.OutMessage(b"b", unique_key="k", on_conflict=policy)],
        )
    (p,) = mq.peek(q)
    assert (p.seq, p.state, p.body) == (first, state, b"a")
    # skip still answers the holder.
    assert mq.send(q, b"b", unique_key="k") == first


def test_replace_after_the_holder_finished_inserts(q: str) -> None:
    first = mq.send(q, b"a", unique_key="k")
    (m,) = mq.receive(q)
    m.complete()
    second = mq.send(q, b"b", unique_key="k", on_conflict="replace")
    assert second != first and live_with(q, "k") == [second]


def test_a_replaced_message_keeps_its_place_in_its_line(make_queue: object) -> None:
    mq.create_queue("g")
    first = mq.send("g", b"1", group_id="a", unique_key="k")
    second = mq.send("g", b"2", group_id="a")
    # Another group given by the replacing send is ignored: the holder keeps its line.
    assert mq.send("g", b"1'", group_id="b", unique_key="k", on_conflict="replace") == first
    (m,) = mq.receive("g", max_messages=10)
    assert (m.seq, m.body, m.group_id) == (first, b"1'", "a")
    m.complete()
    (n,) = mq.receive("g")
    assert n.seq == second


def test_a_debounced_head_holds_its_line(make_queue: object, clock: mq.clock.FrozenClock) -> None:
    mq.create_queue("g")
    first = mq.send("g", b"1", group_id="a", unique_key="k")
    mq.send("g", b"2", group_id="a")
    assert mq.send("g", b"1'", group_id="a", unique_key="k", on_conflict="debounce", delay=30) == (
        first
    )
    assert mq.receive("g", max_messages=10) == []  # the parked head holds the group
    clock.advance(30)
    mq.reap()
    (m,) = mq.receive("g", max_messages=10)
    assert (m.seq, m.body) == (first, b"1'")


def test_a_batch_replaces_its_own_earlier_slot(q: str) -> None:
    seqs = mq.send_batch(
        q,
        [
            mq.OutMessage(b"a", unique_key="k"),
            mq.OutMessage(b"plain"),
            mq.OutMessage(b"b", unique_key="k", on_conflict="replace"),
        ],
    )
    assert seqs[0] == seqs[2] != seqs[1]
    assert [p.body for p in mq.peek(q)] == [b"b", b"plain"]
    assert mq.stats(q).totals["enqueued"] == 2


@pytest.mark.parametrize("policy", ["replace", "debounce"])
def test_bad_input_still_writes_nothing(q: str, policy: str) -> None:
    mq.send(q, b"a", unique_key="k")
    with pytest.raises(mq.InvalidArgumentError):
        mq.send(q, b"b", unique_key="k", on_conflict=policy, delay=-1)
    with pytest.raises(mq.InvalidArgumentError, match="needs a unique_key"):
        mq.send(q, b"b", on_conflict=policy)
    assert [p.body for p in mq.peek(q)] == [b"a"]
