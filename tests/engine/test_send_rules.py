"""The send's rules that only show on a second database, in a failing batch or under a
second writer (``engine/send.py``): each statement runs on the queue's database, inside
that database's transaction; what the general path signals; the line lock a send
shares with the writers of its line; a batch that replaces or debounces a held key."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections, transaction
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq
from django_mqlite.engine import events, lines
from django_mqlite.engine import send as engine_send
from django_mqlite.engine.dialects import dialect_for
from django_mqlite.models import Message
from tests.settings import SECOND
from tests.support.features import requires

BOTH = ["default", SECOND]
pytestmark = [pytest.mark.django_db(databases=BOTH), pytest.mark.usefixtures("untraced")]


@pytest.fixture
def far() -> str:
    """A queue that no setting declares, on the second database: only ``using`` says
    where it lives."""
    return mq.create_queue("elsewhere", using=SECOND).name


def test_a_plain_send_runs_only_on_its_queue_s_database(far: str, settings: Any) -> None:
    """The one-statement path is tried on the queue's database: tried elsewhere it would
    find no queue there and fall back to the general path, with the same answer."""
    settings.MQLITE = {**settings.MQLITE, "QUEUES": {"declared": {"database": SECOND}}}
    mq.create_queue("declared")
    with CaptureQueriesContext(connections["default"]) as near:
        given = mq.send(far, b"a", using=SECOND)
        declared = mq.send("declared", b"b")
        stamped = engine_send.send_stamped(far, b"c", using=SECOND)[0]
    assert near.captured_queries == []
    assert {p.seq for p in mq.peek(far, using=SECOND)} == {given, stamped}
    assert [p.seq for p in mq.peek("declared")] == [declared]


def test_a_batch_that_fails_midway_leaves_nothing_on_its_database(far: str) -> None:
    held = mq.send(far, b"held", unique_key="k", using=SECOND)
    mq.receive(far, using=SECOND)  # a consumer holds the key's message: no replace
    with pytest.raises(mq.UniqueKeyLockedError):
        mq.send_batch(
            far,
            [
                mq.OutMessage(b"first"),
                mq.OutMessage(b"second", unique_key="k", on_conflict="replace"),
            ],
            using=SECOND,
        )
    assert [p.seq for p in mq.peek(far, using=SECOND)] == [held]


def test_the_general_path_signals_each_message_it_wrote(
    far: str, django_capture_on_commit_callbacks: Any
) -> None:
    got: list[dict[str, Any]] = []

    def receiver(sender: object, **kwargs: Any) -> None:
        got.append({k: kwargs[k] for k in ("queue", "seq", "using")})

    events.message_sent.connect(receiver)
    try:
        with django_capture_on_commit_callbacks(using=SECOND, execute=True):
            seqs = mq.send_batch(
                far,
                [
                    mq.OutMessage(b"a", message_id="m"),
                    mq.OutMessage(b"b", group_id="g"),
                    mq.OutMessage(b"a", message_id="m"),  # a copy: no message of its own
                ],
                using=SECOND,
            )
    finally:
        events.message_sent.disconnect(receiver)
    assert seqs[0] == seqs[2]
    assert got == [{"queue": far, "seq": s, "using": SECOND} for s in seqs[:2]]


def test_a_dependency_named_by_queue_and_seq_is_judged_on_the_sender_s_database(
    q: str, settings: Any
) -> None:
    settings.MQLITE = {**settings.MQLITE, "QUEUES": {"declared": {"database": SECOND}}}
    mq.create_queue("declared")
    for queue in (q, "declared"):
        up = mq.send(queue, b"up")
        waits = mq.send(queue, b"waits", depends_on=[(queue, up)])
        [p] = [p for p in mq.peek(queue) if p.seq == waits]
        assert p.state == "waiting"
    with pytest.raises(mq.CrossDatabaseError):
        mq.send("declared", b"x", depends_on=[(q, up)])


def test_the_engine_enqueues_its_own_message_on_the_database_it_names(far: str) -> None:
    inserted: list[int] = []
    with transaction.atomic(using=SECOND):
        seq = engine_send.enqueue_in(SECOND, far, mq.OutMessage(b"cb", group_id="g"), inserted)
    assert inserted == [seq]
    assert [p.seq for p in mq.peek(far, using=SECOND)] == [seq]


def test_a_batch_replaces_or_debounces_the_message_holding_its_key(
    q: str, clock: mq.clock.FrozenClock
) -> None:
    held = mq.send(q, b"held", unique_key="k")
    replace = mq.OutMessage(b"new", unique_key="k", on_conflict="replace")
    assert mq.send_batch(q, [mq.OutMessage(b"other"), replace])[1] == held
    [p] = [p for p in mq.peek(q) if p.seq == held]
    assert (p.body, p.state) == (b"new", "active")
    later = mq.OutMessage(b"later", unique_key="k", on_conflict="debounce", delay=5)
    assert mq.send_batch(q, [later]) == [held]
    [p] = [p for p in mq.peek(q) if p.seq == held]
    assert (p.body, p.state) == (b"later", "scheduled")
    assert p.visible_at is not None and (p.visible_at - clock.now()).total_seconds() == 5


@requires("advisory_locks")
@pytest.mark.django_db(databases=BOTH, transaction=True)
def test_a_send_into_a_line_waits_for_a_writer_holding_that_line() -> None:
    """``lines.lock_lines``: a settlement that moves a line's head and a send that asks
    whether the line has a live message serialise on the line's lock, keyed by queue
    and line, or each could miss the other's uncommitted row."""
    q = mq.create_queue("lined")
    head = mq.send(q.name, b"head", group_id="g")
    [(queue_id, key)] = Message.objects.filter(seq=head).values_list("queue_id", "order_key")
    done = threading.Event()

    def send() -> None:
        try:
            mq.send(q.name, b"next", group_id="g")
            done.set()
        finally:
            connections.close_all()

    with transaction.atomic():
        with connections["default"].cursor() as cursor:
            lines.lock_lines(cursor, dialect_for("default"), queue_id, [key])
        sender = threading.Thread(target=send)
        sender.start()
        assert not done.wait(0.5)  # it waits for this transaction
    sender.join(10)
    assert done.is_set()
    assert len(mq.peek(q.name)) == 2
