"""The systems of the ``brokers`` scenario: how each one's worker is started (its own
command, its documented defaults, nothing tuned), what it needs running, and how to
empty it between runs."""

from __future__ import annotations

import importlib.util
import shutil
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .record import BROKER_AMQP, BROKER_REDIS

BIN = Path(sys.executable).parent
#: Why a broker peer has no figures of its own in a PostgreSQL half (``System.uses_db``).
ONCE = "measured once, in this run's SQLite half: it does not use the queue database"
APPS = "benchmarks.brokers.apps"


@dataclass(frozen=True)
class System:
    name: str
    #: The worker command, as the system's documentation starts it.
    worker: list[str]
    #: What must answer for it to run: "redis", "amqp" or "postgres".
    needs: tuple[str, ...]
    #: The Python package it needs installed (the bench extra installs them all).
    package: str
    env: dict[str, str] = field(default_factory=dict)
    #: What the defaults are, in words, for the docs' table.
    defaults: str = ""
    #: Whether it keeps its tasks in the run's database (its figures depend on it); a
    #: broker peer does not, and a run of both databases measures it once (SQLite half).
    uses_db: bool = False


def _bin(name: str) -> str:
    return str(BIN / name) if (BIN / name).exists() else (shutil.which(name) or name)


def systems(db: str) -> list[System]:
    """Every system, django-mqlite on this run's database first. procrastinate runs on
    PostgreSQL only, so it is measured in the PostgreSQL run."""
    manage = str(Path(__file__).resolve().parent.parent / "benchproject" / "manage.py")
    out = [
        System(
            "mqlite",
            [sys.executable, manage, "runworker"],
            (),
            "django_mqlite",
            {"BENCH_SYSTEM": "mqlite"},
            "runworker, no flags: a process per core; on SQLite two per core, at most 4",
            uses_db=True,
        ),
        System(
            "celery_redis",
            [_bin("celery"), "-A", f"{APPS}.celery_app", "worker", "--loglevel=WARNING"],
            ("redis",),
            "celery",
            {"BENCH_BROKER": "redis"},
            "celery worker: prefork, a process per core, no result backend",
        ),
        System(
            "celery_redis_results",
            [_bin("celery"), "-A", f"{APPS}.celery_app", "worker", "--loglevel=WARNING"],
            ("redis",),
            "celery",
            {"BENCH_BROKER": "redis", "BENCH_CELERY_RESULTS": "1"},
            "the same, with the Redis result backend",
        ),
        System(
            "celery_amqp",
            [_bin("celery"), "-A", f"{APPS}.celery_app", "worker", "--loglevel=WARNING"],
            ("amqp",),
            "celery",
            {"BENCH_BROKER": "amqp"},
            "celery worker on RabbitMQ",
        ),
        System(
            "dramatiq_redis",
            [_bin("dramatiq"), f"{APPS}.dramatiq_app"],
            ("redis",),
            "dramatiq",
            {"BENCH_BROKER": "redis"},
            "dramatiq: a process per core, 8 threads each",
        ),
        System(
            "dramatiq_amqp",
            [_bin("dramatiq"), f"{APPS}.dramatiq_app"],
            ("amqp",),
            "dramatiq",
            {"BENCH_BROKER": "amqp"},
            "dramatiq on RabbitMQ",
        ),
        System(
            "huey",
            [_bin("huey_consumer"), f"{APPS}.huey_app.huey"],
            ("redis",),
            "huey",
            {},
            "huey_consumer: one worker thread",
        ),
        System(
            "rq",
            [_bin("rq"), "worker", "--url", BROKER_REDIS, "bench"],
            ("redis",),
            "rq",
            {},
            "rq worker: a forked process per job",
        ),
    ]
    # The database backends of Django Tasks, each with its own worker command and
    # defaults, in a bench project that installs only that backend (BENCH_SYSTEM).
    out += [
        System(
            "tasks_db",
            [sys.executable, manage, "db_worker"],
            (),
            "django_tasks_db",
            {"BENCH_SYSTEM": "tasks_db"},
            "django-tasks-db's db_worker: one process, one task at a time",
            uses_db=True,
        ),
        System(
            "ox",
            [sys.executable, manage, "ox_worker", "--backend", "ox"],
            (),
            "django_ox",
            {"BENCH_SYSTEM": "ox"},
            "django-ox's ox_worker: one process, concurrency 1",
            uses_db=True,
        ),
    ]
    if db == "postgres":
        out.append(
            System(
                "procrastinate",
                [_bin("procrastinate"), f"--app={APPS}.procrastinate_app.app", "worker"],
                ("postgres",),
                "procrastinate",
                {},
                "procrastinate worker: one job at a time",
                uses_db=True,
            )
        )
    return out


def down(system: System) -> str | None:
    """Why ``system`` cannot run here (not installed, or a service it needs does not
    answer), or None. Every system records into Redis, so each needs it."""
    for package in (system.package, "redis", "psutil"):
        if importlib.util.find_spec(package) is None:
            return f"{package} is not installed (pip install -e '.[bench]')"
    needs = ("redis", *system.needs)
    ports = {"redis": 6379, "amqp": 5672, "postgres": 5432}
    for need in needs:
        try:
            socket.create_connection(("127.0.0.1", ports[need]), timeout=1).close()
        except OSError:
            return f"{need} does not answer on 127.0.0.1:{ports[need]}"
    return None


def purge_amqp() -> None:
    """Empty the RabbitMQ queues the peers declare (Celery's ``celery``, Dramatiq's
    ``bench`` and its delay and dead-letter queues)."""
    import pika

    params = pika.URLParameters(BROKER_AMQP.rstrip("/") + "/%2F")
    conn = pika.BlockingConnection(params)
    try:
        for name in ("celery", "bench", "bench.DQ", "bench.XQ"):
            ch = conn.channel()
            try:
                ch.queue_purge(name)
            except pika.exceptions.ChannelClosedByBroker:
                pass  # not declared yet
    finally:
        conn.close()
