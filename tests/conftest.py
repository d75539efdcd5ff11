from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq
from tests.support.features import needs_notify  # noqa: F401  (a fixture for every test)

_names = itertools.count(1)


def _listen_backlog() -> None:
    """The live server's listen backlog: Django's test server listens with a backlog of
    10 (``WSGIServer.request_queue_size``), and the load tests open 50 connections at once
    from producer threads that share the server's interpreter lock. When the accept queue
    is full, Linux drops the client's last handshake packet: the client believes it is
    connected and sends its request, which the server never sees until a SYN-ACK
    retransmission (up to five, about 63 s) gets through, so a request could sit past
    its reply timeout (seen in CI: ``TimeoutError`` in tests/reliability/test_load.py,
    with ``TcpExtListenOverflows`` counting 1,488 drops in one local run). The backlog
    is what a production server would use; nothing of the project's own code changes."""
    from django.core.servers.basehttp import WSGIServer

    WSGIServer.request_queue_size = 1024


_listen_backlog()


@pytest.fixture(autouse=True)
def _fresh_statement_caches() -> None:
    """Under mutation testing (``python -m tests.mutation``), empty the engine's
    per-process statement caches before each test, as a fresh process has them. mutmut
    records which tests call each function to choose the tests that run against its
    mutants; a builder whose result is cached runs in the first test that needs it only,
    so without this every later test would go unrecorded, and a mutant of it would be
    tried against that one test."""
    if not os.environ.get("MQLITE_MUTATION"):
        return
    for cache in statement_caches():
        cache.clear()


@pytest.fixture(autouse=True)
def _fresh_lease_throttle() -> None:
    """Each test starts as a fresh process: no receive has returned a queue's expired
    leases yet (``maintenance.expire_queue_locks`` remembers when it last did, per queue
    name, and test after test reuses the same names)."""
    from django_mqlite.engine import maintenance

    maintenance._queue_leases_at.clear()


def statement_caches() -> list[dict[Any, Any]]:
    """The engine's per-process caches of built statements (each keyed by what it was
    built from, so emptying one only costs a rebuild of the same text)."""
    from django_mqlite.engine import claim, prepared, send_one, totals

    return [
        claim._claim_sql,
        claim._promote_sql,
        claim._one_sql,
        totals._totals_sql,
        send_one._postgres,
        prepared._names,
    ]


@pytest.fixture
def vendor() -> str:
    return connection.vendor


@pytest.fixture
def make_queue(db: Any) -> Callable[..., mq.Queue]:
    def make(name: str | None = None, **options: Any) -> mq.Queue:
        return mq.create_queue(name or f"q{next(_names)}", **options)

    return make


@pytest.fixture
def untraced(settings: Any) -> None:
    """Sends, claims and settlements as they run without a tracer. The test settings
    leave ``MQLITE["TRACING"]`` at its default, which turns tracing on wherever
    OpenTelemetry is installed (the dev environment): every send then runs through the
    tracer's hook, and the untraced path, the one of every project without the
    ``[otel]`` extra, would go untested. A test that wants a tracer installs one."""
    from django_mqlite.engine import tracing

    settings.MQLITE = {**settings.MQLITE, "TRACING": False}
    assert tracing.hook is None


@pytest.fixture
def q(make_queue: Callable[..., mq.Queue]) -> str:
    return make_queue("work").name


@pytest.fixture
def workers(tmp_path: Any) -> Iterator[Any]:
    """Start real worker processes on this test's database (see ``tests/support/procs.py``)."""
    from tests.support.procs import Workers

    w = Workers(tmp_path)
    try:
        yield w
    finally:
        w.cleanup()


@pytest.fixture
def clock() -> Iterator[mq.clock.FrozenClock]:
    with mq.clock.frozen() as c:
        yield c


@pytest.fixture(scope="session")
def django_db_keepdb(request: pytest.FixtureRequest) -> bool:
    """pytest-django's ``--reuse-db`` switch; always on through PgBouncer.

    CREATE/DROP DATABASE through a transaction-pooling PgBouncer is awkward (its pooled
    server connections keep the database busy), so under ``MQLITE_TEST_DB=pgbouncer``
    the test databases are made afresh on PostgreSQL itself, here, and Django is told to
    keep them: it then only runs the migrations, through PgBouncer.
    """
    if os.environ.get("MQLITE_TEST_DB") == "pgbouncer":
        _create_directly()
        return True
    return bool(request.config.getvalue("reuse_db"))


def _create_directly() -> None:
    import psycopg
    from django.conf import settings

    port = os.environ.get("PGPORT", "5432")
    for conf in settings.DATABASES.values():
        name = conf["TEST"]["NAME"]
        dsn = f"host={conf['HOST']} port={port} user={conf['USER']} dbname=postgres"
        with psycopg.connect(dsn, autocommit=True, password=conf["PASSWORD"] or None) as pg:
            pg.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            pg.execute(f'CREATE DATABASE "{name}"')


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long",
        action="store_true",
        default=False,
        help="run the reliability suite (tests/reliability/) at its long-run sizes "
        "(see docs/reliability.md)",
    )


@pytest.fixture
def long_run(request: pytest.FixtureRequest) -> bool:
    """True under ``--long``: reliability tests pick their big sizes and durations."""
    return bool(request.config.getoption("--long"))


@pytest.fixture(autouse=True)
def _stop_shared_listeners() -> Iterator[None]:
    """``areceive(wait=...)`` and ``mq.wait`` (a task result's ``wait()`` too) open a
    LISTEN connection on PostgreSQL, or a commit watcher on SQLite: close it after each
    test, before the test database is dropped."""
    yield
    from django_mqlite.engine import listen

    listen.stop_shared_listeners()


# -- CI: every skip is expected ------------------------------------------------------------
# Under ``MQLITE_EXPECTED_SKIPS=<file>`` (``.ci/run`` sets it) the run fails unless its skips,
# counted by reason, are exactly the ones the file lists for this run (database and Django
# version): a tool that is missing here (the browser, node, boto3, PgBouncer) turns into a
# failure instead of a quiet skip. ``MQLITE_EXPECTED_SKIPS_UPDATE=1`` writes what it saw.


def _skip_label() -> str:
    import django

    major, minor = django.VERSION[:2]
    return f"{os.environ.get('MQLITE_TEST_DB', 'sqlite')}-django{major}.{minor}"


def _skip_reason(report: Any) -> str:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return str(reason).removeprefix("Skipped: ")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    import json
    from collections import Counter
    from pathlib import Path

    path = os.environ.get("MQLITE_EXPECTED_SKIPS")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if not path or reporter is None or hasattr(session.config, "workerinput"):
        return
    seen = Counter(_skip_reason(r) for r in reporter.stats.get("skipped", []))
    label = _skip_label()
    file = Path(path)
    if os.environ.get("MQLITE_EXPECTED_SKIPS_UPDATE") == "1":
        import fcntl

        # Runs side by side update one file: one at a time.
        with open(file.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            pinned = json.loads(file.read_text()) if file.exists() else {}
            pinned[label] = dict(sorted(seen.items()))
            file.write_text(json.dumps(dict(sorted(pinned.items())), indent=2) + "\n")
        return
    pinned: dict[str, dict[str, int]] = json.loads(file.read_text()) if file.exists() else {}
    want = pinned.get(label, {})
    if dict(seen) == want:
        reporter.ensure_newline()
        reporter.write_line(f"skips: {sum(seen.values())}, each expected for {label}")
        return
    reporter.ensure_newline()
    reporter.write_line(f"UNEXPECTED SKIPS for {label} (pinned in {path}):", red=True)
    for reason in sorted(set(seen) | set(want)):
        if seen.get(reason, 0) != want.get(reason, 0):
            reporter.write_line(
                f"  {seen.get(reason, 0)} skipped, {want.get(reason, 0)} expected: {reason}"
            )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
