"""``--max-messages`` and ``--max-memory`` make a worker exit cleanly for recycling."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def queues() -> None:
    mq.create_queue("work")
    mq.create_queue("slow")


def test_max_messages_exits_after_that_many(workers: Any, queues: None) -> None:
    seqs = mq.send_batch("work", [mq.OutMessage({"n": n}) for n in range(5)])
    code, _out, err = workers.finish(workers.start("--max-messages", "2", "--concurrency", "3"))
    assert code == 0, err
    assert sorted(e["seq"] for e in workers.events("done")) == seqs[:2]
    left = mq.peek("work")
    assert [p.seq for p in left] == seqs[2:]
    assert all(p.state == "active" and p.delivery_count == 0 for p in left)
    assert "max-messages 2 reached" in err


def test_max_memory_recycles_cleanly(workers: Any, queues: None) -> None:
    seqs = mq.send_batch("work", [mq.OutMessage({"n": n}) for n in range(5)])
    # Any Python process is past 1 MB: the worker stops after its first claim.
    code, _out, err = workers.finish(workers.start("--max-memory", "1"))
    assert code == 0, err
    assert "max-memory" in err
    done = [e["seq"] for e in workers.events("done")]
    assert done and set(done) <= set(seqs)
    left = mq.peek("work")
    assert len(done) + len(left) == 5
    assert all(p.state == "active" and p.delivery_count == 0 for p in left)
