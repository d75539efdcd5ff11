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
def atomic_on_second(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each claim read its queue inside a transaction of the second database."""
    seen: list[bool] = []
    load = claim.load_queue

    def watched(cursor: Any, name: str) -> Any:
        seen.append(connections[SECOND].in_atomic_block)
        return load(cursor, name)

    monkeypatch.setattr(claim, "load_queue", watched)
    return seen


@pytest.mark.usefixtures("declared")
def test_a_declared_queue_is_claimed_on_its_database(atomic_on_second: list[bool]) -> None:
    mq.send(FAR, b"x")
    (m,) = mq.receive(FAR)
    assert m.using == SECOND
    m.defer()
    (again,) = mq.receive_deferred(FAR, [m.seq])
    assert (again.seq, again.using) == (m.seq, SECOND)
    assert atomic_on_second == [True, True]


def test_a_queue_named_by_using_is_claimed_there(atomic_on_second: list[bool]) -> None:
    mq.create_queue("there", using=SECOND)
    mq.send("there", b"x", using=SECOND)
    (m,) = mq.receive("there", using=SECOND)
    assert m.using == SECOND
    m.defer()
    (again,) = mq.receive_deferred("there", [m.seq], using=SECOND)
    assert (again.seq, again.using) == (m.seq, SECOND)
    assert atomic_on_second == [True, True]
