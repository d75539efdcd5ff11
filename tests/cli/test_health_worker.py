"""``manage.py mqlite health --worker``: one pod's probe judges its own worker, not
every worker in the database."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from django.core.management.base import CommandError

import django_mqlite as mq
from django_mqlite.engine.clock import now_ms
from django_mqlite.models import Worker
from tests.support.cli_helpers import mqlite, mqlite_json
from tests.support.procs import wait_for


def row(host: str, pid: int, *, age_s: float = 0, stopped: bool = False) -> Worker:
    seen = now_ms() - int(age_s * 1000)
    return Worker.objects.create(
        host=host,
        pid=pid,
        queues=[],
        started_at=seen,
        last_seen=seen,
        stopped_at=seen if stopped else None,
    )


@pytest.mark.django_db
def test_self_fails_when_only_other_hosts_are_alive(q: str) -> None:
    row("elsewhere", 1)
    assert mqlite("health").strip().endswith("healthy")  # the fleet is fine...
    with pytest.raises(CommandError, match="no worker matches 'self'"):
        mqlite("health", "--worker", "self")  # ...but this host runs none


@pytest.mark.django_db
def test_self_follows_this_hosts_heartbeat(q: str) -> None:
    here = socket.gethostname()
    row("elsewhere", 1)
    dead = row(here, 2, age_s=60)
    with pytest.raises(CommandError, match="is not alive") as info:
        mqlite("health", "--worker", "self")
    assert info.value.returncode == 1
    row(here, 3, stopped=True)
    with pytest.raises(CommandError, match="is not alive"):
        mqlite("health", "--worker", "self")
    row(here, 4)  # restarted by its supervisor
    data = mqlite_json("health", "--worker", "self")
    assert data["healthy"] and data["self"]["alive"] == 1
    with pytest.raises(CommandError, match="is not alive"):
        mqlite("health", "--worker", f"{here}:{dead.pid}")  # exactly that process
    assert mqlite_json("health", "--worker", f"{here}:4")["healthy"]
    with pytest.raises(CommandError, match="is not alive"):
        mqlite("health", "--worker", str(dead.pk))


@pytest.mark.django_db
@pytest.mark.parametrize("spec", ["", "me", "host:", ":12", "host:x"])
def test_bad_worker_spec_is_a_command_error(q: str, spec: str) -> None:
    row("elsewhere", 1)
    with pytest.raises(CommandError, match="--worker takes"):
        mqlite("health", "--worker", spec) if spec else mqlite("health", "--worker=")


@pytest.mark.django_db(transaction=True)
def test_a_killed_worker_fails_its_own_probe(workers: Any, clock: Any) -> None:
    mq.create_queue("work")
    mq.create_queue("slow")
    proc = workers.start()
    spec = f"{socket.gethostname()}:{proc.pid}"
    wait_for(lambda: Worker.objects.filter(pid=proc.pid).exists(), what="worker registered")
    Worker.objects.filter(pid=proc.pid).update(last_seen=clock.now_ms())
    assert mqlite_json("health", "--worker", spec)["healthy"]
    proc.kill()
    proc.communicate()
    # Its last heartbeat wrote the real time, which a slow start can put ahead of the
    # frozen clock: pin it to the frozen now, then step past WORKER_STALE_AFTER (the
    # dead process writes no more).
    Worker.objects.filter(pid=proc.pid).update(last_seen=clock.now_ms())
    clock.advance(20)
    with pytest.raises(CommandError, match="is not alive"):
        mqlite("health", "--worker", spec, "--min-workers", "0")
