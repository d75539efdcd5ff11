"""Topics on several databases: a topic lives on one, and a subscription of a queue
declared on another is refused (one publish is one statement in one transaction)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command

import django_mqlite as mq
from tests.settings import SECOND

from .conftest import BOTH, FAR, NEAR, rows

pytestmark = [pytest.mark.django_db(databases=BOTH), pytest.mark.usefixtures("declared")]


def test_a_queue_on_another_database_cannot_subscribe() -> None:
    mq.create_topic("t")
    with pytest.raises(mq.CrossDatabaseError):
        mq.subscribe("t", FAR)
    assert mq.get_topic("t").subscriptions == []
    mq.subscribe("t", NEAR)
    assert mq.publish("t", "x") == 1
    assert (rows("default", NEAR), rows(SECOND, FAR)) == (1, 0)


def test_a_topic_declared_on_the_second_database_reaches_its_queues(settings: Any) -> None:
    settings.MQLITE = {
        **settings.MQLITE,
        "TOPICS": {"far.events": {"database": SECOND, "subscriptions": {FAR: None}}},
    }
    for alias in BOTH:
        call_command("migrate", database=alias, verbosity=0)
    assert mq.list_topics() == []  # not on the default database
    assert [s.queue for s in mq.get_topic("far.events").subscriptions] == [FAR]
    assert mq.publish("far.events", "x") == 1
    assert rows(SECOND, FAR) == 1
    with pytest.raises(mq.CrossDatabaseError):
        mq.subscribe("far.events", NEAR)
    with pytest.raises(mq.InvalidArgumentError):
        mq.publish("far.events", "x", using="default")
