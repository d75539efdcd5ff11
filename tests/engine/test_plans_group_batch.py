"""The group batch's claim (``receive(..., group_batch=True)`` on a ``group_fifo`` queue)
seeks its indexes like the plain claim (``test_plans``): the heads from the claim index,
each head's followers from the line index, however deep the group."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.db import connection

import django_mqlite as mq
from tests.support.plans import BACKLOG, analyze, assert_seeks

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def deep_group() -> Iterator[None]:
    mq.create_queue("deep", ordering="group_fifo")
    for _ in range(BACKLOG // 1000):
        mq.send_batch("deep", [mq.OutMessage(b"x", group_id="deep") for _ in range(1000)])
    mq.send_batch("deep", [mq.OutMessage(b"y", group_id=f"g{i}") for i in range(50)])
    analyze()
    yield


def test_a_group_batch_seeks_the_claim_and_line_indexes(deep_group: None) -> None:
    got: list[mq.Received] = []
    assert_seeks(
        lambda: got.extend(mq.receive("deep", max_messages=10, group_batch=True, max_bytes=10**6)),
        "mqlite_msg_line",
    )
    assert len(got) == 10 and {m.group_id for m in got} == {"deep"}
    assert [m.seq for m in got] == sorted(m.seq for m in got)
    start = time.perf_counter()
    for _ in range(20):
        for m in mq.receive("deep", max_messages=10, group_batch=True):
            m.complete()
    print(
        f"\ngroup batch of 10 from a {BACKLOG}-message group: "
        f"{(time.perf_counter() - start) / 20 * 1000:.2f} ms a receive and its completions "
        f"({connection.vendor})"
    )
