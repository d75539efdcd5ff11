"""Real worker processes and failing handlers: timeouts, poison messages, rejects."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq
from tests.support.procs import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

FAST_RETRY = {"RETRY_BACKOFF_BASE": 0.05, "RETRY_BACKOFF_CAP": 0.2}


def test_handler_past_its_timeout_is_retried_and_worker_stays_healthy(workers: Any) -> None:
    mq.create_queue("work")
    mq.create_queue("slow")
    stuck = mq.send("slow", {"sleep_first": 3})
    proc = workers.start("--concurrency", "1", overrides=FAST_RETRY)
    # The consumer's timeout is 1 s: attempt 1 is abandoned, attempt 2 succeeds, while
    # the first thread is still asleep.
    done = wait_for(lambda: workers.events("done", seq=stuck), timeout=20)
    assert done[0]["delivery"] == 2
    # One thread, and it is stuck: the worker replaced it and keeps working.
    after = mq.send("work", {"n": 1})
    wait_for(lambda: workers.events("done", seq=after))
    # The stuck thread wakes, its late settlement meets LockLostError, which is logged.
    wait_for(lambda: len(workers.events("done", seq=stuck)) == 2, timeout=10)
    code, _out, err = workers.stop(proc)
    assert code == 0, err
    assert "timeout" in err.lower() and "finished after its timeout" in err
    totals = mq.stats("slow").totals
    assert totals["abandoned"] == 1 and totals["completed"] == 1
    assert mq.peek("slow") == []


def test_poison_message_ends_in_dlq_with_its_traceback(workers: Any) -> None:
    mq.create_queue("work", max_delivery_count=3)
    mq.create_queue("slow")
    seq = mq.send("work", {"fail": True})
    proc = workers.start(overrides=FAST_RETRY)
    wait_for(lambda: mq.peek("work", state="dead_lettered"), timeout=20)
    code, _out, err = workers.stop(proc)
    assert code == 0, err
    [dead] = mq.peek("work", state="dead_lettered")
    assert dead.seq == seq and dead.delivery_count == 3
    assert dead.dead_letter_reason == "MaxDeliveryCountExceeded"
    assert dead.last_error is not None
    assert dead.last_error.startswith("Traceback (most recent call last):")
    assert "ValueError: boom on delivery 3" in dead.last_error
    assert "consumers.py" in dead.last_error
    assert [e["delivery"] for e in workers.events("start", seq=seq)] == [1, 2, 3]
    totals = mq.stats("work").totals
    assert totals["abandoned"] == 3 and totals["retried"] == 2 and totals["exhausted"] == 1


def test_reject_dead_letters_at_once(workers: Any) -> None:
    mq.create_queue("work")
    mq.create_queue("slow")
    seq = mq.send("work", {"reject": "bad-order"})
    code, _out, err = workers.finish(workers.start("--burst"))
    assert code == 0, err
    [dead] = mq.peek("work", state="dead_lettered")
    assert dead.seq == seq and dead.delivery_count == 1
    assert dead.dead_letter_reason == "bad-order"
    assert dead.dead_letter_description == "rejected by the test consumer"


def test_the_last_failed_attempt_is_forwarded_by_the_batched_abandon() -> None:
    """The worker's failure path (its batched abandons) is the engine's abandon verb:
    a failure on the last allowed delivery is dead-lettered and forwarded, and the
    worker counts what the verb answered."""
    from django_mqlite.consumers import Registry
    from tests.support.inprocess import burst

    mq.create_queue("poison.dlq")
    mq.create_queue("poison", max_delivery_count=1, forward_dead_letters_to="poison.dlq")
    seqs = mq.send_batch("poison", [mq.OutMessage(i) for i in range(3)])

    def handle(msg: mq.Received) -> None:
        raise ValueError("no")

    registry = Registry()
    registry.register("poison", handle)
    worker = burst(registry, "poison")
    assert worker.outcomes == {"forwarded": 3}
    assert mq.peek("poison") == []
    moved = mq.peek("poison.dlq")
    assert [(p.seq, p.state, p.delivery_count) for p in moved] == [(s, "active", 0) for s in seqs]
    totals = mq.stats("poison").totals
    assert (totals["exhausted"], totals["dead_lettered"], totals["redriven"]) == (3, 3, 3)
