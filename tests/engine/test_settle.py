"""Settling: complete, abandon, reject, defer, renew; fencing on token and live lease."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.engine import settle

pytestmark = pytest.mark.django_db


def one(q: str, **kwargs: object) -> mq.Received:
    (m,) = mq.receive(q, **kwargs)  # type: ignore[arg-type]
    return m


def test_complete_removes(q: str) -> None:
    mq.send(q, b"x")
    one(q).complete()
    assert mq.peek(q) == []
    assert mq.stats(q).totals["completed"] == 1


def test_complete_keeps_result_when_queue_keeps_results(make_queue: object) -> None:
    mq.create_queue("r", keep_results=3600)
    mq.send("r", b"x")
    one("r").complete()
    (p,) = mq.peek("r")
    assert p.state == "completed"


@pytest.mark.parametrize(
    "bad", [{1: "a", "b": 2}, float("nan"), {1, 2}], ids=["mixed-keys", "nan", "set"]
)
def test_a_result_json_cannot_hold_is_a_typed_error(make_queue: object, bad: object) -> None:
    """Through complete_with_result and a batch's Completion alike; the lease stays."""
    mq.create_queue("r", keep_results=3600)
    mq.send("r", b"x")
    m = one("r")
    with pytest.raises(mq.InvalidArgumentError, match="result is not JSON"):
        settle.complete_with_result("r", m.seq, m.lock_token or "", bad)
    with pytest.raises(mq.InvalidArgumentError, match="attempt is not JSON"):
        mq.complete_batch(
            "r", [(m.seq, m.lock_token or "")], completions=[mq.Completion(attempt=bad)]
        )
    (p,) = mq.peek("r")
    assert p.state == "locked"
    settle.complete_with_result("r", m.seq, m.lock_token or "", {"ok": 1})


def test_abandon_returns_to_active_and_redelivers(q: str) -> None:
    seq = mq.send(q, b"x")
    one(q).abandon()
    again = one(q)
    assert again.seq == seq and again.delivery_count == 2


def test_abandon_with_delay_parks_in_scheduled(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"x")
    one(q).abandon(delay=dt.timedelta(seconds=5))
    assert mq.peek(q)[0].state == "scheduled"
    assert mq.receive(q) == []
    clock.advance(5)
    assert one(q).delivery_count == 2


def test_abandon_at_max_delivery_count_dead_letters(make_queue: object) -> None:
    mq.create_queue("m", max_delivery_count=2)
    mq.send("m", b"x")
    one("m").abandon()
    one("m").abandon(delay=100)  # the delay does not matter on the last delivery
    (p,) = mq.peek("m")
    assert p.state == "dead_lettered"
    assert p.dead_letter_reason == "MaxDeliveryCountExceeded"
    t = mq.stats("m").totals
    assert (t["abandoned"], t["retried"], t["exhausted"], t["dead_lettered"]) == (2, 1, 1, 1)


def test_abandon_keeps_last_error(q: str) -> None:
    mq.send(q, b"x")
    m = one(q)
    mq.abandon(q, m.seq, m.lock_token or "", error="Traceback: boom")
    assert mq.peek(q)[0].last_error == "Traceback: boom"


def test_reject_dead_letters_at_once(q: str) -> None:
    mq.send(q, b"x")
    one(q).reject("BadPayload", "missing field 'order'")
    (p,) = mq.peek(q)
    assert (p.state, p.dead_letter_reason, p.dead_letter_description) == (
        "dead_lettered",
        "BadPayload",
        "missing field 'order'",
    )
    with pytest.raises(mq.InvalidArgumentError):
        mq.reject(q, p.seq, "t" * 32, "")


def test_defer_and_receive_deferred(q: str) -> None:
    seq = mq.send(q, b"x")
    other = mq.send(q, b"y")
    one(q).defer()
    assert mq.peek(q)[0].state == "deferred"
    assert [m.seq for m in mq.receive(q, max_messages=5)] == [other]
    (m,) = mq.receive_deferred(q, [seq, other, 999_999])
    assert (m.seq, m.delivery_count) == (seq, 2)
    assert mq.receive_deferred(q, [seq]) == []
    m.complete()


def test_renew_extends_and_never_shortens(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"x")
    m = one(q, lock_duration=60)
    granted = m.locked_until
    clock.advance(10)
    # The queue's 30 s from now ends before the 50 s still granted: nothing shortens.
    assert m.renew() == granted
    longer = mq.renew(q, m.seq, m.lock_token or "", lock_duration=600)
    assert longer == clock.now() + dt.timedelta(seconds=600)
    shorter = mq.renew(q, m.seq, m.lock_token or "", lock_duration=1)
    assert shorter == longer


# -- fencing ---------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["complete", "abandon", "reject", "defer", "renew"])
def test_wrong_token_is_lock_lost(q: str, verb: str) -> None:
    mq.send(q, b"x")
    m = one(q)
    args = ("Bad",) if verb == "reject" else ()
    with pytest.raises(mq.LockLostError) as exc:
        getattr(mq, verb)(q, m.seq, "0" * 32, *args)
    assert exc.value.code == "lock_lost"
    assert mq.peek(q)[0].state == "locked"


@pytest.mark.parametrize("verb", ["complete", "abandon", "reject", "defer", "renew"])
def test_equality_at_the_deadline_is_expired(
    q: str, clock: mq.clock.FrozenClock, verb: str
) -> None:
    mq.send(q, b"x")
    m = one(q, lock_duration=10)
    clock.advance(10)  # now == locked_until, the reaper has not run
    args = ("Bad",) if verb == "reject" else ()
    with pytest.raises(mq.LockLostError):
        getattr(mq, verb)(q, m.seq, m.lock_token, *args)
    assert mq.peek(q)[0].state == "locked"


def test_one_millisecond_before_the_deadline_is_live(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"x")
    m = one(q, lock_duration=10)
    clock.advance(9.999)
    m.complete()


def test_previous_owner_is_fenced_after_redelivery(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"x")
    first = one(q, lock_duration=10)
    clock.advance(11)
    assert mq.reap()["expired_locks"] == 1
    second = one(q)
    assert second.lock_token != first.lock_token
    with pytest.raises(mq.LockLostError):
        first.complete()
    second.complete()


def test_settling_twice_differently_is_lock_lost(q: str) -> None:
    mq.send(q, b"x")
    m = one(q)
    m.complete()
    with pytest.raises(mq.LockLostError):
        m.abandon()
    with pytest.raises(mq.LockLostError):
        m.renew()


@pytest.mark.parametrize("args", [(0, "t"), (-1, "t"), ("1", "t"), (1, ""), (1, None), (True, "t")])
def test_bad_settle_arguments(q: str, args: tuple[object, object]) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        mq.complete(q, *args)  # type: ignore[arg-type]


# -- batches ---------------------------------------------------------------------------


def test_complete_batch_reports_stale_items(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x") for _ in range(3)])
    a, b, c = mq.receive(q, max_messages=3)
    results = mq.complete_batch(
        q, [(a.seq, a.lock_token), (b.seq, "0" * 32), (c.seq, c.lock_token)]
    )
    assert results == [True, False, True]
    assert [p.seq for p in mq.peek(q)] == [b.seq]
    assert mq.complete_batch(q, []) == []


def test_renew_batch(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send_batch(q, [mq.OutMessage(b"x") for _ in range(2)])
    a, b = mq.receive(q, max_messages=2, lock_duration=5)
    clock.advance(5)  # both at the deadline: expired
    assert mq.renew_batch(q, [(a.seq, a.lock_token), (b.seq, b.lock_token)]) == [False, False]
    mq.reap()
    a, b = mq.receive(q, max_messages=2, lock_duration=5)
    assert mq.renew_batch(q, [(a.seq, a.lock_token), (b.seq, "x" * 32)]) == [True, False]
    with pytest.raises(mq.InvalidArgumentError):
        mq.renew_batch(q, [(1, "t")] * 513)
    with pytest.raises(mq.InvalidArgumentError):
        mq.complete_batch(q, [(a.seq, a.lock_token), (a.seq, a.lock_token)])


@pytest.mark.parametrize("bad", ["1", -1, 0, 1.5, True, 2**63])
def test_a_bad_worker_id_is_a_typed_error_and_changes_nothing(q: str, bad: object) -> None:
    mq.send(q, "a")
    with pytest.raises(mq.InvalidArgumentError, match="worker_id"):
        mq.receive(q, worker_id=bad)  # type: ignore[arg-type]
    [m] = mq.receive(q)
    assert m.lock_token is not None
    with pytest.raises(mq.InvalidArgumentError, match="worker_id"):
        mq.renew_batch(q, [(m.seq, m.lock_token)], worker_id=bad)  # type: ignore[arg-type]
    [p] = mq.peek(q)
    assert (p.state, p.delivery_count) == ("locked", 1)


# -- what the verbs answer, and where they take their cursor ---------------------------


def test_each_verb_says_what_it_did(make_queue: Any, clock: mq.clock.FrozenClock) -> None:
    from django_mqlite.engine import settle
    from django_mqlite.engine.types import Outcome

    q = make_queue("said", max_delivery_count=1).name
    mq.send_batch(q, [mq.OutMessage(i) for i in range(5)])
    a, b, c, d, e = mq.receive(q, max_messages=5)
    assert [r.outcome for r in settle.complete_many(q, [(a.seq, a.lock_token or "")])] == [
        Outcome.COMPLETED
    ]
    [deferred] = settle.defer_many(q, [(b.seq, b.lock_token or "")])
    [renewed] = settle.renew_many(q, [(c.seq, c.lock_token or "")], lock_duration=60)
    assert (deferred.outcome, renewed.outcome) == (Outcome.DEFERRED, Outcome.RENEWED)
    assert renewed.locked_until == clock.now() + dt.timedelta(seconds=60)
    [buried] = settle.abandon_many(q, [settle.AbandonItem(c.seq, c.lock_token or "")])
    [rejected] = settle.reject_many(q, [settle.RejectItem(d.seq, d.lock_token or "", "Bad")])
    assert (buried.outcome, rejected.outcome) == (Outcome.DEAD_LETTERED, Outcome.DEAD_LETTERED)
    [stale] = settle.complete_many(q, [(e.seq, "wrong")])
    assert (stale.outcome, stale.ok) == (Outcome.STALE, False)


@pytest.mark.django_db(transaction=True)  # no test transaction around the verbs
def test_every_verb_opens_its_cursor_inside_its_transaction(
    q: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cursor taken before ``atomic()`` belongs to whatever connection the thread had
    then; inside, it is the connection the transaction runs on."""
    from django.db import connections

    from django_mqlite.engine import databases

    real = databases.ctx
    seen: list[bool] = []

    def ctx(alias: str) -> Any:
        seen.append(connections[alias].in_atomic_block)
        return real(alias)

    monkeypatch.setattr(databases, "ctx", ctx)
    mq.send_batch(q, [mq.OutMessage(i) for i in range(6)])
    ms = mq.receive(q, max_messages=6)
    seen.clear()
    mq.renew(q, ms[0].seq, ms[0].lock_token or "")
    ms[0].complete()
    ms[1].abandon()
    ms[2].reject("Bad")
    ms[3].defer()
    mq.complete_batch(q, [(ms[4].seq, ms[4].lock_token or "")])
    mq.renew_batch(q, [(ms[5].seq, ms[5].lock_token or "")])
    assert seen == [True] * 7
