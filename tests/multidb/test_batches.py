"""Batches on several databases: a batch lives on one database; a child or callback on
another is refused before anything is written, and a batch of queues on the second
database works there."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connections

import django_mqlite as mq
from tests.settings import SECOND

from .conftest import BOTH, FAR, NEAR, rows

pytestmark = [pytest.mark.django_db(databases=BOTH), pytest.mark.usefixtures("declared")]


def batch_rows(alias: str) -> int:
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM mqlite_batch")
        return int(cursor.fetchone()[0])


def test_a_child_on_another_database_is_refused() -> None:
    with pytest.raises(mq.CrossDatabaseError):
        with mq.batch(on_complete=mq.Callback(NEAR, "cb")) as b:
            b.send(NEAR, "a")
            b.send(FAR, "b")
    assert (rows("default", NEAR), batch_rows("default"), batch_rows(SECOND)) == (0, 0, 0)


def test_callbacks_on_two_databases_are_refused() -> None:
    with pytest.raises(mq.CrossDatabaseError):
        mq.batch(on_complete=mq.Callback(NEAR, "x"), on_failure=mq.Callback(FAR, "y"))
    assert (batch_rows("default"), batch_rows(SECOND)) == (0, 0)


def test_a_batch_lives_on_its_callbacks_database(db: Any) -> None:
    with mq.batch(on_complete=mq.Callback(FAR, "cb")) as b:
        b.send(FAR, "a")
    assert (batch_rows("default"), batch_rows(SECOND)) == (0, 1)
    (m,) = mq.receive(FAR)
    m.complete()
    assert mq.get_batch(b.id, using=SECOND).state == "finished"
    (cb,) = mq.peek(FAR)
    assert cb.properties["batch_id"] == b.id
