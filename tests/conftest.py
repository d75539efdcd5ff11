from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection

import django_mqlite as mq

_names = itertools.count(1)


@pytest.fixture
def vendor() -> str:
    return connection.vendor


@pytest.fixture
def make_queue(db: Any) -> Callable[..., mq.Queue]:
    def make(name: str | None = None, **options: Any) -> mq.Queue:
        return mq.create_queue(name or f"q{next(_names)}", **options)

    return make


@pytest.fixture
def q(make_queue: Callable[..., mq.Queue]) -> str:
    return make_queue("work").name


@pytest.fixture
def workers(tmp_path: Any) -> Iterator[Any]:
    """Start real worker processes on this test's database (see ``tests/procs.py``)."""
    from .procs import Workers

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


@pytest.fixture(autouse=True, scope="session")
def _stop_shared_listeners() -> Iterator[None]:
    """``areceive(wait=...)`` opens a LISTEN connection on PostgreSQL: close it before
    the test database is dropped."""
    yield
    from django_mqlite.engine import listen

    listen.stop_shared_listeners()
