"""``async def`` consumers under a real ``runworker``: run on one event loop, several at
once up to ``--concurrency``, with the sync handlers' timeouts, retries, ``mq.Reject``,
self-settlement and graceful shutdown."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq
from tests.support.procs import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

FAST_RETRY = {"RETRY_BACKOFF_BASE": 0.05, "RETRY_BACKOFF_CAP": 0.2}
QUEUES = ("--queue", "awork", "--queue", "aslow")


@pytest.fixture(autouse=True)
def _async_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MQLITE_TEST_ASYNC", "1")
    mq.create_queue("awork", max_delivery_count=3)
    mq.create_queue("aslow")
    mq.create_queue("forwarded")


def test_coroutines_run_concurrently_on_one_event_loop(workers: Any) -> None:
    seqs = mq.send_batch("awork", [mq.OutMessage({"sleep": 1.5}) for _ in range(4)])
    code, _out, err = workers.finish(workers.start(*QUEUES, "--concurrency", "4", "--burst"))
    assert code == 0, err
    starts = {e["seq"]: e for e in workers.events("start")}
    dones = {e["seq"]: e for e in workers.events("done")}
    assert sorted(starts) == sorted(dones) == sorted(seqs)
    # All four were running at once: every start precedes the first finish.
    assert max(e["t"] for e in starts.values()) < min(e["t"] for e in dones.values())
    assert len({e["loop"] for e in starts.values()}) == 1
    assert len({e["thread"] for e in starts.values()}) == 1
    assert mq.stats("awork").totals["completed"] == 4 and mq.peek("awork") == []


def test_concurrency_bounds_the_coroutines_in_flight(workers: Any) -> None:
    mq.send_batch("awork", [mq.OutMessage({"sleep": 0.5}) for _ in range(4)])
    code, _out, err = workers.finish(workers.start(*QUEUES, "--concurrency", "2", "--burst"))
    assert code == 0, err
    timeline = sorted(
        [(e["t"], 1) for e in workers.events("start")]
        + [(e["t"], -1) for e in workers.events("done")]
    )
    running = peak = 0
    for _t, step in timeline:
        running += step
        peak = max(peak, running)
    assert peak == 2


def test_a_failing_coroutine_is_retried_then_succeeds(workers: Any) -> None:
    seq = mq.send("awork", {"fail_until": 3})
    proc = workers.start(*QUEUES, overrides=FAST_RETRY)
    wait_for(lambda: workers.events("done", seq=seq), timeout=20)
    code, _out, err = workers.stop(proc)
    assert code == 0, err
    assert [e["delivery"] for e in workers.events("start", seq=seq)] == [1, 2, 3]
    totals = mq.stats("awork").totals
    assert totals["abandoned"] == 2 and totals["retried"] == 2 and totals["completed"] == 1


def test_poison_coroutine_is_dead_lettered_with_its_traceback(workers: Any) -> None:
    seq = mq.send("awork", {"fail_until": 99})
    proc = workers.start(*QUEUES, overrides=FAST_RETRY)
    wait_for(lambda: mq.peek("awork", state="dead_lettered"), timeout=20)
    code, _out, err = workers.stop(proc)
    assert code == 0, err
    [dead] = mq.peek("awork", state="dead_lettered")
    assert dead.seq == seq and dead.delivery_count == 3
    assert dead.dead_letter_reason == "MaxDeliveryCountExceeded"
    assert "ValueError: async boom on delivery 3" in (dead.last_error or "")
    assert "aio_consumers/consumers.py" in (dead.last_error or "")


def test_reject_and_self_settlement_from_a_coroutine(workers: Any) -> None:
    rejected = mq.send("awork", {"reject": "bad-order"})
    forwarded = mq.send("awork", {"forward": "forwarded"})
    code, _out, err = workers.finish(workers.start(*QUEUES, "--burst"))
    assert code == 0, err
    [dead] = mq.peek("awork", state="dead_lettered")
    assert (dead.seq, dead.delivery_count, dead.dead_letter_reason) == (rejected, 1, "bad-order")
    assert dead.dead_letter_description == "rejected by the async consumer"
    assert workers.events("done", seq=forwarded)
    assert [p.json() for p in mq.peek("forwarded")] == [{"forward": "forwarded"}]
    assert mq.stats("awork").totals["completed"] == 1


def test_a_coroutine_past_its_timeout_is_cancelled_and_retried(workers: Any) -> None:
    stuck = mq.send("aslow", {"sleep_first": 5})
    proc = workers.start(*QUEUES, "--concurrency", "1", overrides=FAST_RETRY)
    # The consumer's timeout is 1 s: attempt 1 is cancelled (no 5 s wait), attempt 2 runs.
    done = wait_for(lambda: workers.events("done", seq=stuck), timeout=20)
    assert done[0]["delivery"] == 2
    [cancelled] = workers.events("cancelled", seq=stuck)
    assert cancelled["delivery"] == 1
    [first] = workers.events("start", seq=stuck, delivery=1)
    assert cancelled["t"] - first["t"] < 3  # stopped at its timeout, not after its sleep
    after = mq.send("awork", {"n": 1})  # the worker is healthy
    wait_for(lambda: workers.events("done", seq=after))
    code, _out, err = workers.stop(proc)
    assert code == 0, err
    assert "timeout of 1.0s" in err
    totals = mq.stats("aslow").totals
    assert totals["abandoned"] == 1 and totals["completed"] == 1


def test_sigterm_lets_a_running_coroutine_finish(workers: Any) -> None:
    seq = mq.send("awork", {"sleep": 1.5})
    proc = workers.start(*QUEUES)
    wait_for(lambda: workers.events("start", seq=seq), timeout=20)
    code, _out, err = workers.stop(proc)
    assert code == 0, err
    assert workers.events("done", seq=seq)
    assert mq.peek("awork") == [] and mq.stats("awork").totals["completed"] == 1


def test_a_long_coroutine_keeps_its_lease_renewed(workers: Any) -> None:
    mq.delete_queue("awork", force=True)
    mq.create_queue("awork", lock_duration=1)
    seq = mq.send("awork", {"sleep": 2.5})
    code, _out, err = workers.finish(workers.start(*QUEUES, "--burst"))
    assert code == 0, err
    assert [e["delivery"] for e in workers.events("start", seq=seq)] == [1]
    assert workers.events("done", seq=seq)
    totals = mq.stats("awork").totals
    assert totals["completed"] == 1 and totals["reclaimed"] == 0
