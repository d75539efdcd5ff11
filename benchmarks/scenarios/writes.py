"""Bytes written per message over its whole life (sent, claimed, completed).

Both systems' lives are measured alike, at batch 1 and at batch 64: django-mqlite sends
``batch`` messages per transaction, receives ``batch`` and completes them in one
transaction; django-tasks-db enqueues ``batch`` tasks per transaction, and its worker
claims and finishes one task per transaction, as ``db_worker`` does (it has no batch
claim). At batch 1 each system makes three commits per message or task. (Files written
before this measured django-tasks-db only as ``tasks_db.bytes_per_task``, enqueued 64 per
transaction, beside django-mqlite's batch-1 figure: not the same life.)

SQLite: checkpoint the WAL to zero, stop auto-checkpoints on this connection, run the
lifecycle, and read the WAL's size: every page the run wrote, as WAL frames (page +
24-byte header). A later checkpoint copies each distinct page to the database file once
more; that is at most the WAL's size again and usually far less. PostgreSQL: the
``pg_current_wal_lsn()`` difference, which is cluster-wide, so other databases' writes
on the same server count too; the minimum over repeats is the figure to read. MariaDB:
the growth of ``Innodb_os_log_written`` (bytes written to InnoDB's redo log), which is
server-wide in the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from django.db import connection

import django_mqlite as mq

from .. import peers
from ..backlog import fill
from ..harness import Context, reset, summary


def _redo_bytes(c: Any) -> int:
    c.execute("SHOW GLOBAL STATUS LIKE 'Innodb_os_log_written'")
    return int(c.fetchone()[1])


def _wal_bytes(run: Callable[[], None]) -> int:
    with connection.cursor() as c:
        if connection.vendor == "sqlite":
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            c.execute("PRAGMA wal_autocheckpoint=0")
            try:
                run()
                return os.path.getsize(connection.settings_dict["NAME"] + "-wal")
            finally:
                c.execute("PRAGMA wal_autocheckpoint=1000")
                c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        if connection.vendor == "mysql":
            before = _redo_bytes(c)
            run()
            return _redo_bytes(c) - before
        c.execute("SELECT pg_current_wal_lsn()")
        before = c.fetchone()[0]
        run()
        c.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", [before])
        return int(c.fetchone()[0])


def _mqlite_lifecycle(n: int, batch: int) -> Callable[[], None]:
    def run() -> None:
        fill("bench", n, batch)
        while got := mq.receive("bench", max_messages=batch):
            mq.complete_batch("bench", [(m.seq, m.lock_token or "") for m in got])

    return run


def _tasks_lifecycle(n: int, batch: int) -> Callable[[], None]:
    def run() -> None:
        peers.enqueue_tasks(n, per_transaction=batch)
        while (task := peers.claim_one_task()) is not None:
            task.set_successful(None)

    return run


def write_amplification(ctx: Context) -> dict[str, Any]:
    n = ctx.size("writes")
    out: dict[str, Any] = {}
    for batch in (1, 64):
        m = n if batch > 1 else n // 10
        per: list[float] = []
        for _ in range(ctx.repeat):
            reset()
            per.append(_wal_bytes(_mqlite_lifecycle(m, batch)) / m)
        out[f"mqlite.bytes_per_msg_batch{batch}"] = summary(per, "bytes/msg", n=m, body=256)
    if peers.has_tasks_db():
        for batch in (1, 64):
            m = min(n if batch > 1 else n // 10, ctx.size("tasks_drain"))
            per = []
            for _ in range(ctx.repeat):
                reset()
                per.append(_wal_bytes(_tasks_lifecycle(m, batch)) / m)
            out[f"tasks_db.bytes_per_task_batch{batch}"] = summary(per, "bytes/task", n=m)
    return out
