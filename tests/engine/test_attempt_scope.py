"""Receive attempt ids belong to their caller (``attempt_scope``): the same id from
another scope, or from Python without one, is a fresh claim, never a replay of another
caller's batch and lock tokens."""

from __future__ import annotations

import pytest

import django_mqlite as mq

pytestmark = pytest.mark.django_db


def test_the_same_scope_replays(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(b"a"), mq.OutMessage(b"b")])
    first = mq.receive(q, max_messages=2, attempt_id="r1", attempt_scope="user:1")
    again = mq.receive(q, max_messages=2, attempt_id="r1", attempt_scope="user:1")
    assert [(m.seq, m.lock_token) for m in again] == [(m.seq, m.lock_token) for m in first]
    assert mq.stats(q).totals["delivered"] == 2


@pytest.mark.parametrize("other", ["user:2", None])
def test_another_scope_gets_a_fresh_claim(q: str, other: str | None) -> None:
    mq.send_batch(q, [mq.OutMessage(b"a"), mq.OutMessage(b"b")])
    first = mq.receive(q, attempt_id="r1", attempt_scope="user:1")
    theirs = mq.receive(q, attempt_id="r1", attempt_scope=other)
    assert len(first) == len(theirs) == 1
    assert theirs[0].seq != first[0].seq
    assert theirs[0].lock_token != first[0].lock_token
    # and the first caller still replays its own batch
    mine = mq.receive(q, attempt_id="r1", attempt_scope="user:1")
    assert [(m.seq, m.lock_token) for m in mine] == [(first[0].seq, first[0].lock_token)]


def test_a_python_id_never_matches_a_scoped_one(q: str) -> None:
    mq.send(q, b"a")
    assert len(mq.receive(q, attempt_id="r1", attempt_scope="sqs:AKID:")) == 1
    assert mq.receive(q, attempt_id="r1") == []  # nothing left, and no replay of theirs


@pytest.mark.parametrize("bad", ["", 5, "x" * 600])
def test_a_bad_scope_is_refused_before_any_claim(q: str, bad: object) -> None:
    mq.send(q, b"a")
    with pytest.raises(mq.InvalidArgumentError):
        mq.receive(q, attempt_id="r1", attempt_scope=bad)  # type: ignore[arg-type]
    assert mq.stats(q).totals["delivered"] == 0
