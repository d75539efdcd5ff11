"""Producing: bodies and content types, batches, scheduling, the outbox, bad input."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from django.db import connection, connections, transaction
from django.test import override_settings

import django_mqlite as mq
from tests.support.features import has

pytestmark = pytest.mark.django_db


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
