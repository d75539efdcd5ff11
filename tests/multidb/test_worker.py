"""One real ``runworker`` process serves queues on two databases: a claim loop per
database, so a backlog on one never holds up the other."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.models import Worker
from tests.settings import SECOND
from tests.support.procs import wait_for

from .conftest import BOTH

pytestmark = pytest.mark.django_db(databases=BOTH, transaction=True)

# The worker test project's consumers: "work" stays on the default database, "slow" is
# declared on the second one.
ROUTES = {"QUEUES": {"work": {}, "slow": {"database": SECOND}}}


@pytest.fixture
def routed(settings: Any) -> None:
    settings.MQLITE = {**settings.MQLITE, **ROUTES}
    mq.create_queue("work")
    mq.create_queue("slow")
    assert mq.database_of("slow") == SECOND


@pytest.mark.usefixtures("routed")
def test_one_worker_drains_queues_on_two_databases_fairly(workers: Any) -> None:
    backlog = mq.send_batch("work", [mq.OutMessage({"sleep": 0.05}) for _ in range(60)])
    far = mq.send_batch("slow", [mq.OutMessage({"n": n}) for n in range(5)])
    proc = workers.start("--burst", "--queue", "work", "--queue", "slow", overrides=ROUTES)
    code, _out, err = workers.finish(proc, timeout=60)
    assert code == 0, err
    done = workers.events("done")
    assert sorted(e["seq"] for e in done if e["queue"] == "work") == sorted(backlog)
    assert sorted(e["seq"] for e in done if e["queue"] == "slow") == sorted(far)
    assert len({e["pid"] for e in done}) == 1  # one process
    # Fair: the second database's messages did not wait for the first one's backlog.
    last_far = max(e["t"] for e in done if e["queue"] == "slow")
    last_near = max(e["t"] for e in done if e["queue"] == "work")
    assert last_far < last_near
    for alias, queue in (("default", "work"), (SECOND, "slow")):
        assert mq.stats(queue).totals["completed"] == len(backlog if queue == "work" else far)
        assert Worker.objects.using(alias).filter(queues=[queue]).count() == 1


@pytest.mark.usefixtures("routed")
def test_sigterm_stops_every_database_loop(workers: Any) -> None:
    proc = workers.start("--queue", "work", "--queue", "slow", overrides=ROUTES)
    seqs = [mq.send("work", {"n": 1}), mq.send("slow", {"n": 2})]
    wait_for(lambda: len(workers.events("done")) == 2, what="both messages handled")
    assert sorted(e["seq"] for e in workers.events("done")) == sorted(seqs)
    code, _out, err = workers.stop(proc)
    assert code == 0, err
    for alias in BOTH:
        assert not Worker.objects.using(alias).filter(stopped_at=None).exists()


def test_database_option_serves_only_the_queues_there(settings: Any, workers: Any) -> None:
    settings.MQLITE = {**settings.MQLITE, **ROUTES}
    mq.create_queue("work")
    mq.create_queue("slow")
    mq.send("work", {"n": 1})
    far = mq.send("slow", {"n": 2})
    proc = workers.start("--burst", "--database", SECOND, overrides=ROUTES)
    code, _out, err = workers.finish(proc)
    assert code == 0, err
    assert [e["seq"] for e in workers.events("done")] == [far]
    assert mq.stats("work").counts["active"] == 1


def test_database_option_contradicting_a_declared_queue_is_refused(settings: Any) -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    settings.MQLITE = {**settings.MQLITE, "QUEUES": {"tasks-other": {"database": SECOND}}}
    with pytest.raises(CommandError, match="lives on database"):
        call_command("runworker", "-q", "tasks-other", "--database", "default", "--burst", "-v0")
