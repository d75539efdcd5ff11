"""Enqueue joins the caller's transaction: a rollback leaves no task behind."""

from __future__ import annotations

import pytest
from django.db import transaction

import django_mqlite as mq
from django_mqlite.tasks.compat import TaskResultDoesNotExist
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)


class BoomError(Exception):
    pass


def test_rollback_leaves_no_task() -> None:
    tasks.add.enqueue(0, 0)  # creates the queue outside the rolled-back transaction
    ids = []
    with pytest.raises(BoomError), transaction.atomic():
        ids.append(tasks.add.enqueue(1, 2).id)
        raise BoomError
    with pytest.raises(TaskResultDoesNotExist):
        tasks.add.get_result(ids[0])
    assert mq.stats("tasks").counts["active"] == 1


def test_commit_makes_it_visible() -> None:
    with transaction.atomic():
        result = tasks.add.enqueue(1, 2)
    assert tasks.add.get_result(result.id).args == [1, 2]
