"""``runworker --processes N``: the supervising parent forks N workers that share the
work, restarts one that is killed (losing nothing), and drains all of them on SIGTERM."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any

import pytest

import django_mqlite as mq
from tests.support.procs import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST_HEARTBEAT = {"HEARTBEAT_INTERVAL": 0.2, "WORKER_STALE_AFTER": 1.0, "REAP_INTERVAL": 0.2}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _live_worker_pids() -> set[int]:
    from django_mqlite.models import Worker

    return set(Worker.objects.filter(stopped_at__isnull=True).values_list("pid", flat=True))


@pytest.fixture
def children() -> Iterator[set[int]]:
    """Pids of forked workers seen by a test; any still running at the end are killed."""
    seen: set[int] = set()
    yield seen
    for pid in seen:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_two_processes_drain_a_queue_together(workers: Any, children: set[int]) -> None:
    mq.create_queue("work")
    seqs = set(mq.send_batch("work", [mq.OutMessage({"sleep": 0.05}) for _ in range(60)]))
    proc = workers.start("--queue", "work", "--processes", "2", "--concurrency", "1", "--burst")
    code, _out, err = workers.finish(proc, timeout=60)
    done = workers.events("done")
    children.update(e["pid"] for e in done)
    assert code == 0, err
    assert {e["seq"] for e in done} == seqs
    assert len(done) == len(seqs)  # each once: no redelivery
    pids = {e["pid"] for e in done}
    assert len(pids) == 2 and proc.pid not in pids  # both children worked, the parent did not
    assert not any(_alive(pid) for pid in pids)


def test_a_killed_child_is_restarted_and_loses_nothing(workers: Any, children: set[int]) -> None:
    mq.create_queue("work", lock_duration=600)
    seqs = set(mq.send_batch("work", [mq.OutMessage({"sleep": 0.1}) for _ in range(40)]))
    proc = workers.start(
        "--queue", "work", "--processes", "2", "--concurrency", "2", overrides=FAST_HEARTBEAT
    )
    first = wait_for(lambda: len(_live_worker_pids()) == 2 and _live_worker_pids())
    children.update(first)
    victim = wait_for(lambda: workers.events("start") and workers.events("start")[0]["pid"])
    os.kill(victim, signal.SIGKILL)
    # The parent forks a replacement; the victim's leases come back via its stale heartbeat.
    wait_for(lambda: len(_live_worker_pids() - {victim}) == 2, what="a replacement child")
    children.update(_live_worker_pids())
    wait_for(
        lambda: {e["seq"] for e in workers.events("done")} == seqs,
        timeout=60,
        what="every message completed",
    )
    assert proc.poll() is None  # the parent survived its child's death
    code, _out, err = workers.stop(proc)
    assert code == 0, err
    assert mq.stats("work").counts["active"] == mq.stats("work").counts["locked"] == 0
    assert not any(_alive(pid) for pid in children)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_drains_every_child_gracefully(
    workers: Any, children: set[int], signum: int
) -> None:
    mq.create_queue("work", lock_duration=600)
    running = mq.send_batch("work", [mq.OutMessage({"sleep": 1.5}) for _ in range(2)])
    proc = workers.start("--queue", "work", "--processes", "2", "--concurrency", "1")
    wait_for(lambda: len({e["pid"] for e in workers.events("start")}) == 2, what="both busy")
    waiting = mq.send_batch("work", [mq.OutMessage({"n": n}) for n in range(3)])
    pids = {e["pid"] for e in workers.events("start")}
    children.update(pids)
    proc.send_signal(signum)  # forwarded to each child, once
    code, _out, err = workers.finish(proc)
    assert code == 0, err
    # Both handlers that were running finished; nothing was cut short or lost.
    assert {e["seq"] for e in workers.events("done")} >= set(running)
    assert not any(_alive(pid) for pid in pids)
    assert _live_worker_pids() == set()
    left = mq.peek("work")
    assert {p.seq for p in left} <= set(waiting)
    assert all(p.state == "active" for p in left)
    assert mq.stats("work").totals["completed"] + len(left) == 5


def test_processes_must_be_positive(workers: Any) -> None:
    code, _out, err = workers.finish(workers.start("--queue", "work", "--processes", "0"))
    assert code != 0 and "positive integer" in err


def test_a_child_that_cannot_start_stops_the_parent(workers: Any) -> None:
    # "slow" has a consumer in the test project but no queue: no restart can fix that.
    mq.create_queue("work")
    code, _out, err = workers.finish(workers.start("--processes", "2"), timeout=30)
    assert code == 78, err
    assert "queue 'slow' does not exist" in err
    assert _live_worker_pids() == set()


class _Done:
    def __init__(self, slot: int) -> None:
        self.slot = slot

    def run(self) -> int:
        return 0


def test_a_burst_ends_when_its_last_child_does(monkeypatch: Any) -> None:
    """A child's exit wakes the parent at once (SIGCHLD through the wakeup fd): with a
    30 s poll the burst still ends as soon as both children have exited."""
    import time

    from django_mqlite.worker import prefork

    monkeypatch.setattr(prefork, "POLL_S", 30.0)
    started = time.monotonic()
    assert prefork.Supervisor(_Done, 2, burst=True).run() == 0
    assert time.monotonic() - started < 10
    assert signal.getsignal(signal.SIGCHLD) is signal.SIG_DFL  # put back as it was


def test_no_flag_runs_the_default_count(workers: Any, children: set[int]) -> None:
    """Without --processes (and WORKER_PROCESSES None) the count is the default for the
    database and the cores (one process, no parent, where that is one)."""
    from django.db import connection

    from django_mqlite.engine.dialects import dialect_for
    from django_mqlite.worker.prefork import default_processes

    expected = default_processes(serial_writer=not dialect_for(connection.alias).concurrent_writers)
    mq.create_queue("work")
    proc = workers.start("--queue", "work", overrides={"WORKER_PROCESSES": None})
    pids = wait_for(lambda: len(_live_worker_pids()) == expected and _live_worker_pids())
    children.update(pids)
    assert proc.pid not in pids or expected == 1
    code, _out, err = workers.stop(proc)
    assert code == 0, err
    assert not any(_alive(pid) for pid in pids)


def test_the_first_process_reaps_and_ticks_the_others_stand_by() -> None:
    from django_mqlite.worker.prefork import roles

    assert roles(0) == {"reaper": True, "periodic": True, "standby": False}
    assert roles(1) == roles(3) == {"reaper": False, "periodic": False, "standby": True}


def test_the_count_follows_the_database_and_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    from django_mqlite.worker import prefork

    monkeypatch.setattr(prefork, "cores", lambda: 8)
    assert prefork.default_processes(serial_writer=True) == 4
    assert prefork.default_processes(serial_writer=False) == 8
    monkeypatch.setattr(prefork, "cores", lambda: 2)
    assert prefork.default_processes(serial_writer=True) == 4
    assert prefork.default_processes(serial_writer=False) == 2
    monkeypatch.setattr(prefork, "cores", lambda: 1)
    assert prefork.default_processes(serial_writer=True) == 1
    assert prefork.default_processes(serial_writer=False) == 1


@pytest.mark.parametrize(
    ("text", "quota"),
    [
        ("max 100000\n", None),
        ("150000 100000\n", 2),
        ("50000 100000", 1),
        ("400000 100000", 4),
        ("junk", None),
    ],
)
def test_a_cgroup_quota_bounds_the_cores(tmp_path: Any, text: str, quota: int | None) -> None:
    from django_mqlite.worker import prefork

    path = tmp_path / "cpu.max"
    path.write_text(text)
    assert prefork._cgroup_quota(str(path)) == quota
    assert prefork._cgroup_quota(str(tmp_path / "missing")) is None


@pytest.mark.parametrize("value", [0, -1, True, "2", 1.5])
def test_a_bad_worker_processes_setting_is_refused(value: Any) -> None:
    from django.core.exceptions import ImproperlyConfigured
    from django.test import override_settings

    from django_mqlite.conf import mqlite_settings
    from django_mqlite.management.commands.runworker import configured_processes

    with override_settings(MQLITE={"WORKER_PROCESSES": value}):
        mqlite_settings.reload()
        try:
            with pytest.raises(ImproperlyConfigured, match="WORKER_PROCESSES"):
                configured_processes(object())  # type: ignore[arg-type]
        finally:
            mqlite_settings.reload()
