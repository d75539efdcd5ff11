"""A claim of a queue on another database runs there, in one transaction of that
database: ``receive`` and ``receive_deferred``, for a queue declared there (no
``using=``) and one named by ``using=``."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections

import django_mqlite as mq
from django_mqlite.engine import claim
from tests.settings import SECOND

from .conftest import BOTH, FAR

pytestmark = pytest.mark.django_db(transaction=True, databases=BOTH)


@pytest.fixture
def on_second(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Where each claim ran: a transaction of the second database (the general claim
    reads its queue there), or one statement on that database's connection (a plain
    claim on PostgreSQL, ``_claim_one``)."""
    seen: list[str] = []
    load, run_one = claim.load_queue, claim._run_one

    def watched(cursor: Any, name: str) -> Any:
        seen.append("transaction" if connections[SECOND].in_atomic_block else "elsewhere")
        return load(cursor, name)

    def watched_one(cursor: Any, dialect: Any, alias: str, *rest: Any) -> Any:
        seen.append("statement" if cursor.db is connections[SECOND] else "elsewhere")
        return run_one(cursor, dialect, alias, *rest)

    monkeypatch.setattr(claim, "load_queue", watched)
    monkeypatch.setattr(claim, "_run_one", watched_one)
    return seen


def plain_claim() -> str:
    """How a plain receive claims on the second database."""
    return "statement" if connections[SECOND].vendor == "postgresql" else "transaction"


@pytest.mark.usefixtures("declared")
def test_a_declared_queue_is_claimed_on_its_database(on_second: list[str]) -> None:
    mq.send(FAR, b"x")
    (m,) = mq.receive(FAR)
    assert m.using == SECOND
    m.defer()
    (again,) = mq.receive_deferred(FAR, [m.seq])
    assert (again.seq, again.using) == (m.seq, SECOND)
    assert on_second == [plain_claim(), "transaction"]


def test_a_queue_named_by_using_is_claimed_there(on_second: list[str]) -> None:
    mq.create_queue("there", using=SECOND)
    mq.send("there", b"x", using=SECOND)
    (m,) = mq.receive("there", using=SECOND)
    assert m.using == SECOND
    m.defer()
    (again,) = mq.receive_deferred("there", [m.seq], using=SECOND)
    assert (again.seq, again.using) == (m.seq, SECOND)
    assert on_second == [plain_claim(), "transaction"]
