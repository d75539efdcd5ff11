"""Each settle verb, one message at a time and as a batch, on twin queues: the same
state, the same receipts, the same forwarding, the same totals (SPEC §2, §2.1; a single
call is the batch of one). A stale item is in every batch: LockLostError one at a time,
``stale`` in the batch, nothing changed either way."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq
from django_mqlite.engine import settle
from django_mqlite.engine.types import Outcome, Settled

pytestmark = pytest.mark.django_db

N = 4
STALE = N - 1  # the last item presents a wrong token
One = Callable[[str, mq.Received, int], Any]
Many = Callable[[str, list[mq.Received]], list[Any]]


def _token(m: mq.Received, i: int) -> str:
    return "not-the-token" if i == STALE else m.lock_token or ""


def _abandon_args(i: int) -> dict[str, Any]:
    return {"delay": 30 * (i % 2), "error": f"boom {i}"}


def _reject_args(i: int) -> tuple[str, str]:
    return f"Bad{i % 2}", f"why {i}"


def _one(verb: str) -> One:
    verb = verb.removesuffix("_batch")

    def call(q: str, m: mq.Received, i: int) -> Any:
        if verb == "abandon":
            return mq.abandon(q, m.seq, _token(m, i), **_abandon_args(i))
        if verb == "reject":
            return mq.reject(q, m.seq, _token(m, i), *_reject_args(i))
        return getattr(mq, verb)(q, m.seq, _token(m, i))

    return call


def _many(verb: str) -> Many:
    def call(q: str, ms: list[mq.Received]) -> list[Any]:
        if verb == "abandon":
            items = [
                settle.AbandonItem(m.seq, _token(m, i), **_abandon_args(i))
                for i, m in enumerate(ms)
            ]
            return settle.abandon_many(q, items)
        if verb == "reject":
            rejects = [
                settle.RejectItem(m.seq, _token(m, i), *_reject_args(i)) for i, m in enumerate(ms)
            ]
            return settle.reject_many(q, rejects)
        pairs = [(m.seq, _token(m, i)) for i, m in enumerate(ms)]
        if verb == "complete_batch":
            return mq.complete_batch(q, pairs)
        if verb == "renew_batch":
            return mq.renew_batch(q, pairs)
        return getattr(settle, f"{verb}_many")(q, pairs)

    return call


def _state(q: str) -> list[tuple[Any, ...]]:
    """Every message of ``q`` by body (seqs differ between the twins)."""
    rows = [
        (
            p.body,
            p.state,
            p.delivery_count,
            p.visible_at,
            p.locked_until,
            p.dead_letter_reason,
            p.dead_letter_description,
            p.last_error,
        )
        for p in mq.peek(q, limit=100)
    ]
    return sorted(rows)


def _receipts(q: str, bodies: dict[int, bytes]) -> list[tuple[Any, ...]]:
    """The receipts of ``q``'s messages (``bodies``: seq -> body), the queue id left out
    of their arguments (the twins have different ids)."""
    seqs = sorted(bodies)
    with connection.cursor() as c:
        c.execute(
            "SELECT seq, verb, args FROM mqlite_receipt WHERE seq IN "
            f"({', '.join(['%s'] * len(seqs))})",
            seqs,
        )
        rows = c.fetchall()
    return sorted((bodies[s], verb, re.sub(r"^q\d+\|", "", args)) for s, verb, args in rows)


def _twins(name: str, forward: bool) -> tuple[str, str]:
    for side in ("1", "n"):
        target = None
        if forward:
            target = mq.create_queue(f"{name}-{side}-dlq").name
        mq.create_queue(f"{name}-{side}", max_delivery_count=2, forward_dead_letters_to=target)
        mq.send_batch(f"{name}-{side}", [mq.OutMessage(f"m{i}") for i in range(N)])
    return f"{name}-1", f"{name}-n"


def _claim(q: str) -> list[mq.Received]:
    return sorted(mq.receive(q, max_messages=N), key=lambda m: m.body)


def _same(one: str, many: str, held: dict[str, list[mq.Received]], forward: bool) -> None:
    assert _state(one) == _state(many)
    assert mq.stats(one).totals == mq.stats(many).totals
    bodies = {q: {m.seq: m.body for m in held[q]} for q in (one, many)}
    assert _receipts(one, bodies[one]) == _receipts(many, bodies[many])
    if forward:
        assert _state(f"{one}-dlq") == _state(f"{many}-dlq")
        assert mq.stats(f"{one}-dlq").totals == mq.stats(f"{many}-dlq").totals


def _round(verb: str, one: str, many: str, forward: bool) -> list[Any]:
    held = {one: _claim(one), many: _claim(many)}
    for i, m in enumerate(held[one]):
        if i == STALE:
            with pytest.raises(mq.LockLostError):
                _one(verb)(one, m, i)
        else:
            _one(verb)(one, m, i)
    got = _many(verb)(many, held[many])
    _same(one, many, held, forward)
    # An exact replay answers on both paths, whichever path wrote the receipt, and
    # changes nothing.
    if not verb.startswith("renew"):
        for q in (one, many):
            for i, m in enumerate(held[q][:STALE]):
                _one(verb)(q, m, i)
            replay = _many(verb)(q, held[q])
            assert [r if isinstance(r, bool) else r.ok for r in replay] == [True] * STALE + [False]
        _same(one, many, held, forward)
    return got


@pytest.mark.parametrize("forward", [False, True], ids=["kept", "forwarded"])
@pytest.mark.parametrize("verb", ["complete", "complete_batch", "reject", "defer"])
def test_one_round_verbs(verb: str, forward: bool, clock: mq.clock.FrozenClock) -> None:
    one, many = _twins(verb.replace("_", "-"), forward)
    got = _round(verb, one, many, forward)
    assert len(got) == N
    if verb == "reject":
        buried = "forwarded" if forward else "dead_lettered"
        assert [r.outcome for r in got] == [buried] * STALE + ["stale"]
        where, state = (f"{many}-dlq", "active") if forward else (many, "dead_lettered")
        assert len(mq.peek(where, state=state)) == STALE


@pytest.mark.parametrize("forward", [False, True], ids=["kept", "forwarded"])
def test_abandon_retries_then_buries_on_the_last_delivery(
    forward: bool, clock: mq.clock.FrozenClock
) -> None:
    one, many = _twins("abandon", forward)
    first = _round("abandon", one, many, forward)
    assert [r.outcome for r in first] == [
        Outcome.RETRIED,
        Outcome.SCHEDULED,
        Outcome.RETRIED,
        Outcome.STALE,
    ]
    clock.advance(31)
    mq.reap()  # the parked ones are due; the stale item's lease ran out (reclaimed)
    second = _round("abandon", one, many, forward)
    buried = Outcome.FORWARDED if forward else Outcome.DEAD_LETTERED
    assert [r.outcome for r in second[:STALE]] == [buried] * STALE
    if forward:
        assert {r.forwarded_to for r in second[:STALE]} == {f"{many}-dlq"}
    totals = mq.stats(many).totals
    assert totals["exhausted"] == totals["dead_lettered"] == STALE


@pytest.mark.parametrize("verb", ["renew", "renew_batch"])
def test_renew(verb: str, clock: mq.clock.FrozenClock) -> None:
    one, many = _twins(verb.replace("_", "-"), False)
    held = {one: _claim(one), many: _claim(many)}
    clock.advance(5)
    for i, m in enumerate(held[one]):
        if i == STALE:
            with pytest.raises(mq.LockLostError):
                _one("renew")(one, m, i)
        else:
            _one("renew")(one, m, i)
    got = _many(verb)(many, held[many])
    _same(one, many, held, False)
    if verb == "renew":
        until = clock.now() + dt.timedelta(seconds=30)  # the queue's lock duration
        assert got[:STALE] == [
            Settled(m.seq, Outcome.RENEWED, locked_until=until) for m in held[many][:STALE]
        ]
        assert got[STALE].outcome is Outcome.STALE
