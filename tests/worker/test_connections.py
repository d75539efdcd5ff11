"""How many database connections one worker holds (docs/operations.md states it)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq
from tests.support.procs import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def connections_to_this_database() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()"
        )
        return int(cursor.fetchone()[0])


def test_a_worker_holds_concurrency_plus_five(workers: Any, vendor: str) -> None:
    """Handler threads (each opens one when it first touches the database), the claim
    loop, the heartbeat, the reaper, the LISTEN connection and the schedules' ticker
    (the Tasks backend is installed: schedules stored in the database can appear at
    any time, so every worker ticks)."""
    if vendor != "postgresql":
        pytest.skip("connection counting is a PostgreSQL concern")
    if os.environ.get("MQLITE_TEST_DB") == "pgbouncer":
        pytest.skip("pg_stat_activity counts PgBouncer's pooled server connections")
    mq.create_queue("work")
    mq.create_queue("slow")
    before = connections_to_this_database()
    proc = workers.start("--concurrency", "3")
    # An idle worker: the claim loop, the heartbeat, the reaper, LISTEN and the ticker.
    wait_for(lambda: connections_to_this_database() - before == 5, what="an idle worker's 5")
    # Three handlers at once that use the database: each thread opens its own connection
    # (settling is the main loop's, in batches) and keeps it.
    mq.send_batch("work", [mq.OutMessage({"sleep": 0.5, "query": True}) for _ in range(3)])
    wait_for(lambda: mq.stats("work").totals["completed"] == 3, what="three completions")
    assert connections_to_this_database() - before == 3 + 5
    workers.stop(proc)
    wait_for(lambda: connections_to_this_database() == before, what="connections closed")
