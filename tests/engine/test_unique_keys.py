"""Unique keys: at most one live message per (queue, unique_key), held while the message
is active, locked, deferred or scheduled, freed when it completes or is dead-lettered."""

from __future__ import annotations

import pytest
from django.db import transaction

import django_mqlite as mq
from tests.support.unique_keys import live_with

pytestmark = pytest.mark.django_db


def test_skip_returns_the_holders_seq_and_writes_nothing(q: str) -> None:
    first = mq.send(q, b"a", unique_key="k")
    again = mq.send(q, b"b", unique_key="k", on_conflict="skip")
    assert again == first
    assert live_with(q, "k") == [first]
    assert mq.stats(q).counts["active"] == 1
    assert mq.stats(q).totals["enqueued"] == 1
    other = mq.send(q, b"c", unique_key="other")
    assert other != first
    assert mq.send(q, b"plain") not in (first, other)


def test_keys_are_per_queue(make_queue) -> None:  # type: ignore[no-untyped-def]
    a, b = make_queue().name, make_queue().name
    assert mq.send(a, b"x", unique_key="k") != mq.send(b, b"x", unique_key="k")


@pytest.mark.parametrize("state", ["locked", "scheduled", "deferred"])
def test_every_live_state_holds_the_key(q: str, state: str) -> None:
    first = mq.send(q, b"a", unique_key="k", delay=60 if state == "scheduled" else None)
    if state != "scheduled":
        (m,) = mq.receive(q)
        if state == "deferred":
            m.defer()
    assert mq.send(q, b"b", unique_key="k") == first


def test_completion_frees_the_key(q: str) -> None:
    first = mq.send(q, b"a", unique_key="k")
    (m,) = mq.receive(q)
    assert mq.send(q, b"b", unique_key="k") == first
    m.complete()
    second = mq.send(q, b"b", unique_key="k")
    assert second != first
    assert live_with(q, "k") == [second]


def test_a_kept_result_does_not_hold_the_key(make_queue) -> None:  # type: ignore[no-untyped-def]
    q = make_queue(keep_results=3600).name
    first = mq.send(q, b"a", unique_key="k")
    (m,) = mq.receive(q)
    m.complete()
    assert mq.stats(q).counts["completed"] == 1
    assert mq.send(q, b"b", unique_key="k") != first


def test_dead_lettering_frees_the_key_and_a_redrive_drops_it(q: str) -> None:
    first = mq.send(q, b"a", unique_key="k")
    (m,) = mq.receive(q)
    m.reject("Bad", "no")
    second = mq.send(q, b"b", unique_key="k")
    assert second != first
    # The redriven copy would be a second live holder: it comes back without its key.
    mq.redrive(q)
    assert live_with(q, "k") == [second]
    assert mq.stats(q).counts["active"] == 2


def test_rollback_holds_nothing(q: str) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        mq.send(q, b"a", unique_key="k")
        raise RuntimeError("roll back")
    assert live_with(q, "k") == []
    kept = mq.send(q, b"b", unique_key="k")
    assert live_with(q, "k") == [kept]


def test_a_rolled_back_skip_frees_nothing(q: str) -> None:
    holder = mq.send(q, b"a", unique_key="k")
    with pytest.raises(RuntimeError), transaction.atomic():
        assert mq.send(q, b"b", unique_key="k") == holder
        raise RuntimeError("roll back")
    assert live_with(q, "k") == [holder]
    assert mq.send(q, b"c", unique_key="k") == holder


def test_within_one_transaction_the_second_send_skips(q: str) -> None:
    with transaction.atomic():
        first = mq.send(q, b"a", unique_key="k")
        assert mq.send(q, b"b", unique_key="k") == first
    assert live_with(q, "k") == [first]


def test_a_batch_skips_held_keys_and_keeps_its_lines(q: str) -> None:
    holder = mq.send(q, b"h", unique_key="k", group_id="other")
    seqs = mq.send_batch(
        q,
        [
            mq.OutMessage(b"1", unique_key="k", group_id="g"),
            mq.OutMessage(b"2", group_id="g"),
            mq.OutMessage(b"3", unique_key="n"),
            mq.OutMessage(b"4", unique_key="n"),
        ],
    )
    assert seqs[0] == holder
    assert seqs[3] == seqs[2]
    assert len({holder, seqs[1], seqs[2]}) == 3
    assert mq.stats(q).totals["enqueued"] == 3
    # "2" heads group g (the skipped "1" never joined it): it is claimable now.
    got = {m.body for m in mq.receive(q, max_messages=10)}
    assert got == {b"h", b"2", b"3"}


def test_dedup_and_unique_key_together(make_queue) -> None:  # type: ignore[no-untyped-def]
    q = make_queue().name
    holder = mq.send(q, b"a", unique_key="k")
    assert mq.send(q, b"b", unique_key="k", message_id="m1") == holder
    assert mq.send(q, b"b", unique_key="k", message_id="m1") == holder


@pytest.mark.parametrize(
    ("options", "text"),
    [
        ({"unique_key": "k", "on_conflict": "overwrite"}, "on_conflict"),
        ({"unique_key": "k", "on_conflict": 1}, "on_conflict"),
        ({"on_conflict": "skip"}, "needs a unique_key"),
        ({"unique_key": "x" * 201}, "unique_key"),
        ({"unique_key": 7}, "unique_key"),
        ({"unique_key": ""}, "unique_key"),
        ({"unique_key": "a\x00b"}, "unique_key"),
    ],
)
def test_bad_input_is_typed_and_writes_nothing(q: str, options: dict, text: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(mq.InvalidArgumentError, match=text):
        mq.send(q, b"x", **options)
    with pytest.raises(mq.InvalidArgumentError, match=text):
        mq.send_batch(q, [mq.OutMessage(b"y"), mq.OutMessage(b"x", **options)])
    assert mq.stats(q).totals["enqueued"] == 0


def test_a_key_of_200_characters_is_taken(q: str) -> None:
    key = "é" * 200
    first = mq.send(q, b"x", unique_key=key)
    assert mq.send(q, b"y", unique_key=key) == first


def test_publish_refuses_a_unique_key(q: str) -> None:
    mq.create_topic("t")
    mq.subscribe("t", q)
    with pytest.raises(mq.InvalidArgumentError, match="unique_key"):
        mq.publish("t", b"x", unique_key="k")


def test_a_message_waiting_on_dependencies_holds_its_key(q: str) -> None:
    """``waiting`` is a live state: the unique index counts it (on MariaDB too, whose
    index stands on a generated column, migration 0022), so a second send of the key
    gets the waiting holder, and after the release still only one holds it."""
    dep = mq.send(q, b"dependency")
    waiting = mq.send(q, b"a", unique_key="k", depends_on=[dep])
    assert mq.peek(q)[-1].state == "waiting"
    assert mq.send(q, b"b", unique_key="k") == waiting
    (m,) = mq.receive(q)
    assert m.seq == dep
    m.complete()
    assert mq.send(q, b"c", unique_key="k") == waiting
