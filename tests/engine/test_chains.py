"""Chains: each step is enqueued by the completion of the previous one, in that
completion's transaction, with its result; a failed step stops the chain and keeps the
rest, which a redrive resumes (``engine/chain.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction

import django_mqlite as mq
from django_mqlite.engine import settle

pytestmark = pytest.mark.django_db


@pytest.fixture
def qs(make_queue: Any) -> tuple[str, str, str]:
    for name in ("a", "b", "c"):
        make_queue(name)
    return "a", "b", "c"


def chain() -> mq.Chain:
    return mq.Step("a", {"n": 1}).then(mq.Step("b", {"n": 2})).then(mq.Step("c", {"n": 3}))


def done(m: mq.Received, result: Any) -> None:
    settle.complete_many(
        m.queue, [(m.seq, m.lock_token or "")], completions=[mq.Completion(result)]
    )


def rows(table: str = "mqlite_message") -> int:
    with connection.cursor() as c:
        c.execute(f"SELECT COUNT(*) FROM {table}")
        return int(c.fetchone()[0])


def test_each_step_follows_the_completion_of_the_last_with_its_result(qs: Any) -> None:
    first = chain().send()
    assert [p.seq for p in mq.peek("a")] == [first]
    assert mq.peek("b") == [] and mq.peek("c") == []
    (m,) = mq.receive("a")
    assert m.json() == {"n": 1}
    done(m, {"from": "a"})
    (m,) = mq.receive("b")
    assert m.json() == {"n": 2}
    assert m.properties["chain_result"] == {"from": "a"}
    assert m.properties["chain_previous"] == first
    m.complete()  # no result: the next step gets None
    (m,) = mq.receive("c")
    assert m.properties["chain_result"] is None
    m.complete()
    assert [mq.peek(q) for q in qs] == [[], [], []]


def test_a_failed_step_stops_the_chain_and_a_redrive_resumes_it(make_queue: Any) -> None:
    make_queue("a", max_delivery_count=1)
    make_queue("b")
    make_queue("c")
    chain().send()
    (m,) = mq.receive("a")
    m.abandon()  # its last delivery: dead-lettered
    assert mq.peek("b") == []
    (dead,) = mq.peek("a", state="dead_lettered")
    with connection.cursor() as c:
        c.execute(
            "SELECT b.steps FROM mqlite_batch b JOIN mqlite_message m ON m.batch_id = b.id "
            "WHERE m.seq = %s",
            [dead.seq],
        )
        steps = c.fetchone()[0]
    assert '"b"' in str(steps) and '"c"' in str(steps)  # the rest, kept with the dead step
    assert mq.redrive("a") == 1
    (m,) = mq.receive("a")
    done(m, 7)
    (m,) = mq.receive("b")
    assert m.properties["chain_result"] == 7


def test_a_redelivered_step_enqueues_the_next_once(make_queue: Any, clock: Any) -> None:
    make_queue("a", lock_duration=5)
    make_queue("b")
    make_queue("c")
    chain().send()
    (m,) = mq.receive("a")
    clock.advance(6)  # the lease ran out: redelivered
    (again,) = mq.receive("a")
    with pytest.raises(mq.LockLostError):
        m.complete()
    again.complete()
    assert len(mq.peek("b")) == 1


def test_a_cancelled_step_ends_the_chain(qs: Any) -> None:
    first = mq.Step("a", "x", delay=60).then(mq.Step("b", "y")).send()
    assert mq.cancel_scheduled("a", first)
    assert mq.peek("b") == []


def test_a_chain_joins_the_callers_transaction(qs: Any) -> None:
    with transaction.atomic():
        chain().send()
        transaction.set_rollback(True)
    assert (rows(), rows("mqlite_batch")) == (0, 0)


def test_a_chain_of_one_is_a_send(qs: Any) -> None:
    seq = mq.Chain([mq.Step("a", "x")]).send()
    assert rows("mqlite_batch") == 0
    assert mq.receive("a")[0].seq == seq


@pytest.mark.parametrize(
    "bad",
    [
        lambda: mq.Step("a", "x").then(mq.Step("no-such-queue", "y")),
        lambda: mq.Step("a", "x").then(mq.Step("b", "y", scheduled_at=None, unique_key="k")),
        lambda: mq.Step("a", "x").then(mq.Step("b", float("nan"))),
        lambda: mq.Step("a", "x").then(mq.Step("b", "y", group_id="g")).then(mq.Step("g", "z")),
        lambda: mq.Step("no-such-queue", "x").then(mq.Step("b", "y")),
    ],
)
def test_bad_steps_are_refused_when_the_chain_is_sent(qs: Any, bad: Any) -> None:
    with pytest.raises((mq.QueueNotFoundError, mq.InvalidArgumentError, ValueError)):
        bad().send()
    assert (rows(), rows("mqlite_batch")) == (0, 0)


def test_a_step_on_a_group_fifo_queue_needs_its_group(make_queue: Any) -> None:
    make_queue("a")
    make_queue("g", ordering="group_fifo")
    with pytest.raises(mq.GroupRequiredError):
        mq.Step("a", "x").then(mq.Step("g", "y")).send()
    assert rows() == 0


def test_not_steps_are_refused(qs: Any) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        mq.Chain([])
    with pytest.raises(mq.InvalidArgumentError):
        mq.Chain([mq.Callback("a", "x")])  # type: ignore[list-item]


def test_a_step_that_collapses_into_an_earlier_message_stops_the_chain(qs: Any) -> None:
    earlier = mq.send("b", "earlier", message_id="dup")
    first = (
        mq.Step("a", "x")
        .then(mq.Step("b", "earlier", message_id="dup"))
        .then(mq.Step("c", "z"))
        .send()
    )
    (m,) = mq.receive("a")
    m.complete()  # the completion holds: the next step is the earlier message
    assert [p.seq for p in mq.peek("b")] == [earlier] and mq.peek("c") == []
    with connection.cursor() as c:
        c.execute("SELECT callback_error FROM mqlite_batch WHERE seq = %s", [first])
        assert "collapsed into message" in c.fetchone()[0]
