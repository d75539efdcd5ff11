"""Load: 50 concurrent HTTP producers send through the API while worker processes drain,
the contention of a real broker; nothing is lost and nothing is completed twice.

Each producer is a thread posting ``POST /mq/queues/drain/messages/`` with a token to the
live server (which serves each request on its own thread and database connection). A
producer retries a failed request with the same ``message_id``; dedup makes the retry
return the original seq.

CI: 50 x 200 messages, 3 workers x 4 threads. ``--long``: 50 x 2,000.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError, connection, connections

import django_mqlite as mq

from .harness import Fleet, check_totals, receipts, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

PRODUCERS = 50
FLEET = {"HEARTBEAT_INTERVAL": 0.5, "WORKER_STALE_AFTER": 5.0, "REAP_INTERVAL": 0.5}


class ServerError(Exception):
    """A 5xx from the API: never acceptable."""


def http_sender(base_url: str, token: str) -> Callable[[int, int], int]:
    url = f"{base_url}/mq/queues/drain/messages/"

    def send(producer: int, i: int) -> int:
        body = json.dumps({"body": {"p": producer, "i": i}, "message_id": f"{producer}-{i}"})
        request = urllib.request.Request(
            url,
            data=body.encode(),
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                assert response.status == 201
                return int(json.loads(response.read())["seq"])
        except urllib.error.HTTPError as exc:
            text = exc.read()[:200]
            if exc.code == 503 and b'"database_busy"' in text:
                # Busy, nothing written: the documented answer to retry (Retry-After).
                raise ConnectionError(f"503: {text!r}") from exc
            raise ServerError(f"{exc.code}: {text!r}") from exc

    return send


def produce(
    send: Callable[[int, int], int],
    producer: int,
    count: int,
    out: dict[str, int],
    errors: list[BaseException],
) -> None:
    try:
        for i in range(count):
            for attempt in range(100):
                try:
                    # A retry after a dropped connection is safe: message_id dedups a send
                    # that did commit before its reply was lost.
                    out[f"{producer}-{i}"] = send(producer, i)
                    break
                except (urllib.error.URLError, ConnectionError, TimeoutError, OperationalError):
                    # TimeoutError: no reply in time (it is not a URLError when the
                    # request was sent); the send may have committed, and the retry's
                    # message_id returns its seq.
                    if attempt == 99:
                        raise
                    time.sleep(0.01 * (attempt + 1))
    except BaseException as exc:
        errors.append(exc)
    finally:
        connections.close_all()


@pytest.mark.timeout(900)
def test_fifty_http_producers_while_workers_drain(
    tmp_path: Path, long_run: bool, live_server: Any, django_user_model: Any
) -> None:
    from rest_framework.authtoken.models import Token

    per = 2_000 if long_run else 100  # 5,000 sends: ~80 s alone, twice that in CI's pool
    total = PRODUCERS * per
    mq.create_queue("drain", lock_duration=10)
    user = django_user_model.objects.create_user("producer", password="x")
    # The API's default permissions: producers need this app's send permission.
    from django.contrib.auth.models import Permission

    user.user_permissions.add(Permission.objects.get(codename="send_queue"))
    send = http_sender(live_server.url, Token.objects.create(user=user).key)
    fleet = Fleet(tmp_path, FLEET)
    sent: dict[str, int] = {}
    errors: list[BaseException] = []
    t0 = time.monotonic()
    try:
        for _ in range(3):
            fleet.start("-q", "drain", "-c", "4")
        threads = [
            threading.Thread(target=produce, args=(send, p, per, sent, errors))
            for p in range(PRODUCERS)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        produced_s = time.monotonic() - t0
        assert not errors, errors[:3]
        wait_until(
            lambda: mq.stats("drain").totals["completed"] >= total,
            total / 50,
            what="drained",
        )
        for proc in fleet.alive():
            assert fleet.terminate(proc) == 0, fleet.output(proc)
    finally:
        fleet.cleanup()
    elapsed = time.monotonic() - t0
    assert len(sent) == total and len(set(sent.values())) == total
    records = fleet.deliveries("drain")
    assert {r["seq"] for r in records} == set(sent.values())
    settled = receipts()
    completes = Counter(
        r["seq"] for r in records for v, _t in settled.get(r["token"], []) if v == "complete"
    )
    assert set(completes.values()) == {1} and len(completes) == total
    t = check_totals("drain")
    assert t["enqueued"] == total and t["completed"] == total, t
    print(
        f"\nload on {connection.vendor}: {PRODUCERS} HTTP producers x {per} = {total} sent in "
        f"{produced_s:.1f}s while draining; all completed after {elapsed:.1f}s; "
        f"{len(records)} deliveries"
    )
