"""Batches: every terminal transition of a child counts it, and the callbacks are
enqueued once, by the settlement that finishes the batch (``engine/tally.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction

import django_mqlite as mq
from django_mqlite.engine import canonical_json
from django_mqlite.engine.admission import MAX_PROPERTIES_BYTES

pytestmark = pytest.mark.django_db


@pytest.fixture
def qs(make_queue: Any) -> tuple[str, str]:
    make_queue("kids")
    make_queue("done")
    return "kids", "done"


def callbacks(done: str = "done") -> dict[str, mq.Callback]:
    return {
        "on_complete": mq.Callback(done, {"cb": "complete"}),
        "on_success": mq.Callback(done, {"cb": "success"}),
        "on_failure": mq.Callback(done, {"cb": "failure"}),
    }


def fired(done: str = "done") -> list[str]:
    """The callbacks waiting on ``done``, by name (each in its properties)."""
    return sorted(p.properties["batch_callback"] for p in mq.peek(done, limit=1000))


def make(n: int, kids: str = "kids", **options: Any) -> tuple[int, list[int]]:
    with mq.batch(**callbacks()) as b:
        seqs = [b.send(kids, {"i": i}, **options) for i in range(n)]
    return b.id, seqs


def batch_rows() -> int:
    with connection.cursor() as c:
        c.execute("SELECT COUNT(*) FROM mqlite_batch")
        return int(c.fetchone()[0])


def test_all_complete_fires_complete_and_success_after_the_last(qs: Any) -> None:
    bid, _seqs = make(3)
    assert mq.get_batch(bid).state == "running"
    msgs = mq.receive("kids", max_messages=3)
    for m in msgs[:2]:
        m.complete()
        assert fired() == []
    msgs[2].complete()
    assert fired() == ["on_complete", "on_success"]
    info = mq.get_batch(bid)
    assert (info.state, info.total, info.pending, info.completed, info.failed) == (
        "finished",
        3,
        0,
        3,
        0,
    )
    assert sorted(info.callbacks) == ["on_complete", "on_success"]
    (cb, _) = mq.peek("done")
    assert cb.properties["batch_id"] == bid
    assert (cb.properties["batch_total"], cb.properties["batch_completed"]) == (3, 3)
    assert cb.json() in ({"cb": "complete"}, {"cb": "success"})


def test_a_rejected_child_fires_failure_not_success(qs: Any) -> None:
    bid, _ = make(2)
    a, b = mq.receive("kids", max_messages=2)
    a.reject("Bad")
    assert fired() == []
    b.complete()
    assert fired() == ["on_complete", "on_failure"]
    assert mq.get_batch(bid).failed == 1


def test_last_delivery_abandon_and_lease_expiry_count_as_failed(
    make_queue: Any, clock: Any
) -> None:
    make_queue("kids", max_delivery_count=1, lock_duration=5)
    make_queue("done")
    bid, _ = make(2)
    a, _b = mq.receive("kids", max_messages=2)
    a.abandon()
    assert mq.get_batch(bid).failed == 1
    clock.advance(6)
    mq.reap()
    assert fired() == ["on_complete", "on_failure"]
    assert mq.get_batch(bid).failed == 2


def test_ttl_dead_letter_and_ttl_removal(make_queue: Any, clock: Any) -> None:
    make_queue("kids", default_ttl=5)
    make_queue("gone", default_ttl=5, dead_letter_on_expire=False)
    make_queue("done")
    with mq.batch(**callbacks()) as b:
        b.send("kids", "x")
        b.send("gone", "y")
    clock.advance(6)
    mq.reap()
    info = mq.get_batch(b.id)
    assert (info.failed, info.cancelled, info.state) == (1, 1, "finished")
    assert fired() == ["on_complete", "on_failure"]


def test_cancel_and_purge_of_waiting_children_count_as_cancelled(qs: Any) -> None:
    with mq.batch(**callbacks()) as b:
        s1 = b.send("kids", "a", delay=60)
        b.send("kids", "b")
    assert mq.cancel_scheduled("kids", s1)
    assert fired() == []
    assert mq.purge("kids", state="active") == 1
    info = mq.get_batch(b.id)
    assert (info.cancelled, info.completed, info.failed) == (2, 0, 0)
    # Nothing failed, but nothing succeeded either: only on_complete.
    assert fired() == ["on_complete"]


def test_a_forced_delete_queue_cancels_its_live_children(make_queue: Any) -> None:
    for name in ("kids", "other", "done"):
        make_queue(name)
    with mq.batch(**callbacks()) as b:
        b.send("kids", "waiting")
        b.send("kids", "scheduled", delay=60)
        b.send("kids", "in flight")
        b.send("kids", "dead")
        b.send("other", "elsewhere")
    got = mq.receive("kids", max_messages=2)
    got[1].reject("Bad")  # counted as failed when it died, not again
    mq.delete_queue("kids", force=True)
    info = mq.get_batch(b.id)
    assert (info.cancelled, info.failed, info.pending, info.state) == (3, 1, 1, "running")
    assert fired() == []
    mq.receive("other")[0].complete()
    assert fired() == ["on_complete", "on_failure"]


def test_a_forced_delete_that_ends_a_batch_fires_its_callbacks_with_it(qs: Any) -> None:
    bid, _ = make(2)
    with pytest.raises(RuntimeError), transaction.atomic():
        mq.delete_queue("kids", force=True)
        assert fired() == ["on_complete"]  # in the delete's transaction
        raise RuntimeError
    assert (mq.get_batch(bid).pending, fired()) == (2, [])
    mq.delete_queue("kids", force=True)
    info = mq.get_batch(bid)
    assert (info.state, info.cancelled, sorted(info.callbacks)) == ("finished", 2, ["on_complete"])
    assert fired() == ["on_complete"]


def test_a_callback_on_the_deleted_queue_is_recorded(make_queue: Any) -> None:
    make_queue("kids")
    with mq.batch(on_complete=mq.Callback("kids", "cb")) as b:
        b.send("kids", "a")
    mq.delete_queue("kids", force=True)
    info = mq.get_batch(b.id)
    assert info.state == "finished"
    assert info.callback_error is not None and "kids" in info.callback_error


def test_purging_dead_children_counts_nothing_more(qs: Any) -> None:
    bid, _ = make(1)
    mq.receive("kids")[0].reject("Bad")
    assert mq.purge("kids") == 1
    assert mq.get_batch(bid).failed == 1
    assert fired() == ["on_complete", "on_failure"]


def test_receive_and_delete_completes_a_child(qs: Any) -> None:
    bid, _ = make(1)
    mq.receive("kids", mode="receive_and_delete")
    assert mq.get_batch(bid).completed == 1
    assert fired() == ["on_complete", "on_success"]


def test_batch_settle_of_many_batches_at_once(qs: Any) -> None:
    ids = [make(2)[0] for _ in range(3)]
    msgs = mq.receive("kids", max_messages=10)
    assert mq.complete_batch("kids", [(m.seq, m.lock_token) for m in msgs]) == [True] * 6
    assert [mq.get_batch(i).state for i in ids] == ["finished"] * 3
    assert fired().count("on_success") == 3


def test_redrive_reopens_and_a_fired_callback_never_fires_again(qs: Any) -> None:
    bid, _ = make(2)
    a, b = mq.receive("kids", max_messages=2)
    a.reject("Bad")
    b.complete()
    assert fired() == ["on_complete", "on_failure"]
    assert mq.redrive("kids") == 1
    info = mq.get_batch(bid)
    assert (info.state, info.failed, info.pending, info.finished_at) == ("running", 0, 1, None)
    mq.receive("kids")[0].complete()
    # on_success had not fired: it does now; on_complete and on_failure already had.
    assert fired() == ["on_complete", "on_failure", "on_success"]
    assert mq.get_batch(bid).state == "finished"


def test_a_forwarded_dead_child_leaves_its_batch(make_queue: Any) -> None:
    make_queue("dlq")
    make_queue("kids", forward_dead_letters_to="dlq")
    make_queue("done")
    bid, _ = make(1)
    mq.receive("kids")[0].reject("Bad")
    assert mq.get_batch(bid).failed == 1
    mq.receive("dlq")[0].complete()  # the copy's completion is not the child's
    info = mq.get_batch(bid)
    assert (info.failed, info.completed) == (1, 0)
    assert fired() == ["on_complete", "on_failure"]


def test_children_settled_inside_the_block_fire_at_the_seal(qs: Any) -> None:
    with mq.batch(**callbacks()) as b:
        b.send("kids", "a")
        mq.receive("kids")[0].complete()
        assert fired() == []  # not sealed: no callback yet
    assert fired() == ["on_complete", "on_success"]


def test_kept_results_are_read_by_batch(make_queue: Any) -> None:
    make_queue("kids", keep_results=60)
    make_queue("done")
    bid, seqs = make(2)
    for m in mq.receive("kids", max_messages=2):
        mq.engine.settle.complete_with_result("kids", m.seq, m.lock_token, {"r": m.seq})
    assert mq.batch_results(bid) == {s: {"r": s} for s in seqs}


def test_a_block_that_raises_leaves_nothing(qs: Any) -> None:
    with pytest.raises(ZeroDivisionError), mq.batch(**callbacks()) as b:
        b.send("kids", "a")
        1 / 0  # noqa: B018
    assert (mq.peek("kids"), batch_rows()) == ([], 0)


def test_joins_the_callers_transaction(qs: Any) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        with mq.batch(**callbacks()) as b:
            b.send("kids", "a")
        raise RuntimeError
    assert (mq.peek("kids"), batch_rows()) == ([], 0)


def test_dedup_collapsed_child_is_not_counted_twice(make_queue: Any) -> None:
    make_queue("kids")
    make_queue("done")
    with mq.batch(**callbacks()) as b:
        first = b.send("kids", "a", message_id="m")
        again = b.send("kids", "a", message_id="m")
    assert first == again
    assert mq.get_batch(b.id).total == 1


def test_join_takes_messages_waiting_for_their_first_delivery(qs: Any) -> None:
    waiting = mq.send("kids", "w")
    scheduled = mq.send("kids", "s", delay=60)
    with mq.batch(**callbacks()) as b:
        assert b.join([scheduled, waiting]) == sorted([waiting, scheduled])
    assert mq.get_batch(b.id).total == 2
    assert batch_of(waiting) == batch_of(scheduled) == b.id


def batch_of(seq: int) -> int | None:
    with connection.cursor() as c:
        c.execute("SELECT batch_id FROM mqlite_message WHERE seq = %s", [seq])
        return c.fetchone()[0]  # type: ignore[no-any-return]


def test_join_refuses_any_other_message_and_changes_nothing(make_queue: Any) -> None:
    make_queue("kids", max_delivery_count=5)
    make_queue("done")

    def taken(name: str, then: str | None) -> int:
        make_queue(name, max_delivery_count=5)
        seq = mq.send(name, name)
        m = mq.receive(name)[0]
        if then is not None:
            getattr(m, then)()
        return seq

    refused = {
        "in flight": taken("flight", None),
        "deferred": taken("deferred", "defer"),
        "delivered before": taken("retried", "abandon"),
        "gone": taken("finished", "complete"),
        "in a batch": make(1)[1][0],
        "unknown": 10**9,
    }
    fine = mq.send("kids", "fine")
    for why, seq in refused.items():
        with mq.batch(**callbacks()) as b:
            b.send("kids", "own")
            with pytest.raises(mq.InvalidArgumentError, match=str(seq)):
                b.join([fine, seq])
        assert (mq.get_batch(b.id).total, batch_of(fine)) == (1, None), why
    with pytest.raises(mq.InvalidArgumentError), mq.batch(**callbacks()) as b:
        b.join(["1"])  # type: ignore[list-item]


# -- bad input: typed errors, nothing written --------------------------------------------


def test_a_batch_without_children_is_refused(qs: Any) -> None:
    with (
        pytest.raises(mq.InvalidArgumentError, match="at least one child"),
        mq.batch(**callbacks()),
    ):
        pass
    assert batch_rows() == 0


def test_a_callback_that_cannot_be_serialised_is_refused(qs: Any) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        with mq.batch(on_complete=mq.Callback("done", {1, 2})) as b:
            b.send("kids", "a")
    with pytest.raises(mq.InvalidArgumentError):
        mq.Callback("done", "x", nonsense=1)
    with pytest.raises(mq.QueueNotFoundError):
        with mq.batch(on_complete=mq.Callback("nope", "x")) as b:
            b.send("kids", "a")
    assert (mq.peek("kids"), batch_rows()) == ([], 0)


def test_a_callback_its_queue_would_refuse_is_refused_when_the_batch_is_made(
    make_queue: Any,
) -> None:
    make_queue("kids")
    make_queue("lines", ordering="group_fifo")
    with pytest.raises(mq.GroupRequiredError):
        with mq.batch(on_complete=mq.Callback("lines", "cb")) as b:
            b.send("kids", "a")
    assert (mq.peek("kids"), batch_rows()) == ([], 0)
    with mq.batch(on_complete=mq.Callback("lines", "cb", group_id="g")) as b:
        b.send("kids", "a")
    mq.receive("kids")[0].complete()
    assert [p.group_id for p in mq.peek("lines")] == ["g"]


def test_a_callback_whose_properties_overflow_with_the_summary_is_refused(qs: Any) -> None:
    # The properties fit on their own, not with the batch's summary the callback carries.
    room = MAX_PROPERTIES_BYTES - len(canonical_json.dumps({"pad": ""})) - 16
    props = {"pad": "x" * room}
    mq.send("done", "fits alone", properties=props)
    with pytest.raises(mq.InvalidArgumentError, match="properties"):
        with mq.batch(on_complete=mq.Callback("done", "cb", properties=props)) as b:
            b.send("kids", "a")
    assert (mq.peek("kids"), batch_rows()) == ([], 0)


def test_a_child_on_an_unknown_queue_rolls_back_the_batch(qs: Any) -> None:
    with pytest.raises(mq.QueueNotFoundError):
        with mq.batch(**callbacks()) as b:
            b.send("kids", "a")
            b.send("nope", "b")
    assert (mq.peek("kids"), batch_rows()) == ([], 0)


def test_a_callback_whose_queue_went_away_is_recorded(qs: Any) -> None:
    bid, _ = make(1)
    mq.delete_queue("done")
    mq.receive("kids")[0].complete()  # the settlement itself succeeds
    info = mq.get_batch(bid)
    assert info.state == "finished"
    assert info.callback_error is not None and "done" in info.callback_error


def test_unknown_batch(db: Any) -> None:
    with pytest.raises(mq.BatchNotFoundError):
        mq.get_batch(12345)


def test_a_callback_with_a_unique_key_is_refused(qs: Any) -> None:
    with pytest.raises(mq.InvalidArgumentError, match="unique_key"):
        mq.batch(on_complete=mq.Callback("done", "x", unique_key="k")).__enter__()
    assert batch_rows() == 0
