"""Queues on two databases: ``near`` lives on the default database, ``far`` is declared
on the second alias (``queues2``: a second SQLite file, or a second PostgreSQL
database). Tests that touch it mark themselves with ``databases=BOTH``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connections

from tests.settings import SECOND

BOTH = ["default", SECOND]
NEAR, FAR = "near", "far"
DECLARED = {
    "QUEUES": {
        NEAR: {},
        FAR: {"database": SECOND, "max_delivery_count": 2},
    }
}


@pytest.fixture
def declared(settings: Any) -> Iterator[None]:
    """Declare the two queues and run ``migrate`` on both databases, which creates
    each on its own database."""
    settings.MQLITE = {**settings.MQLITE, **DECLARED}
    for alias in BOTH:
        call_command("migrate", database=alias, verbosity=0)
    yield


def rows(alias: str, queue: str, state: str | None = None) -> int:
    """Messages of ``queue`` on database ``alias``, read with plain SQL."""
    sql = (
        "SELECT count(*) FROM mqlite_message m JOIN mqlite_queue q ON q.id = m.queue_id "
        "WHERE q.name = %s"
    )
    params: list[Any] = [queue]
    if state is not None:
        sql += " AND m.state = %s"
        params.append(state)
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, params)
        return int(cursor.fetchone()[0])


def queue_names(alias: str) -> set[str]:
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT name FROM mqlite_queue")
        return {r[0] for r in cursor.fetchall()}
