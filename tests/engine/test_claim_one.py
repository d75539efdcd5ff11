"""The plain claim (``engine/claim.py``, ``_claim_one``): on PostgreSQL one statement
does what the general claim's transaction does (the queue's row, the promotion of due
scheduled messages, the claim, the worker's heartbeat, the delivered total). Each rule
below holds on every database; on PostgreSQL each is the one statement's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext, override_settings

import django_mqlite as mq
from django_mqlite.engine import claim
from django_mqlite.engine.clock import now_ms
from django_mqlite.models import Worker
from tests.support.plans import statement_text

pytestmark = pytest.mark.django_db

#: The receive's return of expired leases, its own statement (``expire_queue_locks``).
LEASE_RETURN = ("UPDATE mqlite_message SET state = CASE", "SELECT seq FROM mqlite_message")


def statements(run: Callable[[], object]) -> list[str]:
    """The statements ``run`` makes, but the receive's return of expired leases (a
    prepared statement's ``EXECUTE`` as the text it runs)."""
    with CaptureQueriesContext(connection) as ctx:
        run()
    sql = [statement_text(s["sql"]) for s in ctx.captured_queries]
    # (and the savepoint of that return's transaction, inside the test's)
    return [s for s in sql if not s.startswith((*LEASE_RETURN, "SAVEPOINT", "RELEASE SAVEPOINT"))]


def one_statement_here() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("one statement needs data-modifying CTEs (PostgreSQL)")


@pytest.mark.parametrize(
    ("sends", "kwargs", "claimed"),
    [
        (2, {}, 1),
        (2, {"max_messages": 3}, 2),  # fewer than asked, nothing promoted: no second try
        (0, {"max_messages": 5}, 0),
        (2, {"max_messages": 1, "group_batch": True}, 1),  # a group batch of one is plain
        (1, {"worker_id": "worker"}, 1),
    ],
)
def test_a_plain_claim_is_one_statement_on_postgresql(
    q: str, sends: int, kwargs: dict[str, Any], claimed: int
) -> None:
    one_statement_here()
    if kwargs.get("worker_id") == "worker":
        kwargs["worker_id"] = Worker.objects.create(
            host="h", pid=1, queues=[q], started_at=0, last_seen=0
        ).pk
    mq.receive(q)  # prepares the statement on this session
    mq.send_batch(q, [mq.OutMessage(b"%d" % i) for i in range(sends)])
    got: list[Any] = []
    sql = statements(lambda: got.extend(mq.receive(q, **kwargs)))
    assert len(sql) == 1, sql
    assert sql[0].startswith("WITH q AS (")
    assert len(got) == claimed and all(m.delivery_count == 1 for m in got)


def test_a_claim_that_promoted_takes_the_claim_order_with_what_it_promoted(
    q: str, clock: Any
) -> None:
    """Highest priority first, then lowest seq, over what is claimable once the due
    messages are promoted: on PostgreSQL the statement that promoted claims nothing and
    a second one claims."""
    mq.receive(q)  # (on PostgreSQL: prepares the statement)
    low = mq.send(q, b"active, low priority")
    urgent = mq.send(q, b"due, high priority", delay=10, priority=5)
    early = mq.send(q, b"due, early", delay=10)
    later = mq.send(q, b"active, later")
    clock.advance(11)
    got: list[Any] = []
    sql = statements(lambda: got.extend(mq.receive(q)))
    assert [m.seq for m in got] == [urgent]
    if connection.vendor == "postgresql":
        assert [s.startswith("WITH q AS (") for s in sql] == [True, True], sql
    assert [m.seq for m in mq.receive(q, max_messages=2)] == [low, early]
    assert [m.seq for m in mq.receive(q, max_messages=2)] == [later]


def test_the_second_statement_claims_what_it_can(q: str, clock: Any) -> None:
    """With more due than one promotion takes (``REAP_CHUNK``), the second statement
    claims what is active rather than nothing (it promotes the next chunk too)."""
    due = [mq.send(q, b"scheduled", delay=10) for _ in range(5)]
    clock.advance(11)
    with override_settings(MQLITE={"REAP_CHUNK": 2}):
        assert [m.seq for m in mq.receive(q, max_messages=5)] == due[:2]
        # (PostgreSQL's second statement promoted the next chunk: it is active now)
        rest = [m.seq for m in mq.receive(q, max_messages=5)]
        assert rest[:2] == due[2:4]
        rest += [m.seq for m in mq.receive(q, max_messages=5)]
    assert rest == due[2:]


def test_the_second_statement_claims_only_what_is_asked(q: str, clock: Any) -> None:
    due = [mq.send(q, b"scheduled", delay=10) for _ in range(3)]
    now = mq.send(q, b"now")
    clock.advance(11)
    assert [m.seq for m in mq.receive(q, max_messages=2)] == due[:2]
    assert {p.seq for p in mq.peek(q) if p.state == "active"} == {due[2], now}


def test_a_claim_stamps_its_workers_heartbeat_only_when_it_took_something(
    q: str, clock: Any
) -> None:
    wid = Worker.objects.create(host="h", pid=1, queues=[q], started_at=0, last_seen=0).pk
    assert mq.receive(q, worker_id=wid) == []
    assert Worker.objects.get(pk=wid).last_seen == 0
    mq.send(q, b"x")
    clock.advance(1)
    (m,) = mq.receive(q, worker_id=wid)
    assert m.worker_id == wid
    assert Worker.objects.get(pk=wid).last_seen == now_ms()
    # Never moved back.
    Worker.objects.filter(pk=wid).update(last_seen=now_ms() + 60_000)
    mq.send(q, b"y")
    mq.receive(q, worker_id=wid)
    assert Worker.objects.get(pk=wid).last_seen == now_ms() + 60_000


def test_the_delivered_total_counts_each_claimed_message(q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(b"%d" % i) for i in range(4)])
    assert len(mq.receive(q)) == 1
    assert len(mq.receive(q, max_messages=10)) == 3
    assert mq.receive(q, max_messages=10) == []
    assert mq.stats(q).totals["delivered"] == 4


def test_the_lease_is_the_receives_or_else_the_queues(make_queue: Any, clock: Any) -> None:
    name = make_queue("leases", lock_duration=45).name
    mq.send_batch(name, [mq.OutMessage(b"a"), mq.OutMessage(b"b")])
    (a,) = mq.receive(name)
    (b,) = mq.receive(name, lock_duration=7)
    assert a.locked_until is not None and b.locked_until is not None
    assert a.locked_until.timestamp() * 1000 == now_ms() + 45_000
    assert b.locked_until.timestamp() * 1000 == now_ms() + 7_000


def test_a_paused_queue_gives_nothing_and_keeps_its_messages(q: str, clock: Any) -> None:
    seq = mq.send(q, b"x")
    due = mq.send(q, b"later", delay=5)
    mq.pause_queue(q)
    clock.advance(6)
    assert mq.receive(q, max_messages=5) == []
    states = {p.seq: (p.state, p.delivery_count) for p in mq.peek(q)}
    assert states == {seq: ("active", 0), due: ("scheduled", 0)}
    mq.resume_queue(q)
    assert sorted(m.seq for m in mq.receive(q, max_messages=5)) == [seq, due]


def test_a_missing_queue_is_refused() -> None:
    with pytest.raises(mq.QueueNotFoundError):
        mq.receive("nowhere")


def test_a_claim_in_the_callers_transaction_rolls_back_with_it(q: str) -> None:
    seq = mq.send(q, b"x")
    with pytest.raises(RuntimeError), transaction.atomic():
        (m,) = mq.receive(q)
        assert m.seq == seq
        raise RuntimeError("the caller's work failed")
    (p,) = mq.peek(q)
    assert (p.state, p.delivery_count) == ("active", 0)
    assert mq.stats(q).totals["delivered"] == 0
    (again,) = mq.receive(q)
    assert again.seq == seq and again.delivery_count == 1


def test_a_queue_deleted_between_the_two_statements_gives_nothing(
    q: str, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second statement finds no queue (deleted after the first promoted): the
    receive returns nothing rather than failing."""
    one_statement_here()
    run_one = claim._run_one
    calls: list[int] = []

    def deleting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            mq.delete_queue(q, force=True)
        return run_one(*args, **kwargs)

    monkeypatch.setattr(claim, "_run_one", deleting)
    mq.send(q, b"scheduled", delay=10)
    clock.advance(11)
    assert mq.receive(q) == []
    assert len(calls) == 2
