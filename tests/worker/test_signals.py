"""Real worker processes and signals: SIGTERM finishes in-flight work and exits 0;
SIGKILL loses nothing, and the stale heartbeat gets the message back long before its
lease would have run out."""

from __future__ import annotations

import time
from typing import Any

import pytest

import django_mqlite as mq
from tests.support.procs import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

FAST_HEARTBEAT = {"HEARTBEAT_INTERVAL": 0.2, "WORKER_STALE_AFTER": 1.0, "REAP_INTERVAL": 0.2}


@pytest.fixture
def queues() -> None:
    mq.create_queue("work", lock_duration=600)
    mq.create_queue("slow")


def test_sigterm_mid_handler_finishes_and_exits_zero(workers: Any, queues: None) -> None:
    seq = mq.send("work", {"sleep": 1.0})
    proc = workers.start()
    wait_for(lambda: workers.events("start", seq=seq))
    code, _out, err = workers.stop(proc)
    assert code == 0, err
    assert workers.events("done", seq=seq)
    assert mq.peek("work") == []
    assert mq.stats("work").totals["completed"] == 1
    from django_mqlite.models import Worker

    row = Worker.objects.get()
    assert row.stopped_at is not None and row.in_flight == 0


def test_sigterm_releases_claimed_but_unstarted_without_burning_attempts(
    workers: Any, queues: None
) -> None:
    # One thread, a prefetch of one: the first message runs, nothing else is claimed.
    first = mq.send("work", {"sleep": 1.0})
    rest = [mq.send("work", {"n": n}) for n in range(3)]
    proc = workers.start("--concurrency", "1")
    wait_for(lambda: workers.events("start", seq=first))
    code, _out, err = workers.stop(proc)
    assert code == 0, err
    left = {p.seq: p for p in mq.peek("work")}
    assert sorted(left) == rest
    assert all(p.state == "active" and p.delivery_count == 0 for p in left.values())


def test_sigkill_mid_handler_is_redelivered_via_stale_heartbeat(workers: Any, queues: None) -> None:
    seq = mq.send("work", {"sleep_first": 60})
    victim = workers.start("--no-reaper", overrides=FAST_HEARTBEAT)
    wait_for(lambda: workers.events("start", seq=seq))
    victim.kill()
    victim.wait()
    killed_at = time.monotonic()
    # The lease is ten minutes; the heartbeat goes stale after one second.
    survivor = workers.start(overrides=FAST_HEARTBEAT)
    done = wait_for(lambda: workers.events("done", seq=seq), timeout=30)
    elapsed = time.monotonic() - killed_at
    print(f"\nSIGKILLed worker's message redelivered and done {elapsed:.2f}s after the kill")
    assert elapsed < 30
    assert done[0]["delivery"] == 2 and done[0]["pid"] == survivor.pid
    # The handler logs "done" before the worker's group commit writes the completion:
    # wait (bounded) for the commit, then assert the counters exactly.
    totals = wait_for(
        lambda: (t := mq.stats("work").totals)["completed"] >= 1 and t,
        timeout=10,
        what="the completion committed",
    )
    assert totals["reclaimed"] == 1 and totals["completed"] == 1
    code, _out, err = workers.stop(survivor)
    assert code == 0, err
    assert mq.peek("work") == []


def test_second_signal_exits_at_once(workers: Any, queues: None) -> None:
    seq = mq.send("work", {"sleep": 30})
    proc = workers.start("--shutdown-timeout", "60")
    wait_for(lambda: workers.events("start", seq=seq))
    proc.terminate()
    # Two signals that arrive before Python runs its handler count once: keep sending
    # until one lands as the second (the handler runs 30 s, the shutdown timeout is 60
    # s, so only the second-signal path ends the process within these 10 s).
    deadline = time.monotonic() + 10
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
        if proc.poll() is None:
            proc.terminate()
    code, _out, err = workers.finish(proc, timeout=10)
    assert code == 1
    assert "second signal" in err
