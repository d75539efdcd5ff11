"""Database faults under a running worker: on PostgreSQL and MariaDB its connections are
ended (``pg_terminate_backend``, ``KILL CONNECTION``) again and again; on SQLite a
concurrent writer holds ``BEGIN IMMEDIATE`` longer than the worker's busy timeout, so
the worker meets "database is locked". The worker must log, back off, reconnect and go
on: it stays up, every message is completed exactly once (one ``complete`` receipt per
message, never a second settlement of one lease) and the counters balance.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection

import django_mqlite as mq
from tests.support import dbfaults

from .harness import Fleet, check_totals, receipts, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FLEET = {
    "HEARTBEAT_INTERVAL": 0.3,
    "WORKER_STALE_AFTER": 5.0,
    "REAP_INTERVAL": 0.3,
    "RETRY_BACKOFF_BASE": 0.05,
    "RETRY_BACKOFF_CAP": 0.2,
}


def terminate_backends(stop: threading.Event, every_s: float, hits: list[int]) -> None:
    """End every other session on the test database, every ``every_s`` seconds."""
    while not stop.wait(every_s):
        hits.append(dbfaults.terminate_backends(connection))


def hold_write_lock(stop: threading.Event, path: str, hold_s: float, hits: list[int]) -> None:
    """Hold SQLite's write lock for ``hold_s`` at a time, with short gaps."""
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        while not stop.is_set():
            conn.execute("BEGIN IMMEDIATE")
            hits.append(1)
            stop.wait(hold_s)
            conn.execute("COMMIT")
            stop.wait(0.3)
    finally:
        conn.close()


def test_worker_survives_database_faults(tmp_path: Path, long_run: bool) -> None:
    n = 2_000 if long_run else 400
    duration_s = 60.0 if long_run else 12.0
    mq.create_queue("faults", lock_duration=5)
    fleet = Fleet(tmp_path, FLEET)
    fleet.extra_env["MQLITE_TEST_SQLITE_TIMEOUT"] = "0.2"
    stop = threading.Event()
    hits: list[int] = []
    server = dbfaults.has_sessions(connection)
    if server:
        # The test's own connection must survive the purge.
        dbfaults.spare(connection)
        fault = threading.Thread(target=terminate_backends, args=(stop, 0.7, hits))
    else:
        path = str(connection.settings_dict["NAME"])
        fault = threading.Thread(target=hold_write_lock, args=(stop, path, 1.0, hits))
    # Each message takes a little time, so the work spans the whole fault period.
    props = {"sleep": [1, 2, 3], "sleep_s": 2 * duration_s / n}
    seqs = set(
        mq.send_batch("faults", [mq.OutMessage({"i": i}, properties=props) for i in range(n)])
    )
    worker = fleet.start("-q", "faults", "-c", "2", "-v", "2")
    try:
        fault.start()
        time.sleep(duration_s)
        stop.set()
        fault.join(30)
        wait_until(lambda: not live(), 60, what="queue drained after the faults")
        assert worker.poll() is None, "the worker died:\n" + fleet.output(worker)[-3000:]
        assert fleet.terminate(worker) == 0, fleet.output(worker)[-3000:]
    finally:
        stop.set()
        fleet.cleanup()
    out = fleet.output(worker)
    assert len(hits) >= 5
    records = fleet.deliveries("faults")
    assert {r["seq"] for r in records} == seqs
    settled = receipts()
    completes = Counter(
        r["seq"] for r in records for v, _t in settled.get(r["token"], []) if v == "complete"
    )
    assert set(completes) == seqs and set(completes.values()) == {1}, completes.most_common(3)
    assert all(len(v) == 1 for v in settled.values())  # one settlement per lease
    totals = check_totals("faults")
    assert totals["completed"] == n, totals
    expected = ("terminat", "lost connection", "gone away") if server else ("database is locked",)
    assert any(e in out.lower() for e in expected) or "connection" in out.lower(), out[-3000:]
    print(
        f"\ndatabase faults on {connection.vendor}: {n} messages, {len(hits)} faults injected, "
        f"{len(records)} deliveries, totals {totals}"
    )


def live() -> int:
    counts = mq.stats("faults").counts
    return sum(counts[s] for s in ("active", "locked", "deferred", "scheduled"))
