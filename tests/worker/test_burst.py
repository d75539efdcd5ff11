"""``runworker --burst`` drains what is there and exits 0."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq

pytestmark = pytest.mark.django_db(transaction=True)


def test_burst_drains_and_exits_zero(workers: Any) -> None:
    mq.create_queue("work")
    mq.create_queue("slow")
    seqs = mq.send_batch("work", [mq.OutMessage({"n": n}) for n in range(20)])
    proc = workers.start("--burst", "--concurrency", "4", "--queue", "work")
    code, _out, err = workers.finish(proc)
    assert code == 0, err
    done = sorted(e["seq"] for e in workers.events("done"))
    assert done == sorted(seqs)
    stats = mq.stats("work")
    assert stats.counts["active"] == 0 and stats.counts["locked"] == 0
    assert stats.totals["completed"] == 20
    assert "burst" in err


def test_burst_on_empty_queues_exits_at_once(workers: Any) -> None:
    mq.create_queue("work")
    mq.create_queue("slow")
    code, _out, err = workers.finish(workers.start("--burst"))
    assert code == 0, err
    assert workers.events() == []
