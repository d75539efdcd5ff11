"""The fault-injection suite: producers and ``runworker`` processes (no flags,
``--processes 2``, ``--concurrency 8``) under a seeded nemesis (``nemesis.py``), then a
drain, a canary round and the history checker (``history.py``).

Short form (CI, the default): about a minute of faults per database, PostgreSQL
backends terminated but the server never restarted (other checkouts share it).
Long form, by hand; on PostgreSQL it restarts the server twice, and only a private
cluster named by ``MQLITE_FAULTS_PG_CLUSTER`` (without it, no restarts):

    PGPORT=5439 MQLITE_FAULTS_PG_CLUSTER="15 faults" MQLITE_TEST_DB=postgres \
        python -m pytest tests/faults --long -s
    MQLITE_TEST_DB=sqlite python -m pytest tests/faults --long -s

``MQLITE_FAULTS_SEED`` picks another seed; the summary line printed at the end is what
``docs/reliability.md`` publishes.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection, transaction

import django_mqlite as mq
from django_mqlite.models import Worker as WorkerRow
from django_mqlite.tasks.compat import task_backends
from tests.support import dbfaults
from tests.workerproject.recorder import tasks

from ..reliability.harness import Fleet
from . import history
from .nemesis import PG_CLUSTER, Member, Nemesis, summary

# The long form runs for about six minutes on PostgreSQL (two restarts); the short one
# for under two. Beyond the suite-wide per-test timeout, so it sets its own.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.slow,
    pytest.mark.timeout(1200),
]

LOCK_S = 2.0
MAX_DELIVERIES = 20
# Stale-worker reclaim waits longer than a lease, as the lease oracle assumes.
FLEET = {
    "HEARTBEAT_INTERVAL": 0.3,
    "WORKER_STALE_AFTER": 4.0,
    "REAP_INTERVAL": 0.3,
    "RETRY_BACKOFF_BASE": 0.05,
    "RETRY_BACKOFF_CAP": 0.5,
}
WORKERS = [(), ("--processes", "2"), ("--concurrency", "8")]
PRODUCERS = 3
# Queues every worker serves when it is given no --queue: all that have a consumer.
OTHER_QUEUES = ("work", "slow", "sweep", "crash", "faults", "drain", "flows")
TASK_QUEUES = ("tasks", "tasks-other")


@pytest.fixture
def tables() -> Iterator[None]:
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE reliability_order (ref varchar(100) PRIMARY KEY)")
        cursor.execute(
            "CREATE TABLE reliability_effect (ref varchar(100), token varchar(64), "
            "delivery integer, pid integer)"
        )
    try:
        yield
    finally:
        connection.close()  # a restart or a termination may have broken it
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE reliability_order")
            cursor.execute("DROP TABLE reliability_effect")


def name_parent() -> None:
    """Name this test's connection so that the nemesis's terminations spare it."""
    dbfaults.spare(connection)


def completed_total() -> int:
    name_parent()
    return sum(mq.stats(q).totals["completed"] for q in history.QUEUES)


def test_faults(tmp_path: Path, tables: None, long_run: bool) -> None:
    seed = int(os.environ.get("MQLITE_FAULTS_SEED", "31"))
    rng = random.Random(seed)
    duration_s = 180.0 if long_run else 60.0
    every_s = (3.0, 8.0) if long_run else (2.0, 4.0)
    # Restarts only of a private cluster named for them (never the shared server).
    restarts = long_run and connection.vendor == "postgresql" and PG_CLUSTER is not None
    name_parent()
    for q in history.QUEUES:
        mq.create_queue(q, lock_duration=LOCK_S, max_delivery_count=MAX_DELIVERIES)
    for q in OTHER_QUEUES:
        mq.create_queue(q)
    for q in TASK_QUEUES:  # as a worker would create them: results kept
        mq.create_queue(q, **task_backends["default"].queue_options)
    fleet = Fleet(tmp_path, FLEET)
    fleet.extra_env["MQLITE_TEST_FSYNC"] = "1"
    sends_log, stop_file = tmp_path / "sends.jsonl", tmp_path / "stop"
    task_results = [tasks.chaos_task.enqueue(i) for i in range(100 if long_run else 40)]
    members = [Member("worker", a, "runworker", fleet.start(*a)) for a in WORKERS]
    for i in range(PRODUCERS):
        args = ("--prefix", f"p{i}", "--seed", str(seed), "--log", str(sends_log))
        args += ("--stop", str(stop_file))
        members.append(
            Member("producer", args, "chaos_produce", fleet.start(*args, command="chaos_produce"))
        )
    nemesis = Nemesis(
        fleet,
        members,
        rng,
        LOCK_S,
        restarts=restarts,
        completed=completed_total,
        burst=functools.partial(send_burst, sends_log, itertools.count()),
    )
    t0 = time.monotonic()
    try:
        for m in members:
            if m.kind == "worker":
                fleet.wait_started(m.proc)
        nemesis.run(duration_s, every_s, restart_at=[0.35, 0.7])
        stop_file.touch()
        for m in members:
            if m.kind == "producer":
                m.proc.wait(30)
        nemesis.revive()  # every worker up for the drain
        drained = drain(deadline_s=90)
        canaries = canary_round()
        busy = wait_idle(timeout_s=30)
        name_parent()
        for m in members:
            if m.kind == "worker":
                fleet.wait_started(m.proc)
                code = fleet.terminate(m.proc, timeout=60)
                assert code == 0, fleet.output(m.proc)[-3000:]
    finally:
        stop_file.touch()
        fleet.cleanup()
    elapsed = time.monotonic() - t0

    connection.close()
    name_parent()
    h = history.History(history.read_lines(sends_log), fleet.deliveries(), nemesis.freezes)
    checks = {
        "lost": h.lost(),
        "phantom": h.phantom(),
        "unexplained duplicate side effects": h.unexplained_duplicates(),
        "stale settlements accepted": h.stale_settlements(int(LOCK_S * 1000)),
        "group order": h.group_order(),
        "delivery bound": h.delivery_bound(),
        "stuck locks": history.stuck_locks(),
        "stuck threads": busy + canaries,
        "ordinary messages dead-lettered": history.dead_lettered(),
        "tasks without their final state": history.unrecorded_tasks(task_results),
    }
    totals = history.totals()  # asserts the counters' identities
    report = {
        "database": connection.vendor,
        "seed": seed,
        "form": "long" if long_run else "short",
        "seconds": round(elapsed),
        "sends": len(h.sends),
        "business rows": len(h.rows),
        "deliveries": len(h.deliveries),
        "side effects": len(h.effects),
        "explained duplicate side effects": h.duplicates(),
        "starts after a completion, frozen between check and start": h.frozen_starts(),
        "tasks": len(task_results),
        "completed": sum(t["completed"] for t in totals.values()),
        "faults": summary(nemesis.log),
        "restart s": [round(e["victim"], 1) for e in nemesis.log if e["kind"] == "pg-restart"],
        "restart recovery s": [round(s, 1) for s in nemesis.recovery_s],
        "drain s": round(drained, 1),
        "checks": {k: len(v) for k, v in checks.items()},
    }
    print("\nfault suite: " + json.dumps(report))
    (tmp_path / "report.json").write_text(json.dumps(report, indent=1))
    # The nemesis did its work: every kind of fault at least once (it sees to that), and
    # a floor on the count that a loaded machine still reaches (a SIGSTOP with its burst
    # takes several seconds; at load 35 the long form fitted 13 faults into 180 s).
    assert set(nemesis.kinds()) <= set(report["faults"]), report["faults"]
    assert sum(report["faults"].values()) >= duration_s / 20, report["faults"]
    failed = {k: v[:5] for k, v in checks.items() if v}
    assert not failed, f"{failed}\n{json.dumps(report)}\n{fleet.all_output()[-4000:]}"


def send_burst(log: Path, bursts: Iterator[int], n: int = 400) -> None:
    """``n`` business rows and their messages in one transaction, from this process,
    logged as committed sends."""
    name_parent()
    refs = [f"burst{next(bursts)}-{i}" for i in range(n)]
    with transaction.atomic():
        with connection.cursor() as cursor:
            for ref in refs:
                cursor.execute("INSERT INTO reliability_order (ref) VALUES (%s)", [ref])
        seqs = mq.send_batch("chaos", [mq.OutMessage({"ref": r}, message_id=r) for r in refs])
    with log.open("a") as f:
        for ref, seq in zip(refs, seqs, strict=True):
            f.write(json.dumps({"ref": ref, "seq": seq, "group": None}) + "\n")
        f.flush()
        os.fsync(f.fileno())


def live() -> int:
    name_parent()
    return history.live()


def drain(deadline_s: float) -> float:
    """Until nothing is live in the fault queues (or ``deadline_s`` passed: the checker
    then reports the stuck locks); returns how long it took."""
    t0 = time.monotonic()
    while live() and time.monotonic() - t0 < deadline_s:
        time.sleep(0.5)
    return time.monotonic() - t0


def canary_round(n: int = 120) -> list[str]:
    """After the faults: fresh messages must each be completed on their first delivery
    (a handler thread left with a broken connection fails every message it takes)."""
    refs = [f"canary-{i}" for i in range(n)]
    with connection.cursor() as cursor:
        for ref in refs:
            cursor.execute("INSERT INTO reliability_order (ref) VALUES (%s)", [ref])
    mq.send_batch("chaos", [mq.OutMessage({"ref": r}, message_id=r) for r in refs])
    drain(deadline_s=30)
    rows = history.table("SELECT ref, delivery FROM reliability_effect WHERE ref LIKE 'canary-%%'")
    late = [f"{ref}: delivery {d}" for ref, d in rows if d != 1]
    missing = set(refs) - {ref for ref, _d in rows}
    return late + [f"{ref}: never delivered" for ref in sorted(missing)]


def wait_idle(timeout_s: float) -> list[str]:
    """Every live worker reports nothing in flight (its heartbeat's gauge)."""
    deadline = time.monotonic() + timeout_s
    while True:
        busy = [
            f"worker {w.pk} (pid {w.pid}): {w.in_flight} in flight"
            for w in WorkerRow.objects.filter(stopped_at__isnull=True)
            if w.in_flight and w.last_seen > time.time() * 1000 - 3000
        ]
        if not busy or time.monotonic() > deadline:
            return busy
        time.sleep(0.3)
