"""Dependencies: a message sent with ``depends_on`` waits, non-claimable, until what it
depends on completes; the settlement that completes the last one releases it in its
own transaction, and a dependency that fails dead-letters it (``DependencyFailed``)
(``engine/dependencies.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq

pytestmark = pytest.mark.django_db


@pytest.fixture
def qs(make_queue: Any) -> tuple[str, str]:
    make_queue("up")
    make_queue("down")
    return "up", "down"


def state(queue: str, seq: int) -> str | None:
    found = [p for p in mq.peek(queue, limit=1000) if p.seq == seq]
    return found[0].state if found else None


def message_rows() -> int:
    with connection.cursor() as c:
        c.execute("SELECT COUNT(*) FROM mqlite_message")
        return int(c.fetchone()[0])


def test_waits_for_every_dependency_and_is_released_by_the_last(qs: Any) -> None:
    a, b = mq.send("up", "a"), mq.send("up", "b")
    d = mq.send("down", "d", depends_on=[a, b])
    assert state("down", d) == "waiting"
    assert mq.receive("down") == []
    first, second = mq.receive("up", max_messages=2)
    first.complete()
    assert state("down", d) == "waiting" and mq.receive("down") == []
    second.complete()
    assert state("down", d) == "active"
    (got,) = mq.receive("down")
    assert (got.seq, got.text()) == (d, "d")
    assert mq.stats("down").counts["waiting"] == 0


def test_a_dead_dependency_dead_letters_its_dependents_down_the_line(qs: Any) -> None:
    a = mq.send("up", "a")
    d = mq.send("down", "d", depends_on=[a])
    e = mq.send("down", "e", depends_on=[d])
    (m,) = mq.receive("up")
    m.reject("Bad", "no")
    for seq in (d, e):
        (p,) = [p for p in mq.peek("down", state="dead_lettered") if p.seq == seq]
        assert p.dead_letter_reason == "DependencyFailed"
    assert f"message {a}" in str(
        [p.dead_letter_description for p in mq.peek("down", state="dead_lettered")]
    )
    stats = mq.stats("down")
    assert (stats.totals["dead_lettered"], stats.totals["rejected"]) == (2, 2)


def test_a_cancelled_or_purged_dependency_fails_its_dependents(qs: Any) -> None:
    a = mq.send("up", "a", delay=60)
    b = mq.send("up", "b")
    d = mq.send("down", "d", depends_on=[a])
    e = mq.send("down", "e", depends_on=[b])
    assert mq.cancel_scheduled("up", a)
    assert state("down", d) == "dead_lettered"
    assert mq.purge("up", state="active") == 1
    assert state("down", e) == "dead_lettered"


def test_a_waiting_message_can_be_cancelled_and_fails_its_own_dependents(qs: Any) -> None:
    a = mq.send("up", "a")
    d = mq.send("down", "d", depends_on=[a])
    e = mq.send("down", "e", depends_on=[d])
    assert mq.cancel_scheduled("down", d)
    assert state("down", e) == "dead_lettered"
    (m,) = mq.receive("up")
    m.complete()  # its dependent is gone: nothing to release
    assert mq.receive("down") == []


def test_depends_on_a_batch(qs: Any) -> None:
    with mq.batch() as b:
        b.send("up", "x")
        b.send("up", "y")
    d = mq.send("down", "d", depends_on=[b])
    one, two = mq.receive("up", max_messages=2)
    one.complete()
    assert state("down", d) == "waiting"
    two.complete()
    assert state("down", d) == "active"
    with mq.batch() as b2:
        b2.send("up", "x")
    e = mq.send("down", "e", depends_on=[b2])
    (m,) = mq.receive("up")
    m.reject("Bad")
    assert state("down", e) == "dead_lettered"


def test_a_message_completed_and_kept_is_a_dependency_already_met(make_queue: Any) -> None:
    make_queue("kept", keep_results=3600)
    make_queue("down")
    a = mq.send("kept", "a")
    (m,) = mq.receive("kept")
    m.complete()
    d = mq.send("down", "d", depends_on=[a, ("kept", a)])
    assert state("down", d) == "active"


def test_the_release_keeps_the_dependents_own_delay(qs: Any, clock: Any) -> None:
    a = mq.send("up", "a")
    d = mq.send("down", "d", depends_on=[a], delay=30)
    (m,) = mq.receive("up")
    m.complete()
    assert state("down", d) == "scheduled"
    clock.advance(31)
    (got,) = mq.receive("down")
    assert got.seq == d


def test_a_waiting_message_holds_its_group(make_queue: Any) -> None:
    make_queue("up")
    make_queue("g", ordering="group_fifo")
    a = mq.send("up", "a")
    d = mq.send("g", "first", group_id="k", depends_on=[a])
    mq.send("g", "second", group_id="k")
    assert mq.receive("g") == []
    (m,) = mq.receive("up")
    m.complete()
    (got,) = mq.receive("g")
    assert got.seq == d


def test_a_dependent_child_joins_its_batch_and_counts_there(qs: Any) -> None:
    a = mq.send("up", "a")
    with mq.batch(on_complete=mq.Callback("up", "done")) as b:
        d = b.send("down", "d", depends_on=[a])
    (m,) = mq.receive("up")
    m.complete()
    (got,) = mq.receive("down")
    assert got.seq == d
    got.complete()
    assert mq.get_batch(b.id).state == "finished"


def test_many_depend_on_one_and_the_dependency_is_redriven_after_failing(qs: Any) -> None:
    a = mq.send("up", "a")
    ds = [mq.send("down", i, depends_on=[a]) for i in range(3)]
    (m,) = mq.receive("up")
    m.reject("Bad")
    assert {state("down", d) for d in ds} == {"dead_lettered"}
    assert mq.redrive("up") == 1
    (m,) = mq.receive("up")
    m.complete()  # the dependents died of it: a redrive revives no edge
    assert {state("down", d) for d in ds} == {"dead_lettered"}
    assert mq.redrive("down") == 3  # redriven themselves, they run
    assert len(mq.receive("down", max_messages=3)) == 3


@pytest.mark.parametrize(
    "bad",
    [
        lambda up: [10**12],  # no such message
        lambda up: [("down", up)],  # there, but not on that queue
        lambda up: [],
        lambda up: "1",
        lambda up: [0],
        lambda up: [True],
        lambda up: [("no-such-queue", up)],
    ],
)
def test_bad_dependencies_are_refused_with_nothing_written(qs: Any, bad: Any) -> None:
    up = mq.send("up", "a")
    before = message_rows()
    with pytest.raises((mq.InvalidArgumentError, mq.QueueNotFoundError)):
        mq.send("down", "d", depends_on=bad(up))
    with pytest.raises((mq.InvalidArgumentError, mq.QueueNotFoundError)):
        mq.send_batch("down", [mq.OutMessage("ok"), mq.OutMessage("d", depends_on=bad(up))])
    assert message_rows() == before


def test_a_dead_dependency_or_a_failed_batch_is_refused(qs: Any) -> None:
    a = mq.send("up", "a")
    (m,) = mq.receive("up")
    m.reject("Bad")
    with mq.batch() as b:
        b.send("up", "x")
    before = message_rows()
    with pytest.raises(mq.InvalidArgumentError, match="dead-lettered"):
        mq.send("down", "d", depends_on=[a])
    (m,) = mq.receive("up")
    m.reject("Bad")
    with pytest.raises(mq.InvalidArgumentError, match="already failed"):
        mq.send("down", "d", depends_on=[b])
    assert message_rows() == before


def test_a_refused_dependency_inside_a_transaction_leaves_the_rest_alone(qs: Any) -> None:
    a = mq.send("up", "a")
    with transaction.atomic():
        kept = mq.send("down", "kept")
        with pytest.raises(mq.InvalidArgumentError):
            mq.send("down", "d", depends_on=[a, 10**12])
    assert [p.seq for p in mq.peek("down")] == [kept]
    (m,) = mq.receive("up")
    m.complete()  # made no node that anything waits for
    assert mq.receive("down")[0].seq == kept


def test_a_plain_message_runs_no_workflow_statement(qs: Any) -> None:
    """A message that nothing depends on and that depends on nothing is claimed and
    settled by the statements it always was: none of them reads or writes a batch, a
    node or a dependency."""
    mq.send("up", "warm")
    mq.receive("up")[0].complete()
    mq.send("up", "a")
    with CaptureQueriesContext(connection) as ctx:
        (m,) = mq.receive("up")
        m.complete()
    sql = [q["sql"] for q in ctx.captured_queries]
    assert not [s for s in sql if "mqlite_batch" in s or "mqlite_dependency" in s], sql
    with CaptureQueriesContext(connection) as plain:
        mq.send("up", "b")
    assert not [q for q in plain.captured_queries if "mqlite_dependency" in q["sql"]]


def test_a_publish_takes_no_dependencies(qs: Any) -> None:
    a = mq.send("up", "a")
    mq.create_topic("t")
    mq.subscribe("t", "down")
    with pytest.raises(mq.InvalidArgumentError):
        mq.publish("t", "x", depends_on=[a])
    assert mq.peek("down") == []


def test_a_batch_or_message_node_that_already_succeeded_is_a_dependency_met(qs: Any) -> None:
    with mq.batch() as b:
        b.send("up", "x")
    a = mq.send("up", "a")
    first = mq.send("down", "first", depends_on=[a])  # gives a its own node
    for m in mq.receive("up", max_messages=2):
        m.complete()
    assert state("down", first) == "active"
    d = mq.send("down", "d", depends_on=[b])
    assert state("down", d) == "active"


def test_references_by_id_name_a_batch_or_a_message_on_a_database(qs: Any) -> None:
    """``mq.BatchRef`` and ``mq.MessageRef``: what a surface without the objects at hand
    (HTTP, a task result id) names a dependency with."""
    from tests.settings import SECOND

    with mq.batch() as b:
        b.send("up", "x")
    a = mq.send("up", "a")
    d = mq.send("down", "d", depends_on=[mq.BatchRef(b.id), mq.MessageRef(a, using="default")])
    assert state("down", d) == "waiting"
    for m in mq.receive("up", max_messages=2):
        m.complete()
    assert state("down", d) == "active"
    before = message_rows()
    with pytest.raises(mq.CrossDatabaseError):
        mq.send("down", "e", depends_on=[mq.MessageRef(a, using=SECOND)])
    with pytest.raises(mq.CrossDatabaseError):
        mq.send("down", "e", depends_on=[mq.BatchRef(b.id, using=SECOND)])
    with pytest.raises(mq.InvalidArgumentError, match="does not exist"):
        mq.send("down", "e", depends_on=[mq.BatchRef(10**12)])
    with pytest.raises(mq.InvalidArgumentError):
        mq.send("down", "e", depends_on=[mq.BatchRef(0)])
    with pytest.raises(mq.InvalidArgumentError):
        mq.send("down", "e", depends_on=[mq.MessageRef(a, using=5)])  # type: ignore[arg-type]
    assert message_rows() == before


def test_a_batch_reference_never_names_a_messages_own_node(qs: Any) -> None:
    a = mq.send("up", "a")
    mq.send("down", "first", depends_on=[a])  # gives a its own node
    with connection.cursor() as c:
        c.execute("SELECT id FROM mqlite_batch WHERE seq = %s", [a])
        (node,) = c.fetchone()
    with pytest.raises(mq.InvalidArgumentError, match="does not exist"):
        mq.send("down", "e", depends_on=[mq.BatchRef(node)])
