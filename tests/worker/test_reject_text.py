"""A consumer that rejects with a reason or description no column can hold (a lone
surrogate, a NUL) still ends dead-lettered at once with its reason readable; it is never
redelivered until its deliveries run out."""

from __future__ import annotations

import pytest

import django_mqlite as mq
from django_mqlite.consumers import Registry
from tests.support.inprocess import burst

pytestmark = pytest.mark.django_db(transaction=True)


def rejecting(msg: mq.Received) -> None:
    raise mq.Reject("bad\ud800input", "NUL \x00 here")


def test_a_reject_with_a_surrogate_reason_dead_letters_at_once() -> None:
    mq.create_queue("rj", max_delivery_count=3)
    mq.send("rj", {"n": 1})
    registry = Registry()
    registry.register("rj", rejecting)
    burst(registry, "rj")
    (dead,) = mq.peek("rj", state="dead_lettered")
    assert dead.delivery_count == 1
    assert (dead.dead_letter_reason, dead.dead_letter_description) == (
        "bad\ufffdinput",
        "NUL \ufffd here",
    )
    stats = mq.stats("rj")
    assert stats.totals["rejected"] == 1 and stats.totals["retried"] == 0
