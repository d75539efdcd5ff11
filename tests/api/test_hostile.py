"""Hand-written hostile requests against the live server, one or more per hazard of
docs/security.md: every answer is JSON below 500, and afterwards the ledger queue has
lost nothing and leases nothing twice."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

import django_mqlite as mq
from tests.support.invariants import assert_stats_invariants

from .conftest import grant

pytestmark = pytest.mark.django_db(transaction=True)

LEDGER = "ledger"
NAN_JSON = base64.b64encode(b"NaN").decode()
BIG = "x" * 900_000
ENVELOPE = {"task": "tests.workerproject.recorder.tasks.add", "args": [1, 2], "kwargs": {}}

# (who, method, path, body): body is JSON-encodable, or bytes sent as given
# (Content-Type application/json unless the tuple has a fifth item, the content type).
HOSTILE: list[tuple[Any, ...]] = [
    # 1: bodies and numbers that are not standard JSON
    (
        "ops",
        "post",
        "queues/scratch/messages/",
        {"body_base64": NAN_JSON, "content_type": "application/json"},
    ),
    (
        "ops",
        "post",
        "queues/scratch/messages/",
        {"messages": [{"body_base64": NAN_JSON, "content_type": "application/json"}] * 6},
    ),
    ("ops", "post", "queues/scratch/messages/", b'{"body": 1, "properties": {"x": 1e400}}'),
    ("ops", "post", "queues/scratch/messages/", b'{"body": NaN}'),
    ("ops", "post", "queues/scratch/messages/", b'{"body": 1, "priority": Infinity}'),
    ("ops", "get", "queues/scratch/messages/?limit=1000", None),
    ("ops", "post", "queues/scratch/receive/", {"max_messages": 256, "mode": "receive_and_delete"}),
    # 2, 3: create never resets, delete keeps dead letters
    ("ops", "post", "queues/", {"name": LEDGER, "max_delivery_count": 1}),
    ("ops", "post", "queues/", {"name": LEDGER}),
    ("ops", "delete", f"queues/{LEDGER}/", None),
    ("ops", "delete", f"queues/{LEDGER}/?force=maybe", None),
    # 5, 6: nobody gets in by accident
    ("nobody", "post", "queues/", {"name": "mine"}),
    ("nobody", "post", f"queues/{LEDGER}/messages/", {"body": 1}),
    ("nobody", "get", f"queues/{LEDGER}/messages/", None),
    ("nobody", "post", f"queues/{LEDGER}/receive/", {"max_messages": 256}),
    ("nobody", "post", f"queues/{LEDGER}/purge/", {"state": "active"}),
    ("nobody", "delete", f"queues/{LEDGER}/?force=true", None),
    ("nobody", "get", "queues/", None),
    ("nobody", "get", "stats/", None),
    ("nobody", "get", "metrics/", None),
    ("sender", "post", "queues/scratch/redrive/", {"to_queue": LEDGER}),
    ("sender", "post", "queues/", {"name": "sneaky"}),
    ("anonymous", "post", f"queues/{LEDGER}/receive/", {}),
    # 7: task injection
    ("ops", "post", "queues/tasks/messages/", {"body": ENVELOPE}),
    ("ops", "post", "queues/scratch/redrive/", {"to_queue": "tasks"}),
    # 8: attempt ids and receipts
    ("ops", "post", "queues/scratch/receive/", {"attempt_id": "same", "max_messages": 5}),
    ("sender", "post", "queues/scratch/receive/", {"attempt_id": "same"}),
    ("ops", "post", "queues/scratch/messages/1/complete/", {"lock_token": "guess"}),
    # 9: the schema
    ("ops", "get", "schema/", None),
    # 10: big requests
    ("ops", "post", "queues/scratch/messages/", {"messages": [{"body": BIG}] * 4}),
    ("ops", "post", "queues/scratch/messages/", {"messages": [{"body": BIG}] * 19}),
    (
        "ops",
        "post",
        "queues/scratch/messages/",
        b"a=" + b"x" * 3_000_000,
        "application/x-www-form-urlencoded",
    ),
    # 11: bounds
    (
        "ops",
        "post",
        "queues/scratch/messages/",
        {"body": 1, "scheduled_at": "9999-12-31T23:59:59Z", "ttl": 86400},
    ),
    ("ops", "post", f"queues/{LEDGER}/receive/", {"lock_duration": 10 * 365 * 86400}),
    ("ops", "post", "queues/", {"name": "newline\n"}),
    ("ops", "post", "queues/", {"name": "x", "lock_duration": 1e308}),
    ("ops", "post", f"queues/{LEDGER}/receive/", b'{"wait": 1e999}'),
    ("ops", "patch", "queues/scratch/", {"lock_duration": 86400 * 3650}),
    # 12: bounded responses
    ("ops", "get", "queues/big/messages/?limit=1000", None),
    ("ops", "post", "queues/big/receive/", {"max_messages": 256}),
    # one-core review, item 6: nothing validated after a claim (the big queue is
    # untouched by these, checked below)
    ("ops", "post", "queues/big/receive/", {"max_messages": "All"}),
    ("ops", "post", "queues/big/receive/", {"max_messages": [1]}),
    ("ops", "post", "queues/big/receive/", {"mode": "both"}),
    ("ops", "post", "queues/big/receive/", {"attempt_id": 5}),
    ("ops", "post", "queues/big/receive/", {"attempt_id": "x" * 129}),
    ("ops", "post", "queues/big/receive/", {"wait": -1}),
    ("ops", "post", "queues/big/receive/", {"lock_duration": "soon"}),
    ("ops", "post", "queues/big/receive-deferred/", {"seqs": "All"}),
    ("ops", "post", "queues/big/receive-deferred/", {"seqs": [1], "lock_duration": -1}),
    # item 9: attempt ids are the caller's (sender may not receive: refused anyway)
    ("ops", "post", "queues/ledger/receive/", {"attempt_id": "shared", "max_messages": 2}),
    ("consumer", "post", "queues/ledger/receive/", {"attempt_id": "shared", "max_messages": 2}),
    # item 10: 256 x 1 MiB asked for; only what fits is claimed (checked below)
    ("ops", "post", "queues/big/receive/", {"max_messages": 256, "wait": 0}),
    # item 12: metrics and stats for a user without permission
    ("nobody", "get", "stats/", None),
    # 13: a long-poll that finds nothing
    ("ops", "post", "queues/empty/receive/", {"wait": 1}),
    # garbage of every other kind
    ("ops", "post", "queues/scratch/messages/", b"{"),
    ("ops", "post", "queues/scratch/messages/", b"[" * 5000 + b"]" * 5000),
    ("ops", "post", "queues/scratch/messages/", b'{"body": "\\ud800"}'),
    ("ops", "post", "queues/scratch/messages/", {"body": 1, "group_id": "a\x00b"}),
    ("ops", "post", "queues/scratch/messages/", {"body": 10**400}),
    ("ops", "post", "queues/scratch/messages/", b"\xff\xfe"),
    ("ops", "post", f"queues/{LEDGER}/messages/{2**70}/complete/", {"lock_token": "x"}),
    ("ops", "post", f"queues/{LEDGER}/messages/-1/complete/", {"lock_token": "x"}),
    ("ops", "post", f"queues/{LEDGER}/complete/", {"items": [{"seq": 1, "lock_token": 5}]}),
    ("ops", "post", f"queues/{LEDGER}/receive-deferred/", {"seqs": list(range(1, 300))}),
    ("ops", "get", "queues/%0A/", None),
    ("ops", "put", "queues/", {"name": "x"}),
    ("ops", "get", "nope/", None),
]


@pytest.fixture
def server(live_server: Any) -> Iterator[dict[str, dict[str, str]]]:
    def token(user: User) -> dict[str, str]:
        return {"Authorization": f"Token {Token.objects.create(user=user).key}"}

    sender = User.objects.create_user("sender")
    sender.user_permissions.add(*_perms("send_queue"))
    consumer = User.objects.create_user("consumer")
    consumer.user_permissions.add(*_perms("consume_queue"))
    yield {
        "ops": token(grant(User.objects.create_user("ops"))),
        "consumer": token(consumer),
        "nobody": token(User.objects.create_user("nobody")),
        "sender": token(sender),
        "anonymous": {},
        "url": {"base": f"{live_server.url}/mq/"},
    }


def _perms(codename: str) -> Any:
    from django.contrib.auth.models import Permission

    return Permission.objects.filter(content_type__app_label="django_mqlite", codename=codename)


def _seed() -> list[int]:
    for name in ("scratch", "big", "empty", "tasks"):
        mq.create_queue(name)
    for _ in range(12):
        mq.send("big", b"y" * 1_000_000)
    mq.send("scratch", b"z")
    (m,) = mq.receive("scratch")
    m.reject("Seed")
    mq.create_queue(LEDGER, max_delivery_count=5)
    seqs = [mq.send(LEDGER, {"n": n}) for n in range(30)]
    mq.receive(LEDGER, max_messages=3)  # some leased
    (d,) = mq.receive(LEDGER)
    d.reject("Seed")  # one dead letter
    return seqs


def test_hostile_requests_get_4xx_json_and_lose_nothing(server: dict[str, Any]) -> None:
    seqs = _seed()
    base = server["url"]["base"]
    answers = []
    returned: dict[str, list[list[dict[str, Any]]]] = {}
    for who, method, path, body, *ctype in HOSTILE:
        headers = dict(server[who])
        data = body if isinstance(body, bytes) else None if body is None else json.dumps(body)
        if data is not None:
            headers["Content-Type"] = ctype[0] if ctype else "application/json"
        r = requests.request(method, base + path, data=data, headers=headers, timeout=30)
        answers.append((who, method, path, r.status_code))
        if path.startswith(("queues/big/receive", "queues/ledger/receive")) and r.ok:
            returned.setdefault(path.split("/")[1], []).append(r.json()["messages"])
        assert r.status_code < 500, (who, method, path, r.text[:300])
        if path != "metrics/" or r.status_code >= 400:
            assert "json" in r.headers["Content-Type"], (path, r.text[:200])
            r.json()
        assert len(r.content) <= 8 * 1024 * 1024 + 4096, path
    refused = {(w, m, p) for w, m, p, status in answers if status in (401, 403)}
    assert ("nobody", "post", f"queues/{LEDGER}/purge/") in refused
    assert ("ops", "post", "queues/tasks/messages/") in refused
    assert ("sender", "post", "queues/scratch/redrive/") in refused
    assert ("nobody", "get", "metrics/") in refused
    # Item 6: no bad receive claimed anything; item 10: nothing claimed beyond what a
    # response carried (1 MiB bodies, 256 asked for twice, 8 MiB a response).
    big = [m for batch in returned.get("big", []) for m in batch]
    assert len(returned["big"]) == 2 and all(1 <= len(b) <= 7 for b in returned["big"])
    assert mq.stats("big").totals["delivered"] == len(big)
    assert mq.stats("big").counts["locked"] == len(big)
    # Item 9: the consumer's "shared" attempt is its own, not ops' batch.
    ops_batch, consumer_batch = returned["ledger"][-2:]
    assert {m["seq"] for m in ops_batch}.isdisjoint({m["seq"] for m in consumer_batch})
    assert_stats_invariants()
    # The ledger: every message is still there, in one state, and drains exactly once.
    assert sorted(p.seq for p in mq.peek(LEDGER, limit=1000)) == seqs
    assert mq.get_queue(LEDGER).max_delivery_count == 5
    with mq.clock.frozen() as clock:
        clock.advance(13 * 3600)
        mq.reap()
        mq.redrive(LEDGER)
        drained: list[int] = []
        while got := mq.receive(LEDGER, max_messages=256):
            drained += [m.seq for m in got]
            mq.complete_batch(LEDGER, [(m.seq, m.lock_token or "") for m in got])
    assert sorted(drained) == seqs
    assert mq.stats("tasks").totals["enqueued"] == 0
    assert {q.name for q in mq.list_queues()} >= {LEDGER, "scratch", "big", "empty", "tasks"}
    assert not {"mine", "sneaky", "x"} & {q.name for q in mq.list_queues()}
