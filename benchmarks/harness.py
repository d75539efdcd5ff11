"""What every scenario shares: repeated timing with min/median/max, the run's context
(database, sizes, how to start a worker process) and resetting the tables between runs.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parent.parent
MANAGE = ROOT / "benchmarks" / "benchproject" / "manage.py"


def summary(samples: list[float], unit: str, **extra: Any) -> dict[str, Any]:
    """min/median/max of ``samples`` (and the samples themselves) in ``unit``."""
    return {
        "unit": unit,
        "min": min(samples),
        "median": statistics.median(samples),
        "max": max(samples),
        "samples": [round(s, 4) for s in samples],
        **extra,
    }


def skipped(reason: str) -> dict[str, Any]:
    return {"skipped": reason}


@dataclass
class Context:
    """One database's run: which database, how big, how many repeats."""

    db: str  # "sqlite", "postgres" or "mariadb"
    quick: bool
    repeat: int
    sizes: dict[str, Any] = field(default_factory=dict)

    def size(self, name: str) -> int:
        return int(self.sizes[name])

    def manage(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start ``manage.py <args>`` of the bench project with this run's database.

        Its stderr goes to an unnamed temporary file, never to a pipe: nobody reads a
        pipe while the worker runs, and once 64 KiB are waiting in it the worker blocks
        in write() for good. django-ox's ox_worker at its default verbosity logs each
        task's claim, start and success to stderr, so every drain of it hung there.
        ``wait_all`` reads the file's tail when a worker fails."""
        err = tempfile.TemporaryFile()  # closed by wait_all (or when collected)
        # A system's worker runs with only that system installed (benchproject/settings).
        system = {"BENCH_SYSTEM": _SYSTEM_OF[args[0]]} if args and args[0] in _SYSTEM_OF else {}
        proc = subprocess.Popen(  # noqa: S603 - our own interpreter and script
            [sys.executable, str(MANAGE), *args],
            env={**os.environ, **system, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        _STDERR[proc.pid] = err
        return proc


# The system each worker command belongs to (BENCH_SYSTEM in benchproject/settings.py).
_SYSTEM_OF = {"runworker": "mqlite", "db_worker": "tasks_db", "ox_worker": "ox"}

# Each started worker's stderr file, by pid (see Context.manage).
_STDERR: dict[int, IO[bytes]] = {}


def _stderr_tail(proc: subprocess.Popen[bytes], size: int = 2000) -> str:
    """The last ``size`` characters the worker wrote to stderr (and the file closed)."""
    err = _STDERR.pop(proc.pid, None)
    if err is None:
        return ""
    with err:
        err.seek(0)
        return err.read().decode(errors="replace")[-size:]


def repeat(
    ctx: Context, once: Callable[[], float | tuple[float, float]], unit: str, **extra: Any
) -> dict[str, Any]:
    """Run ``once`` ``ctx.repeat`` times. It returns a sample, or (sample, CPU
    microseconds per message): CPU time barely moves with the machine's load, wall
    time does, so both are kept."""
    samples, cpu = [], []
    for _ in range(ctx.repeat):
        got = once()
        if isinstance(got, tuple):
            samples.append(got[0])
            cpu.append(got[1])
        else:
            samples.append(got)
    if cpu:
        extra["cpu_us_per_msg"] = statistics.median(cpu)
    return summary(samples, unit, **extra)


def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds > 0 else float("inf")


class Stopwatch:
    """Wall time, and CPU time of this process plus the children it waited for."""

    def __enter__(self) -> Stopwatch:
        self.start = time.perf_counter()
        self.cpu_start = _cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start
        self.cpu = _cpu() - self.cpu_start

    def result(self, n: int) -> tuple[float, float]:
        """(per second, CPU microseconds each) for ``n`` messages."""
        return rate(n, self.seconds), self.cpu / n * 1e6


def _cpu() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def wait_all(procs: list[subprocess.Popen[bytes]], timeout_s: float) -> None:
    """Wait for worker processes; a failed or stuck one fails the scenario loudly."""
    deadline = time.monotonic() + timeout_s
    for p in procs:
        try:
            p.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise RuntimeError(
                f"worker {p.args} did not finish in {timeout_s}s: {_stderr_tail(p)}"
            ) from None
        err = _stderr_tail(p)
        if p.returncode != 0:
            raise RuntimeError(f"worker {p.args} exited {p.returncode}: {err}")


def reset() -> None:
    """Empty every table a scenario writes (queues stay; their counters restart)."""
    from django.db import connection, transaction

    tables = [
        "mqlite_message",
        "mqlite_receipt",
        "mqlite_attempt",
        "mqlite_dedup",
        "mqlite_totals",
        "mqlite_worker",
    ]
    from . import peers

    if peers.has_tasks_db():
        from django_tasks_db.models import DBTaskResult

        tables.append(DBTaskResult._meta.db_table)
    if peers.has_ox():
        from django_ox.models import OxTask

        tables.append(OxTask._meta.db_table)
    with transaction.atomic(), connection.cursor() as c:
        for t in tables:
            c.execute(f"DELETE FROM {t}")
    with connection.cursor() as c:
        if connection.vendor == "sqlite":
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        elif connection.vendor == "mysql":
            # InnoDB purges the deleted rows in the background; fresh statistics, as
            # ANALYZE gives PostgreSQL, so no run is planned on the previous one's.
            c.execute(f"ANALYZE TABLE {', '.join(tables)}")
            c.fetchall()
        else:
            c.execute(f"VACUUM ANALYZE {', '.join(tables)}")


def pending(queue: str = "bench") -> int:
    """Live messages left on ``queue``."""
    from django.db import connection

    with connection.cursor() as c:
        c.execute(
            "SELECT count(*) FROM mqlite_message m JOIN mqlite_queue q ON q.id = m.queue_id "
            "WHERE q.name = %s AND m.state IN ('active', 'locked', 'scheduled', 'deferred')",
            [queue],
        )
        return int(c.fetchone()[0])
