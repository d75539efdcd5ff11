"""``settle.release``: claimed-but-unstarted messages go back without burning an attempt."""

from __future__ import annotations

from typing import Any

import django_mqlite as mq
from django_mqlite.engine.settle import release


def test_release_returns_to_active_and_undoes_the_delivery_count(q: str) -> None:
    a, b = mq.send(q, "a"), mq.send(q, "b")
    got = mq.receive(q, max_messages=2)
    assert release(q, [(m.seq, m.lock_token) for m in got if m.lock_token]) == [True, True]
    peeked = mq.peek(q)
    assert [(p.seq, p.state, p.delivery_count) for p in peeked] == [
        (a, "active", 0),
        (b, "active", 0),
    ]
    again = mq.receive(q, max_messages=2)
    assert [m.delivery_count for m in again] == [1, 1]


def test_release_is_fenced_on_token_and_live_lease(q: str, clock: Any) -> None:
    mq.send(q, "a")
    mq.send(q, "b")
    m1, m2 = mq.receive(q, max_messages=2, lock_duration=10)
    assert m1.lock_token and m2.lock_token
    assert release(q, [(m1.seq, "0" * 32)]) == [False]
    clock.advance(10)  # the lease ends exactly now: already expired
    assert release(q, [(m1.seq, m1.lock_token), (m2.seq, m2.lock_token)]) == [False, False]
    assert {p.state for p in mq.peek(q)} == {"locked"}


def test_release_keeps_a_group_head_at_the_head(make_queue: Any) -> None:
    q = make_queue(ordering="group_fifo").name
    first = mq.send(q, "1", group_id="g")
    mq.send(q, "2", group_id="g")
    [m] = mq.receive(q, max_messages=5)
    assert m.seq == first and m.lock_token
    release(q, [(m.seq, m.lock_token)])
    [again] = mq.receive(q, max_messages=5)
    assert again.seq == first and again.delivery_count == 1


def test_release_of_nothing_is_nothing(q: str) -> None:
    assert release(q, []) == []
