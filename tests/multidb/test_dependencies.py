"""Dependencies on several databases: a message waits only for messages and batches of
its own database; a dependency on another database's queue or batch is
``CrossDatabaseError`` with nothing written, and dependencies work on the second
database as on the first."""

from __future__ import annotations

import pytest

import django_mqlite as mq
from tests.settings import SECOND

from .conftest import BOTH, FAR, NEAR, rows

pytestmark = [pytest.mark.django_db(databases=BOTH), pytest.mark.usefixtures("declared")]


def test_a_dependency_on_another_databases_queue_or_batch_is_refused() -> None:
    far = mq.send(FAR, "far")
    with mq.batch(using=SECOND) as b:
        b.send(FAR, "child")
    with pytest.raises(mq.CrossDatabaseError):
        mq.send(NEAR, "d", depends_on=[(FAR, far)])
    with pytest.raises(mq.CrossDatabaseError):
        mq.send(NEAR, "d", depends_on=[b])
    assert rows("default", NEAR) == 0


def test_dependencies_on_the_second_database() -> None:
    a = mq.send(FAR, "a")
    d = mq.send(FAR, "d", depends_on=[(FAR, a)])
    (m,) = mq.receive(FAR)
    assert m.seq == a
    m.complete()
    (got,) = mq.receive(FAR)
    assert got.seq == d
