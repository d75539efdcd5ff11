"""The snooze route: the engine's snooze verb on the wire, its bad input a 400 with a
stable code, a stale token a 409."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq

from .conftest import error, url

pytestmark = pytest.mark.django_db


def snooze(api: Any, q: str, seq: int, **body: Any) -> Any:
    return api.post(url(f"queues/{q}/messages/{seq}/snooze/"), body, format="json")


def test_snooze_gives_the_delivery_back(api: Any, make_queue: Any) -> None:
    mq.create_queue("s", max_delivery_count=1, max_snoozes=1)
    mq.send("s", 1)
    (m,) = mq.receive("s")
    r = snooze(api, "s", m.seq, lock_token=m.lock_token, delay=0)
    assert (r.status_code, r.json()) == (200, {"outcome": "snoozed"})
    # An exact replay answers; another delay is lock_lost.
    r = snooze(api, "s", m.seq, lock_token=m.lock_token, delay=0)
    assert (r.status_code, r.json()) == (200, {"outcome": "replayed"})
    error(snooze(api, "s", m.seq, lock_token=m.lock_token, delay=1), 409, "lock_lost")
    (again,) = mq.receive("s")
    assert again.delivery_count == 1
    # Past max_snoozes: an ordinary abandon, here on the last allowed delivery.
    r = snooze(api, "s", again.seq, lock_token=again.lock_token, delay=5)
    assert (r.status_code, r.json()) == (200, {"outcome": "dead_lettered"})


@pytest.mark.parametrize(
    "body",
    [{}, {"delay": -1}, {"delay": "NaN"}, {"delay": 10**12}, {"delay": None}, {"delay": "5"}],
    ids=["missing", "negative", "nan", "too-long", "null", "string"],
)
def test_bad_delays_are_400(api: Any, q: str, body: dict[str, Any]) -> None:
    mq.send(q, 1)
    (m,) = mq.receive(q)
    error(snooze(api, q, m.seq, lock_token=m.lock_token, **body), 400, "invalid_argument")
    assert mq.peek(q)[0].state == "locked"


def test_a_snooze_past_the_ttl_is_400_and_changes_nothing(api: Any, q: str) -> None:
    mq.send(q, 1, ttl=30)
    (m,) = mq.receive(q)
    r = snooze(api, q, m.seq, lock_token=m.lock_token, delay=30)
    error(r, 400, "invalid_argument")
    assert "expires" in r.json()["message"]
    (p,) = mq.peek(q)
    assert (p.state, p.delivery_count) == ("locked", 1)


def test_stale_token_is_409(api: Any, q: str) -> None:
    mq.send(q, 1)
    (m,) = mq.receive(q)
    error(snooze(api, q, m.seq, lock_token="nope", delay=0), 409, "lock_lost")


def test_max_snoozes_is_a_queue_setting(api: Any, make_queue: Any) -> None:
    r = api.post(url("queues/"), {"name": "s", "max_snoozes": 3}, format="json")
    assert r.status_code == 201 and r.json()["max_snoozes"] == 3
    r = api.patch(url("queues/s/"), {"max_snoozes": 0}, format="json")
    assert r.status_code == 200 and r.json()["max_snoozes"] == 0
    for bad in (-1, 100_001, 1.5, "x"):
        error(
            api.patch(url("queues/s/"), {"max_snoozes": bad}, format="json"),
            400,
            "invalid_argument",
        )
