"""``abandon_batch``: many abandons in one statement, each by ``abandon``'s rule."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.engine.abandon_batch import abandon_batch

pytestmark = pytest.mark.django_db(transaction=True)


def test_retries_parks_buries_and_answers_false_for_stale(clock: Any) -> None:
    mq.create_queue("ab", max_delivery_count=2)
    mq.send_batch("ab", [mq.OutMessage(i) for i in range(3)])
    first = mq.receive("ab", max_messages=3)
    for m in first[2:]:
        m.abandon()  # the third comes back for its last delivery
    [last] = mq.receive("ab")
    assert last.delivery_count == 2
    a, b = first[0], first[1]
    items = [
        (a.seq, a.lock_token, 0, "boom a"),
        (b.seq, b.lock_token, 5, "boom b"),
        (last.seq, last.lock_token, 0, "boom last"),
        (a.seq + 1000, "0" * 32, 0, None),
    ]
    assert abandon_batch("ab", items) == [True, True, True, False]
    states = {p.seq: p for p in mq.peek("ab")}
    assert states[a.seq].state == "active" and states[a.seq].last_error == "boom a"
    assert states[b.seq].state == "scheduled"
    assert states[b.seq].visible_at is not None
    assert (states[b.seq].visible_at - clock.now()).total_seconds() == 5
    assert states[last.seq].state == "dead_lettered"
    assert states[last.seq].dead_letter_reason == "MaxDeliveryCountExceeded"
    t = mq.stats("ab").totals
    assert t["abandoned"] == 4 and t["retried"] == 3 and t["exhausted"] == 1
    assert t["abandoned"] + t["reclaimed"] == t["retried"] + t["exhausted"]
    # An exact replay succeeds; a different delay for the same token is stale.
    assert abandon_batch("ab", items[:2]) == [True, True]
    assert abandon_batch("ab", [(a.seq, a.lock_token, 9, None)]) == [False]
    with pytest.raises(mq.LockLostError):
        assert a.lock_token is not None
        mq.complete("ab", a.seq, a.lock_token)


def test_bad_items_raise_typed_errors() -> None:
    mq.create_queue("ab")
    with pytest.raises(mq.InvalidArgumentError):
        abandon_batch("ab", [(1, "t", -1, None)])
    with pytest.raises(mq.InvalidArgumentError):
        abandon_batch("ab", [(1, "t", 0, None), (1, "u", 0, None)])
    assert abandon_batch("ab", []) == []
