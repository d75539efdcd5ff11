"""Finished batch retention (``engine/batch_retention.py``): the reaper deletes a batch
``BATCH_RETENTION`` seconds after it finished, and never one that runs, that a message
points at or waits for, or that a child's node counts in."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import override_settings

import django_mqlite as mq

pytestmark = pytest.mark.django_db

DAY = 86400


@pytest.fixture
def qs(make_queue: Any) -> None:
    make_queue("up")
    make_queue("down")
    make_queue("kept", keep_results=30 * DAY)


def batch_ids() -> set[int]:
    with connection.cursor() as c:
        c.execute("SELECT id FROM mqlite_batch")
        return {r[0] for r in c.fetchall()}


def finished_batch(queue: str = "up") -> int:
    with mq.batch() as b:
        b.send(queue, "x")
    for m in mq.receive(queue):
        m.complete()
    assert mq.get_batch(b.id).state == "finished"
    return b.id


def test_a_finished_batch_goes_after_the_retention(qs: Any, clock: Any) -> None:
    old = finished_batch()
    clock.advance(6 * DAY)
    young = finished_batch()
    with mq.batch() as running:
        running.send("up", "still running")
    clock.advance(DAY)  # old finished exactly 7 days ago
    assert mq.reap()["batches_pruned"] == 1
    assert batch_ids() == {young, running.id}
    with pytest.raises(mq.BatchNotFoundError):
        mq.get_batch(old)
    clock.advance(30 * DAY)
    assert mq.reap()["batches_pruned"] == 1  # a running batch is never deleted
    assert batch_ids() == {running.id}


def test_the_setting(qs: Any, clock: Any) -> None:
    b = finished_batch()
    clock.advance(60)
    with override_settings(MQLITE={"BATCH_RETENTION": 120}):
        assert mq.reap()["batches_pruned"] == 0
        clock.advance(60)
        assert mq.reap()["batches_pruned"] == 1
    b = finished_batch()
    clock.advance(365 * DAY)
    with override_settings(MQLITE={"BATCH_RETENTION": None}):
        assert mq.reap()["batches_pruned"] == 0
    assert batch_ids() == {b}


def test_a_batch_a_dead_child_points_at_stays_until_the_child_is_gone(qs: Any, clock: Any) -> None:
    with mq.batch() as b:
        b.send("up", "x")
    (m,) = mq.receive("up")
    m.reject("Bad")
    assert mq.get_batch(b.id).state == "finished"
    clock.advance(8 * DAY)
    mq.reap()
    assert b.id in batch_ids()  # a redrive would count the child there again
    assert mq.redrive("up") == 1
    assert mq.get_batch(b.id).state == "running"
    (m,) = mq.receive("up")
    m.reject("Bad")
    mq.purge("up")
    clock.advance(8 * DAY)
    mq.reap()
    assert b.id not in batch_ids()


def test_a_batch_whose_child_keeps_its_result_stays_while_the_result_is_kept(
    qs: Any, clock: Any
) -> None:
    b = finished_batch("kept")
    clock.advance(8 * DAY)
    mq.reap()
    assert mq.batch_results(b) != {}
    clock.advance(30 * DAY)  # result retention, then batch retention
    mq.reap()
    mq.reap()
    assert b not in batch_ids()


def test_a_batch_a_dead_childs_node_counts_in_stays(qs: Any, clock: Any) -> None:
    """The dead child points at its node, not at the batch: the node's ``parent_id``
    keeps the batch, so the child's redrive re-opens it."""
    with mq.batch() as b:
        x = b.send("up", "x")
        b.send("up", "y")
    mq.send("down", "d", depends_on=[x])
    with connection.cursor() as c:
        c.execute("SELECT id FROM mqlite_batch WHERE seq = %s", [x])
        (node,) = c.fetchone()
    for m in mq.receive("up", max_messages=2):
        if m.seq == x:
            m.reject("Bad")
        else:
            m.complete()
    assert mq.get_batch(b.id).state == "finished"
    clock.advance(8 * DAY)
    mq.reap()
    assert {b.id, node} <= batch_ids()
    assert mq.redrive("up") == 1
    assert mq.get_batch(b.id).state == "running"
    (m,) = mq.receive("up")
    m.complete()
    assert mq.get_batch(b.id).state == "finished"
    clock.advance(8 * DAY)
    mq.reap()
    mq.reap()  # the node first, then the batch it counted in
    assert not {b.id, node} & batch_ids()


def test_a_batch_a_message_waits_for_stays(qs: Any, clock: Any) -> None:
    with mq.batch() as b:
        x = b.send("up", "x")
    mq.send("down", "d", depends_on=[b])
    with connection.cursor() as c:  # made to look finished, its edge still there
        c.execute("UPDATE mqlite_message SET batch_id = NULL WHERE seq = %s", [x])
        c.execute(
            "UPDATE mqlite_batch SET completed = total, finished_at = 0 WHERE id = %s", [b.id]
        )
    clock.advance(8 * DAY)
    mq.reap()
    assert b.id in batch_ids()
