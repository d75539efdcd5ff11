"""The claim's own rules, one by one (``engine/claim.py``): what ``check_receive`` returns
and each refusal's message at its bound, the long-poll's clock, what a claim hands on
(the database alias, the worker, ``limited``), the worker's heartbeat, a
receive-and-delete's line and batch, the tracer's one call, and ``receive_deferred``'s
arguments, budget and counters."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq
from django_mqlite.engine import attempts, claim, tracing
from django_mqlite.engine.claim import Claimed, ReceiveArgs, check_receive
from django_mqlite.engine.types import Mode
from django_mqlite.models import Worker
from tests.support.plans import statement_text

pytestmark = pytest.mark.django_db

BIG = 2**62


# -- check_receive --------------------------------------------------------------------


def test_the_defaults_of_a_receive() -> None:
    assert check_receive("q") == ReceiveArgs(
        queue="q",
        max_messages=1,
        wait_ms=0,
        lock_ms=None,
        mode=Mode.PEEK_LOCK,
        attempt_key=None,
        worker_id=None,
        max_bytes=None,
        alias="default",
        group_batch=False,
    )


def test_each_argument_is_handed_on() -> None:
    args = check_receive(
        "q",
        max_messages=7,
        wait=2.5,
        lock_duration=45,
        mode="receive_and_delete",
        attempt_id="a1",
        attempt_scope="user:1",
        max_bytes=BIG,
        worker_id=9,
        group_batch=1,  # type: ignore[arg-type]
    )
    assert (args.max_messages, args.wait_ms, args.lock_ms) == (7, 2500, 45_000)
    assert args.mode is Mode.RECEIVE_AND_DELETE
    assert args.attempt_key == attempts.key("user:1", "a1")
    assert (args.worker_id, args.max_bytes, args.group_batch) == (9, BIG, True)
    assert check_receive("q", attempt_id="a1").attempt_key == attempts.key(None, "a1")
    assert check_receive("q", attempt_scope="x" * attempts.MAX_SCOPE_LEN).attempt_key is None


def test_the_wait_is_capped_at_twenty_seconds() -> None:
    assert check_receive("q", wait=20).wait_ms == 20_000
    assert check_receive("q", wait=dt.timedelta(hours=1)).wait_ms == 20_000


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_messages": 0}, "max_messages must be an integer in [1, 256], not 0"),
        ({"wait": "1"}, "wait must be seconds or a timedelta, not '1'"),
        ({"mode": "peek"}, "mode must be 'peek_lock' or 'receive_and_delete'"),
        ({"attempt_id": ""}, "attempt_id must be a non-empty string of at most"),
        ({"attempt_scope": "x" * 513}, "attempt_scope must be a non-empty string of at most 512"),
        ({"max_bytes": 0}, f"max_bytes must be an integer in [1, {BIG}], not 0"),
        ({"max_bytes": BIG + 1}, f"max_bytes must be an integer in [1, {BIG}]"),
        ({"worker_id": 0}, "worker_id must be an integer in [1, "),
    ],
)
def test_each_refusal_names_its_argument(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(mq.InvalidArgumentError) as e:
        check_receive("q", **kwargs)
    assert str(e.value).startswith(message)


# -- receive: the long-poll's clock ---------------------------------------------------


class Clock:
    """time.monotonic that moves only when the long-poll sleeps (``wakeup.wait``)."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.t

    def wait(self, queue: str, timeout: float) -> None:
        assert timeout > 0, "a sleep of nothing: the deadline had passed"
        self.sleeps.append(timeout)
        self.t += timeout


@pytest.fixture
def poll(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(claim, "time", c)
    monkeypatch.setattr(claim.wakeup, "wait", c.wait)
    return c


def test_no_wait_means_one_claim_and_no_sleep(q: str, poll: Clock) -> None:
    # The clock does not move: the deadline is reached exactly, and that is the end.
    assert mq.receive(q) == []
    assert mq.receive(q, wait=0) == []
    assert poll.sleeps == []


def test_a_wait_sleeps_exactly_until_its_deadline(q: str, poll: Clock) -> None:
    assert mq.receive(q, wait=3) == []
    assert sum(poll.sleeps) == pytest.approx(3.0, abs=1e-9)
    assert poll.sleeps[:3] == [0.01, 0.02, 0.04]


# -- what a claim hands on ------------------------------------------------------------


def test_a_claim_names_its_database_and_worker(q: str) -> None:
    wid = Worker.objects.create(host="h", pid=1, queues=[q], started_at=0, last_seen=0).pk
    mq.send_batch(q, [mq.OutMessage(b"a"), mq.OutMessage(b"b")])
    got = mq.receive(q, max_messages=2, worker_id=wid)
    assert [(m.using, m.worker_id) for m in got] == [("default", wid)] * 2
    assert mq.stats(q).totals["delivered"] == 2
    assert Worker.objects.get(pk=wid).last_seen > 0  # the claim stamped its heartbeat


def test_a_replayed_attempt_names_its_database(q: str) -> None:
    mq.send(q, b"a")
    (first,) = mq.receive(q, attempt_id="r")
    (again,) = mq.receive(q, attempt_id="r")
    assert (again.seq, again.lock_token, again.using) == (first.seq, first.lock_token, "default")


def test_only_a_leasing_claim_with_a_worker_stamps_a_heartbeat(q: str) -> None:
    wid = Worker.objects.create(host="h", pid=1, queues=[q], started_at=0, last_seen=0).pk
    mq.send_batch(q, [mq.OutMessage(b"a"), mq.OutMessage(b"b")])
    with CaptureQueriesContext(connection) as plain:
        mq.receive(q)
    # PostgreSQL's one statement (``_claim_one``) holds the stamp as a part that writes
    # only the row of the worker it is given, none here; any other claim stamps nothing.
    sql = [statement_text(x["sql"]) for x in plain.captured_queries]
    assert not [s for s in sql if "mqlite_worker" in s and not s.startswith("WITH q AS (")]
    assert Worker.objects.get(pk=wid).last_seen == 0
    (m,) = mq.receive(q, mode="receive_and_delete", worker_id=wid)
    assert m.worker_id == wid and m.lock_token is None
    assert Worker.objects.get(pk=wid).last_seen == 0  # no lease, no proof of life needed


def test_limited_says_whether_the_queue_has_a_limit(make_queue: Any) -> None:
    assert Claimed().limited is False and list(Claimed()) == []
    plain, lim = make_queue("plain").name, make_queue("lim", max_in_flight=5).name
    assert mq.receive(plain).limited is False  # empty
    mq.send(plain, b"x")
    assert mq.receive(plain).limited is False
    mq.send(lim, b"x")
    got = mq.receive(lim)
    assert len(got) == 1 and got.limited is True
    assert mq.receive(lim).limited is True  # empty


def test_a_receive_and_delete_frees_its_line_and_counts_its_child(make_queue: Any) -> None:
    make_queue("g", ordering="group_fifo")
    make_queue("done")
    with mq.batch(on_complete=mq.Callback("done", {"cb": 1})) as b:
        b.send("g", "a0", group_id="A")
        b.send("g", "a1", group_id="A")
    (head,) = mq.receive("g", mode="receive_and_delete")
    assert head.text() == "a0"
    assert mq.get_batch(b.id).completed == 1
    (nxt,) = mq.receive("g", mode="receive_and_delete")  # the line moved on
    assert nxt.text() == "a1"
    assert (mq.get_batch(b.id).completed, mq.get_batch(b.id).state) == (2, "finished")


def test_a_group_batch_of_two_takes_the_head_and_its_follower(make_queue: Any) -> None:
    make_queue("g", ordering="group_fifo")
    for i in range(3):
        mq.send("g", f"a{i}", group_id="A")
    # A batch of one is the plain claim (no window of max_messages - 2 followers).
    (head,) = mq.receive("g", max_messages=1, group_batch=True)
    assert head.text() == "a0"
    head.abandon()
    assert [m.text() for m in mq.receive("g", max_messages=2, group_batch=True)] == ["a0", "a1"]


def test_an_expired_follower_keeps_its_place_in_the_window(
    make_queue: Any, clock: mq.clock.FrozenClock
) -> None:
    # A head's window is its next max_messages - 1 live followers; one that expired
    # (still active until the reaper comes) is not taken, and counts in the window.
    make_queue("g", ordering="group_fifo")
    mq.send("g", "a0", group_id="A")
    mq.send("g", "a1", group_id="A", ttl=1)
    mq.send("g", "a2", group_id="A")
    mq.send("g", "a3", group_id="A")
    clock.advance(2)
    assert [m.text() for m in mq.receive("g", max_messages=3, group_batch=True)] == ["a0", "a2"]


def test_a_limited_queue_takes_no_group_batch(make_queue: Any) -> None:
    make_queue("g", ordering="group_fifo", max_in_flight=10)
    for i in range(3):
        mq.send("g", f"a{i}", group_id="A")
    got = mq.receive("g", max_messages=3, group_batch=True)
    assert [m.text() for m in got] == ["a0"] and got.limited is True


# -- the tracer -----------------------------------------------------------------------


class Recording:
    """A tracer that records the claims it is told of (sends and settlements pass)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[int], int]] = []

    def send(self, queue: str, messages: Any, run: Any, seqs: Any) -> Any:
        return run(messages)

    def settled(self, *args: Any) -> None:
        pass

    def claims_and_settles(self) -> bool:
        return True

    def received(self, queue: str, msgs: Any, started_ns: int) -> None:
        self.calls.append((queue, [m.seq for m in msgs], started_ns))


@pytest.fixture
def tracer(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recording]:
    t = Recording()
    monkeypatch.setattr(tracing, "hook", t)
    monkeypatch.setattr(tracing, "now_ns", lambda: 12345)
    yield t


def test_a_claim_that_took_messages_is_traced_once(q: str, tracer: Recording) -> None:
    assert mq.receive(q) == []  # nothing taken, nothing traced
    seq = mq.send(q, b"x")
    (m,) = mq.receive(q)
    m.defer()
    assert mq.receive_deferred(q, [seq + 1000]) == []
    mq.receive_deferred(q, [seq])
    assert tracer.calls == [(q, [seq], 12345), (q, [seq], 12345)]


def test_untraced_a_claim_reads_no_tracing_clock(q: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail() -> int:
        raise AssertionError("read the tracing clock with no tracer")

    monkeypatch.setattr(tracing, "hook", None)
    monkeypatch.setattr(tracing, "now_ns", fail)
    seq = mq.send(q, b"x")
    (m,) = mq.receive(q)
    m.defer()
    assert [r.seq for r in mq.receive_deferred(q, [seq])] == [seq]


# -- receive_deferred -----------------------------------------------------------------


def deferred(q: str, n: int) -> list[int]:
    mq.send_batch(q, [mq.OutMessage(f"m{i}") for i in range(n)])
    got = mq.receive(q, max_messages=n)
    for m in got:
        m.defer()
    return [m.seq for m in got]


@pytest.mark.parametrize(
    ("seqs", "kwargs", "message"),
    [
        ({1}, {}, "seqs must be a list of at most 256 seqs"),
        ("1", {}, "seqs must be a list of at most 256 seqs"),
        (list(range(1, 258)), {}, "seqs must be a list of at most 256 seqs"),
        ([1], {"max_bytes": 0}, f"max_bytes must be an integer in [1, {BIG}], not 0"),
        ([1], {"max_bytes": BIG + 1}, f"max_bytes must be an integer in [1, {BIG}]"),
        ([1], {"lock_duration": 0}, "lock_duration must be > 0"),
    ],
)
def test_receive_deferred_refusals(q: str, seqs: Any, kwargs: Any, message: str) -> None:
    with pytest.raises(mq.InvalidArgumentError) as e:
        mq.receive_deferred(q, seqs, **kwargs)
    assert str(e.value).startswith(message)


def test_receive_deferred_takes_256_and_any_byte_budget_up_to_the_bound(q: str) -> None:
    assert mq.receive_deferred(q, list(range(1, 257))) == []
    assert mq.receive_deferred(q, [1], max_bytes=BIG) == []
    assert mq.receive_deferred(q, [1], max_bytes=1) == []


def test_receive_deferred_hands_on_its_lease_budget_and_database(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    a, b, c = deferred(q, 3)
    got = mq.receive_deferred(q, [c, a], lock_duration=45)
    assert [m.seq for m in got] == [a, c]
    assert all(m.locked_until == clock.now() + dt.timedelta(seconds=45) for m in got)
    assert all(m.using == "default" and m.delivery_count == 2 for m in got)
    assert mq.stats(q).totals["delivered"] == 5
    # A byte budget of one byte still takes the first (lowest seq), and only it.
    (only,) = mq.receive_deferred(q, [b], max_bytes=1)
    assert only.seq == b


def test_receive_deferred_with_a_byte_budget_takes_the_lowest_seqs_that_fit(q: str) -> None:
    seqs = deferred(q, 3)
    got = mq.receive_deferred(q, list(reversed(seqs)), max_bytes=2 * claim.FIELDS_BYTES + 10)
    assert [m.seq for m in got] == seqs[:2]


def test_receive_deferred_spends_the_rate_limit(make_queue: Any, clock: Any) -> None:
    q = make_queue("slow", rate_limit=1).name
    mq.send(q, b"a")
    (m,) = mq.receive(q)
    m.defer()
    assert mq.receive(q) == []  # the receive took the one token
    clock.advance(1)
    assert [r.seq for r in mq.receive_deferred(q, [m.seq])] == [m.seq]
    mq.send(q, b"later")
    assert mq.receive(q) == []  # and the deferred fetch the next
    clock.advance(1)
    assert len(mq.receive(q)) == 1


def test_receive_deferred_refills_the_bucket_to_its_capacity_before_it_spends(
    make_queue: Any, clock: Any
) -> None:
    q = make_queue("slow", rate_limit=1).name
    mq.send(q, b"a")
    (m,) = mq.receive(q)
    m.defer()
    clock.advance(10)  # ten tokens earned, one kept: the capacity
    assert [r.seq for r in mq.receive_deferred(q, [m.seq])] == [m.seq]
    mq.send(q, b"later")
    assert mq.receive(q) == []  # the fetch spent the one; the rest of the idle is gone
