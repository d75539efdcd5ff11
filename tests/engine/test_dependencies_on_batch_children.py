"""A dependency on a child of an ``mq.batch``: the child gets a node within its batch
(``engine/nodes.py``), so its end releases (or fails) what waits for it and still
counts in its batch exactly as before: the batch's counts, callbacks and results are
those it would have had without the dependency."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

import django_mqlite as mq

pytestmark = pytest.mark.django_db


@pytest.fixture
def qs(make_queue: Any) -> None:
    make_queue("up")
    make_queue("down")
    make_queue("done")


def state(queue: str, seq: int) -> str | None:
    found = [p for p in mq.peek(queue, limit=1000) if p.seq == seq]
    return found[0].state if found else None


def callbacks() -> list[str]:
    return [p.properties["batch_callback"] for p in mq.peek("done")]


def batch_with_children(n: int = 2) -> tuple[mq.Batch, list[int]]:
    with mq.batch(
        on_complete=mq.Callback("done", "c"),
        on_success=mq.Callback("done", "s"),
        on_failure=mq.Callback("done", "f"),
    ) as b:
        seqs = [b.send("up", i) for i in range(n)]
    return b, seqs


def settle(seq: int, how: str) -> None:
    """Receive everything claimable on ``up`` and settle ``seq`` by ``how``, giving
    the others back."""
    for m in mq.receive("up", max_messages=10):
        if m.seq == seq:
            if how == "reject":
                m.reject("Bad")
            else:
                m.complete()
        else:
            m.abandon()


def test_a_completed_child_releases_its_dependent_and_counts_in_its_batch(qs: Any) -> None:
    b, (x, y) = batch_with_children()
    d = mq.send("down", "d", depends_on=[x])
    assert state("down", d) == "waiting"
    settle(x, "complete")
    assert state("down", d) == "active"
    info = mq.get_batch(b.id)
    assert (info.completed, info.pending, info.state) == (1, 1, "running")
    assert callbacks() == []
    settle(y, "complete")
    info = mq.get_batch(b.id)
    assert (info.completed, info.failed, info.state) == (2, 0, "finished")
    assert sorted(callbacks()) == ["on_complete", "on_success"]


def test_a_dead_lettered_child_fails_its_dependent_and_its_batch(qs: Any) -> None:
    b, (x, y) = batch_with_children()
    d = mq.send("down", "d", depends_on=[x])
    settle(x, "reject")
    (dead,) = mq.peek("down", state="dead_lettered")
    assert (dead.seq, dead.dead_letter_reason) == (d, "DependencyFailed")
    settle(y, "complete")
    info = mq.get_batch(b.id)
    assert (info.completed, info.failed, info.state) == (1, 1, "finished")
    assert sorted(callbacks()) == ["on_complete", "on_failure"]


def test_a_redriven_child_reopens_its_batch_through_its_node(qs: Any) -> None:
    b, (x, y) = batch_with_children()
    mq.send("down", "d", depends_on=[x])
    settle(x, "reject")
    settle(y, "complete")
    assert mq.get_batch(b.id).state == "finished"
    assert mq.redrive("up", seqs=[x]) == 1
    info = mq.get_batch(b.id)
    assert (info.failed, info.pending, info.state) == (0, 1, "running")
    settle(x, "complete")
    info = mq.get_batch(b.id)
    assert (info.completed, info.failed, info.state) == (2, 0, "finished")
    # on_complete fired once in the batch's life; on_success now, on its first finish
    # with every child completed.
    assert sorted(callbacks()) == ["on_complete", "on_failure", "on_success"]


def test_a_child_depended_on_inside_the_open_block(qs: Any) -> None:
    with transaction.atomic(), mq.batch(on_success=mq.Callback("done", "s")) as b:
        x = b.send("up", "x")
        d = mq.send("down", "d", depends_on=[x])
        y = b.send("up", "y", depends_on=[x])  # a child that waits for a sibling
    assert (state("down", d), state("up", y)) == ("waiting", "waiting")
    assert mq.get_batch(b.id).total == 2
    settle(x, "complete")
    assert (state("down", d), state("up", y)) == ("active", "active")
    assert callbacks() == []
    settle(y, "complete")
    assert callbacks() == ["on_success"]


def test_two_dependents_share_the_childs_node(qs: Any) -> None:
    b, (x, _y) = batch_with_children()
    d1 = mq.send("down", "1", depends_on=[x])
    d2 = mq.send("down", "2", depends_on=[("up", x), b])
    settle(x, "complete")
    assert (state("down", d1), state("down", d2)) == ("active", "waiting")
    assert len(mq.list_batches()) == 1  # the node is not a batch of the list


def test_the_batch_reads_its_children_through_their_nodes(make_queue: Any, qs: Any) -> None:
    make_queue("kept", keep_results=3600)
    with mq.batch() as b:
        x = b.send("kept", "x")
        y = b.send("kept", "y")
    mq.send("down", "d", depends_on=[x])
    for m in mq.receive("kept", max_messages=2):
        done = mq.Completion(result={"seq": m.seq})
        mq.complete_batch("kept", [(m.seq, m.lock_token)], completions=[done])
    assert mq.batch_results(b.id) == {x: {"seq": x}, y: {"seq": y}}
