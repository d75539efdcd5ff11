"""Receipt handles after their visibility timeout ran out (#32, items 2 and 8), as AWS
answers them: a standard queue deletes by such a handle while nobody received the
message since, a FIFO queue answers "the receipt handle has expired", and
ChangeMessageVisibility hides the message again. The rule is the engine's lapsed
settlement (``lapsed=True``); the Python API keeps its fence (a lapsed lease is
``LockLostError``)."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq

from .test_aws_parity import error, fifo

pytestmark = pytest.mark.django_db(transaction=True)


def held(sqs: Any, url: str, body: str = "x", **send: Any) -> dict[str, Any]:
    sqs.send_message(QueueUrl=url, MessageBody=body, **send)
    (m,) = sqs.receive_message(QueueUrl=url, VisibilityTimeout=30)["Messages"]
    return dict(m)


@pytest.mark.parametrize("reaped", [False, True], ids=["lease-not-yet-returned", "returned"])
def test_standard_delete_after_the_timeout_deletes(
    sqs: Any, queue_url: str, clock: mq.clock.FrozenClock, reaped: bool
) -> None:
    """Before the lease is returned (the row still locked past its deadline) and after
    (the reaper made it active again): nobody received it since, so AWS deletes it."""
    m = held(sqs, queue_url)
    clock.advance(31)
    if reaped:
        mq.reap()
        assert mq.peek("orders")[0].state == "active"
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
    assert mq.peek("orders") == []
    assert "Messages" not in sqs.receive_message(QueueUrl=queue_url)
    # Deleting again with the same handle succeeds, as on AWS.
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])


def test_standard_delete_by_a_handle_received_since_deletes_nothing(
    sqs: Any, queue_url: str, clock: mq.clock.FrozenClock
) -> None:
    m = held(sqs, queue_url)
    clock.advance(31)
    (again,) = sqs.receive_message(QueueUrl=queue_url)["Messages"]
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])  # succeeds
    (p,) = mq.peek("orders")
    assert (p.state, p.delivery_count) == ("locked", 2)
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=again["ReceiptHandle"])
    assert mq.peek("orders") == []


def test_fifo_delete_after_the_timeout_has_expired(sqs: Any, clock: mq.clock.FrozenClock) -> None:
    url = fifo(sqs, ContentBasedDeduplication="true")
    m = held(sqs, url, MessageGroupId="g")
    clock.advance(31)
    got = error(sqs, sqs.delete_message, QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert got["Code"] == "InvalidParameterValue"
    assert got["Message"].endswith("Reason: The receipt handle has expired.")
    assert len(mq.peek("jobs.fifo")) == 1
    (entry,) = sqs.delete_message_batch(
        QueueUrl=url, Entries=[{"Id": "a", "ReceiptHandle": m["ReceiptHandle"]}]
    )["Failed"]
    assert entry["Code"] == "InvalidParameterValue" and entry["SenderFault"]


@pytest.mark.parametrize("reaped", [False, True], ids=["lease-not-yet-returned", "returned"])
def test_change_visibility_after_the_timeout_hides_it_again(
    sqs: Any, queue_url: str, clock: mq.clock.FrozenClock, reaped: bool
) -> None:
    m = held(sqs, queue_url)
    clock.advance(31)
    if reaped:
        mq.reap()
    sqs.change_message_visibility(
        QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=100
    )
    assert "Messages" not in sqs.receive_message(QueueUrl=queue_url)
    (p,) = mq.peek("orders")
    assert (p.state, p.delivery_count) == ("locked", 1)
    assert 99 <= (p.locked_until - mq.clock.now()).total_seconds() <= 100
    clock.advance(101)
    (again,) = sqs.receive_message(QueueUrl=queue_url, AttributeNames=["All"])["Messages"]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"


def test_change_visibility_zero_after_the_timeout_makes_it_visible(
    sqs: Any, queue_url: str, clock: mq.clock.FrozenClock
) -> None:
    m = held(sqs, queue_url)
    clock.advance(31)
    mq.reap()
    sqs.change_message_visibility(
        QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0
    )
    (again,) = sqs.receive_message(QueueUrl=queue_url)["Messages"]
    assert again["MessageId"] == m["MessageId"]


def test_change_visibility_of_a_deleted_message_is_invalid(sqs: Any, queue_url: str) -> None:
    m = held(sqs, queue_url)
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
    got = error(
        sqs,
        sqs.change_message_visibility,
        QueueUrl=queue_url,
        ReceiptHandle=m["ReceiptHandle"],
        VisibilityTimeout=10,
    )
    assert got["Code"] == "InvalidParameterValue"
    assert "Message does not exist or is not available" in got["Message"]


def test_delete_by_the_handle_of_a_purged_message_fails(sqs: Any, queue_url: str) -> None:
    m = held(sqs, queue_url)
    sqs.purge_queue(QueueUrl=queue_url)
    got = error(sqs, sqs.delete_message, QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
    assert got["Code"] == "ReceiptHandleIsInvalid"


def test_fifo_delete_by_the_handle_of_a_purged_message_fails(sqs: Any) -> None:
    url = fifo(sqs, ContentBasedDeduplication="true")
    m = held(sqs, url, MessageGroupId="g")
    sqs.purge_queue(QueueUrl=url)
    got = error(sqs, sqs.delete_message, QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert got["Code"] == "InvalidParameterValue"


# -- the engine's side: the Python API keeps its fence -----------------------------------


@pytest.mark.parametrize("reaped", [False, True])
def test_python_settlements_of_a_lapsed_lease_are_lock_lost(
    clock: mq.clock.FrozenClock, reaped: bool
) -> None:
    mq.create_queue("plain", lock_duration=30)
    mq.send("plain", "x")
    (m,) = mq.receive("plain")
    clock.advance(31)
    if reaped:
        mq.reap()
    assert m.lock_token is not None
    for settle in (
        lambda: mq.complete("plain", m.seq, m.lock_token),
        lambda: mq.renew("plain", m.seq, m.lock_token),
        lambda: mq.abandon("plain", m.seq, m.lock_token),
    ):
        with pytest.raises(mq.LockLostError) as err:
            settle()
        assert not isinstance(err.value, mq.MessageGoneError)
    assert len(mq.peek("plain")) == 1


def test_lapsed_settlement_in_the_engine(clock: mq.clock.FrozenClock) -> None:
    """``lapsed=True``: honoured while the token is the row's, refused once a claim
    replaced it, and ``MessageGoneError`` once the message left the queue unsettled."""
    mq.create_queue("plain", lock_duration=30)
    mq.send("plain", "x")
    (m,) = mq.receive("plain")
    clock.advance(31)
    mq.reap()
    assert m.lock_token is not None
    mq.renew("plain", m.seq, m.lock_token, lapsed=True)
    clock.advance(31)
    (m2,) = mq.receive("plain")  # a claim since: the old token is spent
    with pytest.raises(mq.LockLostError) as err:
        mq.complete("plain", m.seq, m.lock_token, lapsed=True)
    assert not isinstance(err.value, mq.MessageGoneError)
    mq.purge_everything("plain")
    assert m2.lock_token is not None
    with pytest.raises(mq.MessageGoneError):
        mq.complete("plain", m2.seq, m2.lock_token, lapsed=True)


def test_a_returned_lease_keeps_no_attempt_or_receive_and_delete_token(
    clock: mq.clock.FrozenClock,
) -> None:
    """A row the lease-expiry rule returned keeps its token (for lapsed settlements):
    a repeated receive attempt does not hand it out as still held, and a
    receive-and-delete grants no token."""
    mq.create_queue("plain", lock_duration=30)
    mq.send("plain", "x")
    mq.receive("plain", attempt_id="a")
    clock.advance(31)
    mq.reap()
    assert mq.receive("plain", attempt_id="a") == []
    (m,) = mq.receive("plain", mode="receive_and_delete")
    assert m.lock_token is None and m.locked_until is None
