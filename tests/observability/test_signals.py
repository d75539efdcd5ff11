"""The lifecycle signals (``django_mqlite.signals``): once per event, after the commit on
the queue's database, never for a rolled-back change, whichever surface or path made
the transition; and nothing registered at all when no receiver listens."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections, transaction

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.engine import databases, events
from django_mqlite.testing import drain
from tests.support.inprocess import burst

from .conftest import Recorder

pytestmark = pytest.mark.django_db(transaction=True)


def alias() -> str:
    return databases.alias_of(None)


def test_a_send_signals_once_after_commit(signals_seen: Recorder) -> None:
    mq.create_queue("s1")
    with transaction.atomic(using=alias()):
        seq = mq.send("s1", "a")
        assert signals_seen.of("message_sent") == []  # not before the commit
    assert signals_seen.of("message_sent") == [{"queue": "s1", "seq": seq, "using": alias()}]


def test_a_rolled_back_send_signals_nothing(signals_seen: Recorder) -> None:
    mq.create_queue("s2")
    with pytest.raises(ZeroDivisionError), transaction.atomic(using=alias()):
        mq.send("s2", "a")
        mq.send("s2", "b", group_id="g")  # the general path too
        mq.send_batch("s2", [mq.OutMessage("c")])
        1 / 0  # noqa: B018
    with transaction.atomic(using=alias()):
        try:
            with transaction.atomic(using=alias()):  # a savepoint rolled back
                mq.send("s2", "d")
                raise ValueError
        except ValueError:
            pass
        kept = mq.send("s2", "e")
    assert [e["seq"] for e in signals_seen.of("message_sent")] == [kept]


def test_batches_and_dedup_signal_each_new_message_once(signals_seen: Recorder) -> None:
    mq.create_queue("s3")
    seqs = mq.send_batch(
        "s3",
        [
            mq.OutMessage("a", message_id="m1"),
            mq.OutMessage("b"),
            mq.OutMessage("a", message_id="m1"),
        ],
    )
    assert seqs[0] == seqs[2]
    mq.send("s3", "a", message_id="m1")  # a deduplicated resend: no new message
    assert sorted(e["seq"] for e in signals_seen.of("message_sent")) == sorted(set(seqs))


def test_no_listener_no_on_commit_registration() -> None:
    mq.create_queue("s4", max_delivery_count=1)
    assert not events.listening(events.message_sent)
    conn = connections[alias()]
    with transaction.atomic(using=alias()):
        mq.send("s4", "a")
        mq.send("s4", "b", group_id="g")
        [m] = mq.receive("s4")
        m.reject("Nope")
        mq.redrive("s4")
        assert not [e for e in conn.run_on_commit if isinstance(e[1], events.Deliver)]


def test_worker_failures_dead_letter_with_their_reason(signals_seen: Recorder) -> None:
    mq.create_queue("s5", max_delivery_count=1)
    a = mq.send("s5", "boom")
    b = mq.send("s5", "reject")
    registry = Registry()

    def handle(msg: mq.Received) -> None:
        if msg.text() == "reject":
            raise mq.Reject("Invalid", "no such order")
        raise RuntimeError("boom")

    registry.register("s5", handle)
    burst(registry, "s5")
    dead = {e["seq"]: e["reason"] for e in signals_seen.of("message_dead_lettered")}
    assert dead == {a: "MaxDeliveryCountExceeded", b: "Invalid"}
    [started] = signals_seen.of("worker_started")
    [stopped] = signals_seen.of("worker_stopped")
    assert started["worker_id"] == stopped["worker_id"]
    assert started["queues"] == stopped["queues"] == ["s5"]
    names = [n for n, _ in signals_seen.got if n != "message_sent"]
    assert names[0] == "worker_started" and names[-1] == "worker_stopped"


def test_the_reapers_set_based_burials_signal_per_message(
    signals_seen: Recorder, clock: Any
) -> None:
    mq.create_queue("s6", max_delivery_count=1, lock_duration=5)
    seqs = mq.send_batch("s6", [mq.OutMessage(i) for i in range(3)])
    assert len(mq.receive("s6", max_messages=3)) == 3
    clock.advance(6)
    mq.reap()
    dead = signals_seen.of("message_dead_lettered")
    assert sorted(e["seq"] for e in dead) == seqs
    assert {e["reason"] for e in dead} == {"MaxDeliveryCountExceeded"}
    mq.reap()  # nothing new: nothing sent again
    assert len(signals_seen.of("message_dead_lettered")) == 3


def test_ttl_expiry_signals_expired_and_dead_lettered(signals_seen: Recorder, clock: Any) -> None:
    mq.create_queue("s7")
    mq.create_queue("s8", dead_letter_on_expire=False)
    kept = mq.send("s7", "x", ttl=5)
    dropped = mq.send("s8", "y", ttl=5)
    clock.advance(6)
    mq.reap()
    expired = {
        e["seq"]: (e["queue"], e["dead_lettered"]) for e in signals_seen.of("message_expired")
    }
    assert expired == {kept: ("s7", True), dropped: ("s8", False)}
    assert [(e["seq"], e["reason"]) for e in signals_seen.of("message_dead_lettered")] == [
        (kept, "TTLExpired")
    ]


def test_redrive_and_forwarding_signal_redriven(signals_seen: Recorder) -> None:
    mq.create_queue("s9")
    mq.create_queue("s9-dlq")
    mq.create_queue("s10", max_delivery_count=1, forward_dead_letters_to="s9-dlq")
    a = mq.send("s9", "a")
    [m] = mq.receive("s9")
    m.reject("Bad")
    assert mq.redrive("s9", to_queue="s9-dlq") == 1
    b = mq.send("s10", "b")
    [m] = mq.receive("s10")
    m.reject("Bad")  # dead-lettered, then forwarded at once
    redriven = [(e["queue"], e["seq"], e["to_queue"]) for e in signals_seen.of("message_redriven")]
    assert redriven == [("s9", a, "s9-dlq"), ("s10", b, "s9-dlq")]
    assert [e["seq"] for e in signals_seen.of("message_dead_lettered")] == [a, b]


def test_tasks_and_drain_go_through_the_same_transitions(signals_seen: Recorder) -> None:
    from tests.workerproject.recorder.tasks import add

    result = add.enqueue(1, 2)
    [sent] = signals_seen.of("message_sent")
    assert sent["queue"] == "tasks"
    drain("tasks")
    assert add.get_result(result.id).return_value == 3
    assert signals_seen.of("message_dead_lettered") == []


def test_http_api_sends_and_redrives_signal(api: Any, signals_seen: Recorder) -> None:
    mq.create_queue("h1")
    got = api.post("/mq/queues/h1/messages/", {"body": "x"}, format="json")
    assert got.status_code == 201, got.content
    many = api.post(
        "/mq/queues/h1/messages/", {"messages": [{"body": 1}, {"body": 2}]}, format="json"
    )
    assert many.status_code == 201
    sent = [e["seq"] for e in signals_seen.of("message_sent")]
    assert sent == [got.json()["seq"], *many.json()["seqs"]]
    [m] = mq.receive("h1")
    m.reject("Bad")
    assert api.post("/mq/queues/h1/redrive/", {}, format="json").json() == {"count": 1}
    assert [e["seq"] for e in signals_seen.of("message_redriven")] == [m.seq]


def test_sqs_sends_signal(sqs: Any, signals_seen: Recorder) -> None:
    url = sqs.create_queue(QueueName="sq1")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="one")
    sqs.send_message_batch(
        QueueUrl=url,
        Entries=[{"Id": "a", "MessageBody": "two"}, {"Id": "b", "MessageBody": "three"}],
    )
    sent = signals_seen.of("message_sent")
    assert [e["queue"] for e in sent] == ["sq1"] * 3
    assert len({e["seq"] for e in sent}) == 3


def test_a_failing_receiver_never_undoes_the_send(caplog: Any) -> None:
    mq.create_queue("s11")

    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("receiver bug")

    mq_signals = __import__("django_mqlite.signals", fromlist=["message_sent"])
    mq_signals.message_sent.connect(broken, weak=False)
    try:
        seq = mq.send("s11", "a")
    finally:
        mq_signals.message_sent.disconnect(broken)
    assert [p.seq for p in mq.peek("s11")] == [seq]
    assert "receiver bug" in caplog.text


def test_a_topic_publish_signals_each_copy(signals_seen: Recorder) -> None:
    mq.create_queue("t1")
    mq.create_queue("t2", content_dedup=True)  # the general path; t1 the one statement
    mq.create_topic("news")
    mq.subscribe("news", "t1")
    mq.subscribe("news", "t2")
    with transaction.atomic(using=alias()):
        assert mq.publish("news", "hello") == 2
        assert signals_seen.of("message_sent") == []
    sent = {e["queue"]: e["seq"] for e in signals_seen.of("message_sent")}
    assert sent == {"t1": mq.peek("t1")[0].seq, "t2": mq.peek("t2")[0].seq}


def test_an_admin_redrive_signals(admin_client: Any, signals_seen: Recorder) -> None:
    from ..admin.conftest import action_post

    mq.create_queue("ad1")
    seq = mq.send("ad1", "x")
    [m] = mq.receive("ad1")
    m.reject("Bad")
    url = "/admin/django_mqlite/deadletter/"
    admin_client.post(url, action_post("redrive_selected", [seq]), follow=True)
    assert [(e["queue"], e["seq"]) for e in signals_seen.of("message_redriven")] == [("ad1", seq)]
