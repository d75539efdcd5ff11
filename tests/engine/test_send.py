"""Producing: bodies and content types, batches, scheduling, the outbox, bad input."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.db import connection, connections, transaction
from django.test import override_settings

import django_mqlite as mq
from tests.settings import SECOND
from tests.support.features import has

# Untraced: the tests below that want a tracer install their own (``Tracer``).
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("untraced")]


def count_rows() -> int:
    with connection.cursor() as c:
        c.execute("SELECT count(*) FROM mqlite_message")
        return int(c.fetchone()[0])


def test_bodies_keep_their_type(q: str) -> None:
    mq.send(q, b"\x00\xffraw")
    mq.send(q, "héllo")
    mq.send(q, {"n": 1, "s": [1, 2]})
    mq.send(q, "<p/>", content_type="text/html")
    raw, text, data, html = mq.receive(q, max_messages=4)
    assert raw.body == b"\x00\xffraw" and raw.content_type is None
    assert text.text() == "héllo" and text.content_type == "text/plain; charset=utf-8"
    assert data.json() == {"n": 1, "s": [1, 2]} and data.content_type == "application/json"
    assert html.content_type == "text/html"


def test_metadata_round_trips(q: str) -> None:
    seq = mq.send(
        q,
        b"x",
        message_id="m-1",
        group_id="g",
        subject="order.created",
        properties={"tenant": 7},
        correlation_id="c-1",
        reply_to="replies",
        priority=5,
    )
    assert isinstance(seq, int) and seq > 0
    (m,) = mq.receive(q)
    assert (m.seq, m.message_id, m.group_id, m.subject) == (seq, "m-1", "g", "order.created")
    assert m.properties == {"tenant": 7}
    assert (m.correlation_id, m.reply_to, m.priority) == ("c-1", "replies", 5)
    assert m.delivery_count == 1
    assert m.enqueued_at.tzinfo is not None


def test_send_batch_returns_seqs_in_order(q: str) -> None:
    seqs = mq.send_batch(q, [mq.OutMessage(f"m{i}") for i in range(300)])
    assert seqs == sorted(seqs) and len(set(seqs)) == 300
    got = mq.receive(q, max_messages=256)
    assert [m.seq for m in got] == seqs[:256]
    assert [m.text() for m in got[:3]] == ["m0", "m1", "m2"]
    assert mq.send_batch(q, []) == []


def test_delay_and_scheduled_at_park_in_scheduled(q: str, clock: mq.clock.FrozenClock) -> None:
    a = mq.send(q, b"a", delay=10)
    b = mq.send(q, b"b", scheduled_at=clock.now() + dt.timedelta(seconds=20))
    past = mq.send(q, b"c", scheduled_at=clock.now() - dt.timedelta(days=1))
    assert [p.state for p in mq.peek(q)] == ["scheduled", "scheduled", "active"]
    assert [m.seq for m in mq.receive(q, max_messages=10)] == [past]
    clock.advance(10)
    assert [m.seq for m in mq.receive(q, max_messages=10)] == [a]
    clock.advance(9.999)
    assert mq.receive(q) == []
    clock.advance(0.001)
    assert [m.seq for m in mq.receive(q)] == [b]


def test_cancel_scheduled_only_never_delivered(q: str, clock: mq.clock.FrozenClock) -> None:
    seq = mq.send(q, b"a", delay=60)
    now = mq.send(q, b"b")
    assert mq.cancel_scheduled(q, seq) is True
    assert mq.cancel_scheduled(q, seq) is False
    assert mq.cancel_scheduled(q, now) is False  # active, not scheduled
    (m,) = mq.receive(q)
    m.abandon(delay=30)  # parked in scheduled, but it was delivered once
    assert mq.peek(q)[0].state == "scheduled"
    assert mq.cancel_scheduled(q, now) is False
    assert count_rows() == 1


def test_rollback_leaves_no_message(q: str) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        mq.send(q, b"x")
        mq.send_batch(q, [mq.OutMessage(b"y")])
        raise RuntimeError("business write failed")
    assert count_rows() == 0
    assert mq.stats(q).totals["enqueued"] == 0


@pytest.mark.django_db(transaction=True)
def test_uncommitted_send_is_invisible_to_other_connections() -> None:
    mq.create_queue("outbox")
    seen: dict[str, list[int]] = {}

    def other() -> None:
        try:
            seen["peek"] = [p.seq for p in mq.peek("outbox")]
            if has("concurrent_writers"):  # else BEGIN IMMEDIATE would wait for our commit
                seen["receive"] = [m.seq for m in mq.receive("outbox")]
        finally:
            connections.close_all()

    with transaction.atomic():
        seq = mq.send("outbox", b"x")
        t = threading.Thread(target=other)
        t.start()
        t.join(30)
    assert seen["peek"] == []
    assert seen.get("receive", []) == []
    assert [m.seq for m in mq.receive("outbox")] == [seq]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"body": object()}, mq.InvalidArgumentError),
        ({"body": float("nan")}, mq.InvalidArgumentError),
        ({"body": b"x", "priority": 1 << 20}, mq.InvalidArgumentError),
        ({"body": b"x", "priority": "high"}, mq.InvalidArgumentError),
        ({"body": b"x", "delay": -1}, mq.InvalidArgumentError),
        (
            {"body": b"x", "delay": 1, "scheduled_at": dt.datetime.now(dt.UTC)},
            mq.InvalidArgumentError,
        ),
        ({"body": b"x", "scheduled_at": dt.datetime(2030, 1, 1)}, mq.InvalidArgumentError),
        ({"body": b"x", "ttl": 0}, mq.InvalidArgumentError),
        ({"body": b"x", "message_id": ""}, mq.InvalidArgumentError),
        ({"body": b"x", "group_id": "g" * 129}, mq.InvalidArgumentError),
        ({"body": b"x", "properties": ["not", "a", "dict"]}, mq.InvalidArgumentError),
        ({"body": b"x", "properties": {"k": object()}}, mq.InvalidArgumentError),
        ({"body": b"x", "colour": "red"}, TypeError),
    ],
)
def test_bad_input_raises_typed_error_and_writes_nothing(
    q: str, kwargs: dict[str, object], error: type[Exception]
) -> None:
    # A copy: the parameter's dict is shared by every run of this test in the process
    # (the mutation runner runs the suite more than once in one process).
    kwargs = dict(kwargs)
    body = kwargs.pop("body")
    with pytest.raises(error):
        mq.send(q, body, **kwargs)  # type: ignore[arg-type]
    assert count_rows() == 0


def test_body_cap(q: str) -> None:
    with override_settings(MQLITE={"MAX_BODY_BYTES": 1000}):
        mq.send(q, b"x" * 1000)
        with pytest.raises(mq.MessageTooLargeError) as exc:
            mq.send(q, b"x" * 1001)
        assert exc.value.code == "message_too_large"
        with pytest.raises(mq.MessageTooLargeError):
            mq.send_batch(q, [mq.OutMessage(b"ok"), mq.OutMessage(b"x" * 1001)])
    assert count_rows() == 1  # the batch is all or nothing


def test_batch_rejects_non_outmessages(q: str) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        mq.send_batch(q, [b"raw"])  # type: ignore[list-item]
    with pytest.raises(mq.InvalidArgumentError):
        mq.send_batch(q, mq.OutMessage(b"x"))  # type: ignore[arg-type]
    assert count_rows() == 0


def test_group_fifo_requires_group(make_queue: object) -> None:
    mq.create_queue("fifo", ordering="group_fifo")
    with pytest.raises(mq.GroupRequiredError) as exc:
        mq.send("fifo", b"x")
    assert exc.value.code == "group_required"
    with pytest.raises(mq.GroupRequiredError):
        mq.send_batch("fifo", [mq.OutMessage(b"x", group_id="g"), mq.OutMessage(b"y")])
    assert count_rows() == 0
    assert mq.send("fifo", b"x", group_id="g") > 0


# -- the general path's rules one by one (its own tests, for the mutation run) -----------


def state_of(q: str, seq: int, using: str | None = None) -> str:
    [p] = [p for p in mq.peek(q, using=using) if p.seq == seq]
    return str(p.state)


def enqueued_ms(q: str, seq: int) -> int:
    [p] = [p for p in mq.peek(q) if p.seq == seq]
    return round(p.enqueued_at.timestamp() * 1000)


def test_the_batch_check_names_what_it_wants(q: str) -> None:
    for bad in ([b"raw"], mq.OutMessage(b"x")):
        with pytest.raises(mq.InvalidArgumentError) as exc:
            mq.send_batch(q, bad)  # type: ignore[arg-type]
        assert str(exc.value) == "messages must be a list of OutMessage"


def test_a_general_path_message_due_now_is_active_and_a_later_one_scheduled(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    now = mq.send(q, b"a", group_id="g")
    later = mq.send(q, b"b", group_id="h", delay=0.001)
    assert (state_of(q, now), state_of(q, later)) == ("active", "scheduled")


class Tracer:
    """A tracing hook that records each send it wraps: queue, bodies, seqs."""

    def __init__(self) -> None:
        self.sends: list[tuple[str, list[object], list[int]]] = []

    def send(self, queue: str, messages: list[mq.OutMessage], run: object, seqs: object) -> object:
        got = run(messages)  # type: ignore[operator]
        self.sends.append((queue, [m.body for m in messages], seqs(got)))  # type: ignore[operator]
        return got


def test_a_tracer_wraps_each_send_with_its_queue_messages_and_seqs(
    q: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django_mqlite.engine import tracing

    tracer = Tracer()
    monkeypatch.setattr(tracing, "hook", tracer)
    one = mq.send(q, b"a")
    grouped = mq.send(q, b"b", group_id="g")
    many = mq.send_batch(q, [mq.OutMessage(b"c"), mq.OutMessage(b"d")])
    assert mq.send_batch(q, []) == []  # nothing sent, nothing traced
    assert tracer.sends == [(q, [b"a"], [one]), (q, [b"b"], [grouped]), (q, [b"c", b"d"], many)]


def test_send_reported_says_whether_it_inserted_and_stamps_what_it_stored(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    from django_mqlite.engine import send as engine_send

    plain = engine_send.send_reported(q, b"a")  # the one-statement path
    keyed = engine_send.send_reported(q, b"b", message_id="m")  # the general path
    assert plain == (plain[0], clock.now_ms(), True)
    assert keyed == (keyed[0], clock.now_ms(), True)
    first = clock.now_ms()
    clock.advance(5)
    assert engine_send.send_reported(q, b"b", message_id="m") == (keyed[0], first, False)
    assert engine_send.send_stamped(q, b"b", message_id="m") == (keyed[0], first)
    assert enqueued_ms(q, keyed[0]) == first


def test_a_resend_of_a_message_already_gone_is_stamped_now(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    from django_mqlite.engine import send as engine_send

    seq = mq.send(q, b"x", message_id="m")
    mq.receive(q)[0].complete()  # gone, its dedup key still held
    clock.advance(5)
    assert engine_send.send_stamped(q, b"x", message_id="m") == (seq, clock.now_ms())


def test_the_general_path_stamps_the_time_it_was_given(
    q: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A send reads the clock once: the stamp it answers is the one the row stores."""
    from django_mqlite.engine import send as engine_send

    ticks = iter(range(1_800_000_000_000, 1_800_000_001_000))
    monkeypatch.setattr(engine_send, "now_ms", lambda: next(ticks))
    seq, stamp = engine_send.send_stamped(q, b"x", group_id="g")
    assert enqueued_ms(q, seq) == stamp


def test_a_conflicting_resend_names_its_message_and_queue(q: str) -> None:
    mq.send(q, b"x", message_id="order-1")
    with pytest.raises(mq.DedupConflictError) as exc:
        mq.send(q, b"y", message_id="order-1")
    assert str(exc.value) == f"message_id 'order-1' was sent to {q!r} with a different body"
    assert mq.send_batch(q, [mq.OutMessage(b"y", message_id="order-1")]) == [0]


def test_a_message_waits_for_what_it_depends_on_on_every_send_path(q: str) -> None:
    up = mq.send(q, b"up")
    one = mq.send(q, b"one", depends_on=[up])
    grouped = mq.send(q, b"grouped", group_id="g", depends_on=[up])
    free, waiting = mq.send_batch(
        q, [mq.OutMessage(b"free"), mq.OutMessage(b"waits", depends_on=[up])]
    )
    assert [state_of(q, s) for s in (one, grouped, free, waiting)] == [
        "waiting",
        "waiting",
        "active",
        "waiting",
    ]
    [m] = [m for m in mq.receive(q, max_messages=5) if m.seq == up]
    m.complete()
    assert {state_of(q, s) for s in (one, grouped, waiting)} == {"active"}


def test_a_batch_holding_unique_keys_inserts_row_by_row(q: str) -> None:
    held = mq.send(q, b"held", unique_key="k")
    seqs = mq.send_batch(
        q,
        [
            mq.OutMessage(b"a", unique_key="k"),  # held: takes the holder's seq
            mq.OutMessage(b"b", unique_key="new"),
            mq.OutMessage(b"c", unique_key="new"),  # held by the row before it
            mq.OutMessage(b"d"),
            mq.OutMessage(b"e", group_id="g"),
            mq.OutMessage(b"f", group_id="g"),
        ],
    )
    assert seqs[0] == held and seqs[2] == seqs[1]
    assert len(set(seqs)) == 5 and 0 not in seqs
    bodies = {p.seq: (p.body, p.state) for p in mq.peek(q)}
    assert bodies == {
        held: (b"held", "active"),
        seqs[1]: (b"b", "active"),
        seqs[3]: (b"d", "active"),
        seqs[4]: (b"e", "active"),
        seqs[5]: (b"f", "active"),
    }
    assert [m.seq for m in mq.receive(q, max_messages=10)] == [held, seqs[1], seqs[3], seqs[4]]
    assert mq.stats(q).totals["enqueued"] == 5


def test_a_send_in_a_transaction_wakes_its_queue_once_at_commit(
    q: str, django_capture_on_commit_callbacks: object
) -> None:
    from django_mqlite.engine import send_one

    alias = mq.database_of(q)
    with django_capture_on_commit_callbacks() as callbacks:  # type: ignore[operator]
        with transaction.atomic(using=alias):
            assert not send_one.wake_pending(alias, q)
            mq.send(q, b"a", group_id="g")
            assert send_one.wake_pending(alias, q)
            mq.send(q, b"b", group_id="g")
            mq.send_batch(q, [mq.OutMessage(b"c", message_id="m")])
    assert len([c for c in callbacks if isinstance(c, send_one.Wake)]) == 1


def test_the_engine_enqueues_its_own_message_inside_the_open_transaction(q: str) -> None:
    from django_mqlite.engine import send as engine_send

    alias = mq.database_of(q)
    inserted: list[int] = []
    with transaction.atomic(using=alias):
        seq = engine_send.enqueue_in(alias, q, mq.OutMessage(b"cb", group_id="g"), inserted)
        assert inserted == [seq] and state_of(q, seq) == "active"
        again = engine_send.enqueue_in(alias, q, mq.OutMessage(b"x", message_id="m"))
        assert engine_send.enqueue_in(alias, q, mq.OutMessage(b"x", message_id="m")) == again
        with pytest.raises(mq.DedupConflictError):
            engine_send.enqueue_in(alias, q, mq.OutMessage(b"y", message_id="m"))
    assert {p.seq for p in mq.peek(q)} == {seq, again}


@pytest.mark.django_db(databases=["default", SECOND])
def test_every_send_path_writes_on_the_database_it_is_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A queue that no setting declares, on the second database: only ``using`` says
    where it lives. With a tracer too (it wraps the same sends)."""
    from django_mqlite.engine import send as engine_send
    from django_mqlite.engine import tracing

    q = mq.create_queue("elsewhere", using=SECOND).name
    sent = [
        mq.send(q, b"plain", using=SECOND),
        mq.send(q, b"grouped", group_id="g", using=SECOND),
        *mq.send_batch(q, [mq.OutMessage(b"batch")], using=SECOND),
        engine_send.send_stamped(q, b"keyed", message_id="m", using=SECOND)[0],
    ]
    monkeypatch.setattr(tracing, "hook", Tracer())
    sent += [
        mq.send(q, b"traced", using=SECOND),
        mq.send(q, b"traced group", group_id="h", using=SECOND),
        *mq.send_batch(q, [mq.OutMessage(b"traced batch")], using=SECOND),
    ]
    assert sorted(p.seq for p in mq.peek(q, using=SECOND)) == sorted(sent)
    with connections[SECOND].cursor() as c:
        c.execute("SELECT count(*) FROM mqlite_message")
        assert c.fetchone()[0] == len(sent)
    assert count_rows() == 0  # nothing on the default database


@pytest.mark.django_db(databases=["default", SECOND])
def test_a_declared_queue_is_sent_to_on_its_database(settings: object) -> None:
    settings.MQLITE = {  # type: ignore[attr-defined]
        **getattr(settings, "MQLITE", {}),
        "QUEUES": {"far": {"database": SECOND}},
    }
    mq.create_queue("far")
    sent = [
        mq.send("far", b"plain"),
        mq.send("far", b"grouped", group_id="g"),
        *mq.send_batch("far", [mq.OutMessage(b"batch")]),
    ]
    assert sorted(p.seq for p in mq.peek("far")) == sorted(sent)
    assert count_rows() == 0


@pytest.mark.django_db(databases=["default", SECOND])
def test_a_send_wakes_its_queue_at_the_commit_of_its_own_database(
    django_capture_on_commit_callbacks: object,
) -> None:
    from django_mqlite.engine import send_one

    q = mq.create_queue("elsewhere", using=SECOND).name
    with django_capture_on_commit_callbacks(using=SECOND) as callbacks:  # type: ignore[operator]
        mq.send(q, b"a", group_id="g", using=SECOND)
    assert [c.queue for c in callbacks if isinstance(c, send_one.Wake)] == [q]
