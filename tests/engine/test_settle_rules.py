"""Settlement's own rules, one by one (``engine/settle.py``): what each single call
raises, naming its message and queue, for a stale token and for a message gone; what
``complete_with_result`` stores, hands on and refuses on any queue; a snooze that would
end at a held message's expiry, and a stale one; a renewal's notes; what defer, reject
and renew_batch hand on; and the tracer told of each settlement once."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq
from django_mqlite.engine import finished, receipts, settle, tracing
from django_mqlite.engine.clock import now_ms
from django_mqlite.engine.running import Notes
from django_mqlite.engine.settle_items import AbandonItem
from django_mqlite.engine.types import Completion, Outcome
from django_mqlite.models import Worker

pytestmark = pytest.mark.django_db

STALE = "0" * 32

VERBS: dict[str, Callable[[str, int, str], Any]] = {
    "complete": lambda q, seq, token: settle.complete(q, seq, token),
    "complete_with_result": lambda q, seq, token: settle.complete_with_result(q, seq, token, 1),
    "abandon": lambda q, seq, token: settle.abandon(q, seq, token),
    "snooze": lambda q, seq, token: settle.snooze(q, seq, token, 5),
    "reject": lambda q, seq, token: settle.reject(q, seq, token, "Bad"),
    "defer": lambda q, seq, token: settle.defer(q, seq, token),
    "renew": lambda q, seq, token: settle.renew(q, seq, token),
    "renew_lease": lambda q, seq, token: settle.renew_lease(q, seq, token),
}


@pytest.mark.parametrize("verb", VERBS)
def test_a_stale_single_call_names_its_message_and_queue(q: str, verb: str) -> None:
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    with pytest.raises(mq.LockLostError) as e:
        VERBS[verb](q, m.seq, STALE)
    assert str(e.value) == (
        f"message {m.seq} on {q!r}: lock token is not current or its lease ran out"
    )
    assert mq.peek(q)[0].state == "locked"


@pytest.mark.parametrize("verb", ["complete", "abandon", "renew"])
def test_a_lapsed_single_call_of_a_message_gone_says_so(q: str, verb: str) -> None:
    mq.send(q, b"x")
    (m,) = mq.receive(q, mode="receive_and_delete")
    call = getattr(settle, verb)
    with pytest.raises(mq.MessageGoneError) as e:
        call(q, m.seq, STALE, lapsed=True)
    assert str(e.value) == f"message {m.seq} is no longer on {q!r}"


def test_a_lapsed_settlement_of_a_message_another_claim_settled_is_stale(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    """Gone means no settlement of this verb is on record by any token: a message the
    next claim completed is not gone to the handle whose lease lapsed before it."""
    mq.send(q, b"x")
    (first,) = mq.receive(q, lock_duration=5)
    clock.advance(5)
    (second,) = mq.receive(q)
    settle.complete(q, second.seq, second.lock_token or "")
    with pytest.raises(mq.LockLostError) as e:
        settle.complete(q, first.seq, first.lock_token or "", lapsed=True)
    assert e.type is mq.LockLostError  # not its subclass MessageGoneError


def test_only_a_caller_that_asks_settles_a_lapsed_lease(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    mq.send(q, b"x")
    (m,) = mq.receive(q, lock_duration=5)
    clock.advance(5)  # at the deadline: expired, and no claim since
    item = AbandonItem(m.seq, m.lock_token or "")
    assert settle.abandon_many(q, [item])[0].outcome is Outcome.STALE
    assert settle.complete_many(q, [(m.seq, m.lock_token or "")])[0].outcome is Outcome.STALE
    with pytest.raises(mq.LockLostError):
        settle.renew_lease(q, m.seq, m.lock_token or "")
    assert settle.renew_lease(q, m.seq, m.lock_token or "", lapsed=True).ok
    assert settle.abandon_many(q, [item], lapsed=True)[0].outcome is Outcome.RETRIED


def test_complete_many_answers_each_seq_and_checks_its_completions(q: str) -> None:
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    with pytest.raises(mq.InvalidArgumentError) as e:
        settle.complete_many(q, [(m.seq, m.lock_token or "")], completions=[])
    assert str(e.value) == "completions must be parallel to items"
    [got] = settle.complete_many(q, [(m.seq, m.lock_token or "")])
    assert (got.seq, got.outcome) == (m.seq, Outcome.COMPLETED)


def test_a_finished_settlement_wakes_its_queues_waiters_at_commit(
    q: str, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    woken: list[str] = []
    monkeypatch.setattr(finished, "wake_here", woken.append)
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    with django_capture_on_commit_callbacks(execute=True):
        settle.complete(q, m.seq, m.lock_token or "")
    assert woken == [finished.done_key(q)]


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[list[int]]]:
    """The seqs each settlement asks the receipts (``replayed``) and ``_gone`` about."""
    seen: dict[str, list[list[int]]] = {"replayed": [], "gone": []}
    replayed, gone = receipts.replayed, settle._gone

    def asking_receipts(cursor: Any, queue_id: int, verb: str, requests: Any, now: int) -> Any:
        seen["replayed"].append([r[0] for r in requests])
        return replayed(cursor, queue_id, verb, requests, now)

    def asking_gone(cursor: Any, queue_id: int, verb: Any, missed: Any, now: int) -> Any:
        seen["gone"].append([r[0] for r in missed])
        return gone(cursor, queue_id, verb, missed, now)

    monkeypatch.setattr(receipts, "replayed", asking_receipts)
    monkeypatch.setattr(settle, "_gone", asking_gone)
    return seen


def test_only_what_the_statement_missed_is_looked_up(
    q: str, asked: dict[str, list[list[int]]]
) -> None:
    """The receipts are asked about the items the statement did not settle, and a
    lapsed settlement asks ``_gone`` about those no receipt answered: not the rest."""
    mq.send_batch(q, [mq.OutMessage(i) for i in range(2)])
    a, b = mq.receive(q, max_messages=2)
    pairs = [(a.seq, a.lock_token or ""), (b.seq, STALE)]
    got = settle.complete_many(q, pairs)
    assert [r.outcome for r in got] == [Outcome.COMPLETED, Outcome.STALE]
    assert asked == {"replayed": [[b.seq]], "gone": []}
    got = settle.complete_many(q, pairs, lapsed=True)  # a replay, and b still stale
    assert [r.outcome for r in got] == [Outcome.REPLAYED, Outcome.STALE]
    assert asked == {"replayed": [[b.seq], [a.seq, b.seq]], "gone": [[b.seq]]}


def test_complete_many_settles_items_with_and_without_a_completion_together(
    make_queue: Any,
) -> None:
    # On a queue that keeps results: one statement for those with a completion, one for
    # the rest; the batch counts both, and hands on the one result there is.
    make_queue("r", keep_results=3600)
    with mq.batch() as batch:
        batch.send("r", "a")
        batch.send("r", "b")
    a, b = mq.receive("r", max_messages=2)
    pairs = [(a.seq, a.lock_token or ""), (b.seq, b.lock_token or "")]
    got = settle.complete_many("r", pairs, completions=[Completion(result={"a": 1}), None])
    assert [(r.seq, r.outcome) for r in got] == [
        (a.seq, Outcome.COMPLETED),
        (b.seq, Outcome.COMPLETED),
    ]
    assert (stored(a.seq)[0], stored(b.seq)[0]) == ({"a": 1}, None)
    assert mq.get_batch(batch.id).completed == 2


def test_completions_are_encoded_before_the_settlements_transaction(
    make_queue: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Not while its write lock is held: SQLite's worker processes wait for each other
    # there.
    make_queue("r", keep_results=3600)
    mq.send("r", b"x")
    (m,) = mq.receive("r")
    depth = len(connection.atomic_blocks)
    seen: list[int] = []
    real = settle.encode_completion

    def spy(c: Completion) -> Any:
        seen.append(len(connection.atomic_blocks))
        return real(c)

    monkeypatch.setattr(settle, "encode_completion", spy)
    c = Completion(result={"a": 1}, attempt={"n": 1})
    got = settle.complete_many("r", [(m.seq, m.lock_token or "")], completions=[c])
    assert got[0].outcome is Outcome.COMPLETED
    assert seen == [depth]
    assert stored(m.seq) == ({"a": 1}, [{"n": 1}])


def test_a_completion_with_a_result_keeps_the_fence_unless_asked_to_lapse(
    make_queue: Any, clock: mq.clock.FrozenClock
) -> None:
    make_queue("r", keep_results=3600)
    mq.send("r", b"x")
    (m,) = mq.receive("r", lock_duration=5)
    clock.advance(5)  # at the deadline: expired, and no claim since
    pair, kept = (m.seq, m.lock_token or ""), [Completion(result={"r": 1})]
    assert settle.complete_many("r", [pair], completions=kept)[0].outcome is Outcome.STALE
    got = settle.complete_many("r", [pair], completions=kept, lapsed=True)
    assert got[0].outcome is Outcome.COMPLETED
    assert stored(m.seq)[0] == {"r": 1}
    with connection.cursor() as c:
        c.execute("SELECT state, completed_at FROM mqlite_message WHERE seq = %s", [m.seq])
        assert c.fetchone() == ("completed", now_ms())


# -- abandon --------------------------------------------------------------------------


def test_abandon_appends_its_attempt(q: str) -> None:
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    attempt = {"worker": "7", "started_at": 5, "error": {"class": "E", "traceback": "t"}}
    settle.abandon(q, m.seq, m.lock_token or "", error="boom", attempt=attempt)
    assert stored(m.seq)[1] == [attempt]


def test_an_abandon_on_its_last_delivery_frees_its_line(make_queue: Any) -> None:
    make_queue("g", ordering="group_fifo", max_delivery_count=1)
    mq.send("g", "a0", group_id="A")
    mq.send("g", "a1", group_id="A")
    (m,) = mq.receive("g")
    [got] = settle.abandon_many("g", [AbandonItem(m.seq, m.lock_token or "")])
    assert (got.seq, got.outcome) == (m.seq, Outcome.DEAD_LETTERED)
    assert [n.text() for n in mq.receive("g")] == ["a1"]


# -- complete_with_result -----------------------------------------------------------


def stored(seq: int) -> tuple[Any, Any]:
    """The row's result and attempt history, decoded."""
    with connection.cursor() as c:
        c.execute("SELECT result, attempts FROM mqlite_message WHERE seq = %s", [seq])
        result, attempts = c.fetchone()
    return (
        None if result is None else json.loads(result),
        None if attempts is None else json.loads(attempts),
    )


def test_a_kept_result_and_its_attempt_are_stored(make_queue: Any) -> None:
    make_queue("r", keep_results=3600)
    mq.send("r", b"x")
    (m,) = mq.receive("r")
    settle.complete_with_result("r", m.seq, m.lock_token or "", {"r": 1}, attempt={"a": 2})
    result, attempts = stored(m.seq)
    assert result == {"r": 1}
    assert attempts[-1] == {"a": 2}


def test_a_chain_step_completed_with_a_result_hands_it_on(make_queue: Any) -> None:
    # On queues that keep no results too: the next step carries it in its properties.
    make_queue("a")
    make_queue("b")
    mq.Step("a", 1).then(mq.Step("b", 2)).send()
    (m,) = mq.receive("a")
    settle.complete_with_result("a", m.seq, m.lock_token or "", {"from": "a"})
    (step,) = mq.receive("b")
    assert step.properties["chain_result"] == {"from": "a"}


@pytest.mark.parametrize("keep", [None, 3600])
@pytest.mark.parametrize("what", ["result", "attempt"])
def test_a_value_json_cannot_hold_is_refused_on_any_queue(
    make_queue: Any, keep: int | None, what: str
) -> None:
    # Checked before anything is written, whether or not the queue keeps results.
    make_queue("r", keep_results=keep)
    mq.send("r", b"x")
    (m,) = mq.receive("r")
    kwargs = {"attempt": float("nan")} if what == "attempt" else {}
    result = float("nan") if what == "result" else 1
    with pytest.raises(mq.InvalidArgumentError) as e:
        settle.complete_with_result("r", m.seq, m.lock_token or "", result, **kwargs)
    assert str(e.value).startswith(f"{what} is not JSON: ")
    assert mq.peek("r")[0].state == "locked"


# -- snooze past a message's expiry ---------------------------------------------------


def test_a_snooze_ending_at_the_expiry_is_refused_with_its_message(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    mq.send(q, b"x", ttl=10)
    (m,) = mq.receive(q)
    with pytest.raises(mq.SnoozePastExpiryError) as e:
        settle.snooze(q, m.seq, m.lock_token or "", 10)
    assert str(e.value) == (
        f"message {m.seq} on {q!r} expires before its snooze would end; nothing changed"
    )
    assert mq.peek(q)[0].state == "locked"
    got = settle.snooze(q, m.seq, m.lock_token or "", 9.999)
    assert (got.seq, got.outcome.value) == (m.seq, "snoozed")


def test_a_stale_snooze_past_the_expiry_is_lock_lost(q: str) -> None:
    mq.send(q, b"x", ttl=10)
    (m,) = mq.receive(q)
    with pytest.raises(mq.LockLostError):
        settle.snooze(q, m.seq, STALE, 60)


# -- renewals that carry notes --------------------------------------------------------


def test_a_renewal_writes_each_items_notes_and_none_where_it_has_none(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    mq.send_batch(q, [mq.OutMessage(i) for i in range(3)])
    ms = mq.receive(q, max_messages=3, lock_duration=10)
    notes = [Notes(progress='{"p": 1}'), None, Notes(checkpoint='"c"')]
    pairs = [(m.seq, m.lock_token or "") for m in ms]
    got = settle.renew_many(q, pairs, notes=notes, lock_duration=100)
    until = clock.now() + dt.timedelta(seconds=100)  # extended like any renewal
    assert [(r.outcome.value, r.locked_until) for r in got] == [("renewed", until)] * 3
    seen = {p.seq: (p.progress, p.checkpoint, p.locked_until) for p in mq.peek(q)}
    assert [seen[m.seq] for m in ms] == [
        ({"p": 1}, None, until),
        (None, None, until),
        (None, "c", until),
    ]


@pytest.mark.parametrize(
    "kwargs",
    [{"notes": [None, None]}, {"notes": [Notes(progress="1")], "lapsed": True}],
    ids=["not-parallel", "lapsed"],
)
def test_a_renewals_notes_are_parallel_to_its_items_and_never_lapsed(q: str, kwargs: Any) -> None:
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    with pytest.raises(mq.InvalidArgumentError) as e:
        settle.renew_many(q, [(m.seq, m.lock_token or "")], **kwargs)
    assert str(e.value) == "notes must be parallel to items, and never lapsed"


def test_a_renewal_stamps_its_workers_heartbeat_only_when_it_renewed(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    wid = Worker.objects.create(host="h", pid=1, queues=[q], started_at=0, last_seen=0).pk
    mq.send(q, b"x")
    (m,) = mq.receive(q)
    assert settle.renew_many(q, [(m.seq, STALE)], worker_id=wid)[0].outcome is Outcome.STALE
    assert Worker.objects.get(pk=wid).last_seen == 0  # nothing renewed, no proof of life
    clock.advance(1)
    assert settle.renew_many(q, [(m.seq, m.lock_token or "")], worker_id=wid)[0].ok
    assert Worker.objects.get(pk=wid).last_seen == now_ms()


# -- defer, reject, renew_batch: what each hands on -----------------------------------


def test_defer_many_answers_each_seq(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(i) for i in range(2)])
    ms = mq.receive(q, max_messages=2)
    got = settle.defer_many(q, [(m.seq, m.lock_token or "") for m in ms])
    assert [(r.seq, r.outcome.value) for r in got] == [(m.seq, "deferred") for m in ms]


def test_reject_keeps_its_reason_description_error_and_attempt(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(i) for i in range(2)])
    a, b = mq.receive(q, max_messages=2)
    settle.reject(q, a.seq, a.lock_token or "", "Bad")
    settle.reject(q, b.seq, b.lock_token or "", "Bad", "why", error="boom", attempt={"n": 1})
    seen = {p.seq: p for p in mq.peek(q)}
    assert (seen[a.seq].dead_letter_description, seen[a.seq].last_error) == ("", None)
    assert (seen[b.seq].dead_letter_description, seen[b.seq].last_error) == ("why", "boom")
    assert stored(b.seq)[1][-1] == {"n": 1}


def test_renew_batch_hands_on_its_lease(q: str, clock: mq.clock.FrozenClock) -> None:
    mq.send(q, b"x")
    (m,) = mq.receive(q, lock_duration=10)
    assert settle.renew_batch(q, [(m.seq, m.lock_token or "")], lock_duration=100) == [True]
    assert mq.peek(q)[0].locked_until == clock.now() + dt.timedelta(seconds=100)


@pytest.mark.parametrize("kwargs", [{"lock_duration": 0}, {"worker_id": 0}])
def test_an_empty_renew_batch_still_checks_its_arguments(q: str, kwargs: Any) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        settle.renew_batch(q, [], **kwargs)


# -- the tracer: each verb, its requests, outcomes and the producers' properties --------


class Recording:
    """A tracer that records the settlements it is told of (sends and claims pass)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def send(self, queue: str, messages: Any, run: Any, seqs: Any) -> Any:
        return run(messages)

    def claims_and_settles(self) -> bool:
        return True

    def received(self, *args: Any) -> None:
        pass

    def settled(
        self, queue: str, verb: str, requests: Any, results: Any, carried: Any, t: int
    ) -> None:
        outcomes = [r.outcome.value for r in results]
        self.calls.append((queue, verb, list(requests), outcomes, dict(carried), t))


def test_each_settlement_is_traced_once_with_its_verb_and_requests(
    q: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = Recording()
    monkeypatch.setattr(tracing, "hook", t)
    monkeypatch.setattr(tracing, "now_ns", lambda: 7)
    mq.send_batch(q, [mq.OutMessage(i, properties={"k": i}) for i in range(5)])
    ms = mq.receive(q, max_messages=5)
    pairs = [(m.seq, m.lock_token or "") for m in ms]
    settle.renew(q, *pairs[0])
    settle.complete(q, *pairs[0])
    settle.abandon(q, *pairs[1], delay=2)
    settle.snooze(q, *pairs[2], 3)
    settle.reject(q, *pairs[3], "Bad", "why")
    settle.defer(q, *pairs[4])
    verbs = [(c[1], c[2], c[3], c[5]) for c in t.calls]
    assert verbs == [
        ("renew", [(*pairs[0], "")], ["renewed"], 7),
        ("complete", [(*pairs[0], "")], ["completed"], 7),
        ("abandon", [(*pairs[1], "delay_ms=2000")], ["scheduled"], 7),
        ("snooze", [(*pairs[2], "delay_ms=3000")], ["snoozed"], 7),
        ("reject", [(*pairs[3], '["Bad","why"]')], ["dead_lettered"], 7),
        ("defer", [(*pairs[4], "")], ["deferred"], 7),
    ]
    assert all(c[0] == q for c in t.calls)
    assert t.calls[1][4][pairs[0][0]]["k"] == 0  # the producer's properties, carried


def test_a_head_snoozed_past_its_last_delivery_frees_its_line(make_queue: Any) -> None:
    make_queue("g", ordering="group_fifo", max_snoozes=1, max_delivery_count=1)
    mq.send("g", "a0", group_id="A")
    mq.send("g", "a1", group_id="A")
    (m,) = mq.receive("g")
    assert settle.snooze("g", m.seq, m.lock_token or "", 0).outcome.value == "snoozed"
    assert mq.stats("g").totals["abandoned"] == 0  # the max itself is still a snooze
    (m,) = mq.receive("g")
    # Past max_snoozes the snooze is an abandon: on the last delivery, a dead letter.
    assert settle.snooze("g", m.seq, m.lock_token or "", 0).outcome.value == "dead_lettered"
    assert mq.stats("g").totals["abandoned"] == 1
    assert [n.text() for n in mq.receive("g")] == ["a1"]


def test_a_snooze_past_max_snoozes_counts_as_an_abandon(make_queue: Any) -> None:
    make_queue("s", max_snoozes=0, max_delivery_count=5)
    mq.send("s", "x")
    (m,) = mq.receive("s")
    assert settle.snooze("s", m.seq, m.lock_token or "", 0).outcome.value == "retried"
    totals = mq.stats("s").totals
    assert (totals["abandoned"], totals["retried"]) == (1, 1)


def test_a_snooze_past_the_last_delivery_is_buried_by_the_one_rule(make_queue: Any) -> None:
    make_queue("dlq")
    make_queue("s", max_snoozes=0, max_delivery_count=1, forward_dead_letters_to="dlq")
    with mq.batch() as b:
        b.send("s", "x")
    (m,) = mq.receive("s")
    got = settle.snooze("s", m.seq, m.lock_token or "", 0)
    assert (got.seq, got.outcome.value, got.forwarded_to) == (m.seq, "forwarded", "dlq")
    assert mq.get_batch(b.id).failed == 1
    assert (mq.stats("s").totals["abandoned"], mq.stats("s").totals["retried"]) == (1, 0)
    (dead,) = mq.receive("dlq")
    assert dead.text() == "x"
