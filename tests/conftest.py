from __future__ import annotations

import itertools
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
