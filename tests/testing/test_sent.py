"""``testing.sent``: the waiting messages of a queue, oldest first, with filters."""

from __future__ import annotations

import pytest

import django_mqlite as mq
from django_mqlite.testing import sent

pytestmark = pytest.mark.django_db


@pytest.fixture
def payments() -> dict[str, int]:
    mq.create_queue("payments")
    return {
        "a": mq.send("payments", {"order": 42, "amount": 10}, subject="charge", group_id="c1"),
        "b": mq.send("payments", {"order": 43, "amount": 10}, subject="refund", message_id="r43"),
        "c": mq.send("payments", "plain text", subject="note"),
        "d": mq.send("payments", {"order": 42, "amount": 5}, subject="charge", delay=60),
        "e": mq.send("payments", b"\x00raw", priority=3),
    }


def test_sent_lists_waiting_messages_oldest_first(payments: dict[str, int]) -> None:
    assert [p.seq for p in sent("payments")] == list(payments.values())
    [locked] = mq.receive("payments")  # highest priority first: "e"
    assert locked.seq == payments["e"]
    mq.send("payments", {"order": 1})
    assert payments["e"] not in [p.seq for p in sent("payments")]
    assert [p.state for p in sent("payments", seq=payments["d"])] == ["scheduled"]


def test_sent_filters_on_fields(payments: dict[str, int]) -> None:
    assert [p.seq for p in sent("payments", subject="charge")] == [payments["a"], payments["d"]]
    assert [p.seq for p in sent("payments", message_id="r43")] == [payments["b"]]
    assert [p.seq for p in sent("payments", group_id="c1")] == [payments["a"]]
    assert [p.seq for p in sent("payments", priority=3)] == [payments["e"]]
    assert [p.seq for p in sent("payments", state="scheduled")] == [payments["d"]]
    assert sent("payments", subject="nothing") == []


def test_sent_filters_on_json_body_keys_and_whole_bodies(payments: dict[str, int]) -> None:
    assert [p.seq for p in sent("payments", order=42)] == [payments["a"], payments["d"]]
    assert [p.seq for p in sent("payments", order=42, amount=5)] == [payments["d"]]
    assert [p.seq for p in sent("payments", subject="charge", amount=10)] == [payments["a"]]
    assert [p.seq for p in sent("payments", body="plain text")] == [payments["c"]]
    assert [p.seq for p in sent("payments", body=b"\x00raw")] == [payments["e"]]
    body = {"order": 43, "amount": 10}
    assert [p.seq for p in sent("payments", body=body)] == [payments["b"]]
    assert sent("payments", customer="x") == []


def test_sent_on_a_missing_queue_raises() -> None:
    with pytest.raises(mq.QueueNotFoundError):
        sent("nope")
