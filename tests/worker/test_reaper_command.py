"""``manage.py runreaper``: ``--once`` prints the pass counts as JSON; a long-running
reaper process stops cleanly on SIGTERM."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

import django_mqlite as mq
from tests.support.procs import wait_for

pytestmark = pytest.mark.django_db


def test_once_prints_counts(q: str, clock: Any) -> None:
    mq.send(q, "a")
    mq.receive(q, lock_duration=5)
    clock.advance(5)
    out = StringIO()
    call_command("runreaper", "--once", stdout=out)
    counts = json.loads(out.getvalue())
    assert counts["expired_locks"] == 1 and counts["stale_worker_locks"] == 0
    assert set(counts) >= {"promoted", "ttl_expired", "workers_pruned", "dlq_trimmed"}


def test_bad_interval() -> None:
    with pytest.raises(CommandError, match="--interval must be a positive"):
        call_command("runreaper", "--interval", "0")
    with pytest.raises(CommandError, match="invalid float value"):
        call_command("runreaper", "--interval", "often")


@pytest.mark.django_db(transaction=True)
def test_reaper_process_reaps_and_stops_on_sigterm(workers: Any) -> None:
    mq.create_queue("work")
    mq.send("work", "a")
    mq.receive("work", lock_duration=0.2)
    proc = workers.start("--interval", "0.1", command="runreaper")
    wait_for(lambda: mq.peek("work")[0].state == "active")
    code, out, err = workers.stop(proc)
    assert code == 0, err
    assert '"expired_locks": 1' in out
