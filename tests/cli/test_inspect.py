"""``manage.py mqlite`` subcommands that look: queues, stats, peek, health."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.management.base import CommandError

import django_mqlite as mq
from django_mqlite.models import Worker
from tests.support.cli_helpers import mqlite, mqlite_json

pytestmark = pytest.mark.django_db


def test_queues_table_and_json(q: str) -> None:
    assert "no queues" not in mqlite("queues")
    mq.send(q, "a")
    out = mqlite("queues").splitlines()
    assert out[0].split()[:5] == ["queue", "ordering", "lock", "max_dlv", "active"]
    assert out[2].split()[:5] == [q, "standard", "30s", "10", "1"]
    [data] = mqlite_json("queues")
    assert data["name"] == q and data["counts"]["active"] == 1


def test_queues_when_there_are_none() -> None:
    assert "no queues" in mqlite("queues")
    assert mqlite_json("queues") == []


def test_stats_one_all_and_watch(q: str) -> None:
    mq.send(q, "a")
    data = mqlite_json("stats", q)
    assert data[q]["counts"]["active"] == 1 and data[q]["totals"]["enqueued"] == 1
    assert q in mqlite_json("stats")
    out = mqlite("stats", "--watch", "--interval", "0.01", "--iterations", "2")
    assert out.count("oldest") == 2 and q in out


def test_stats_bad_input() -> None:
    with pytest.raises(CommandError, match="does not exist"):
        mqlite("stats", "nope")
    with pytest.raises(CommandError, match="positive number"):
        mqlite("stats", "--watch", "--interval", "0")


def test_peek(q: str) -> None:
    seqs = mq.send_batch(q, [mq.OutMessage(f"m{i}") for i in range(3)])
    mq.receive(q)
    out = mqlite("peek", q)
    assert "locked" in out and "m2" in out
    data = mqlite_json("peek", q, "--state", "active", "--limit", "1")
    assert [m["seq"] for m in data] == [seqs[1]] and data[0]["body"] == "m1"
    assert "no messages" in mqlite("peek", q, "--state", "dead_lettered")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["peek", "nope"], "does not exist"),
        (["peek", "work", "--state", "lost"], "invalid choice"),
        (["peek", "work", "--limit", "0"], "limit must be"),
        (["peek", "work", "--limit", "ten"], "invalid int value"),
    ],
)
def test_peek_bad_input(q: str, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        mqlite(*args)


def live_worker() -> None:
    now = mq.clock.now_ms()
    Worker.objects.create(host="h", pid=1, queues=[], started_at=now, last_seen=now)


def test_health_fails_without_workers(q: str) -> None:
    with pytest.raises(CommandError, match="0 live worker") as info:
        mqlite("health")
    assert info.value.returncode == 1
    assert "healthy" in mqlite("health", "--min-workers", "0")


def test_health_ok_and_json(q: str) -> None:
    live_worker()
    assert mqlite("health").strip().endswith("healthy")
    data = mqlite_json("health")
    assert data["healthy"] and data["database"] and data["workers"] == 1


def test_health_oldest_message_too_old(q: str, clock: Any) -> None:
    live_worker()
    mq.send(q, "stuck")
    clock.advance(120)
    Worker.objects.update(last_seen=clock.now_ms())
    with pytest.raises(CommandError, match=re.escape("oldest active message is 120.0s old")):
        mqlite("health", "--max-age", "60")
    mqlite("health", "--max-age", "600")


def test_health_database_unreachable(q: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import connection

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("connection refused")

    monkeypatch.setattr(connection, "cursor", broken)
    with pytest.raises(CommandError, match="unreachable: connection refused"):
        mqlite("health")
