"""Settling: each verb, fencing (409 lock_lost), batches, receive-deferred."""

from __future__ import annotations

from typing import Any

import pytest

import django_mqlite as mq

from .conftest import error, url


def claim(q: str) -> mq.Received:
    (m,) = mq.receive(q)
    return m


def settle(api: Any, q: str, seq: int, verb: str, **body: Any) -> Any:
    return api.post(url(f"queues/{q}/messages/{seq}/{verb}/"), body, format="json")


def test_complete(api: Any, q: str) -> None:
    mq.send(q, 1)
    m = claim(q)
    r = settle(api, q, m.seq, "complete", lock_token=m.lock_token)
    assert r.status_code == 204 and r.content == b""
    assert mq.stats(q).counts["locked"] == 0
    # An exact replay succeeds; another token is lock_lost.
    assert settle(api, q, m.seq, "complete", lock_token=m.lock_token).status_code == 204
    error(settle(api, q, m.seq, "complete", lock_token="other"), 409, "lock_lost")


def test_abandon_with_delay(api: Any, q: str) -> None:
    mq.send(q, 1)
    m = claim(q)
    assert settle(api, q, m.seq, "abandon", lock_token=m.lock_token, delay=60).status_code == 204
    assert mq.stats(q).counts["scheduled"] == 1


def test_reject(api: Any, q: str) -> None:
    mq.send(q, 1)
    m = claim(q)
    r = settle(api, q, m.seq, "reject", lock_token=m.lock_token, reason="Bad", description="d")
    assert r.status_code == 204
    (dead,) = mq.peek(q, state="dead_lettered")
    assert (dead.dead_letter_reason, dead.dead_letter_description) == ("Bad", "d")


def test_defer_then_receive_deferred(api: Any, q: str) -> None:
    mq.send(q, "later")
    m = claim(q)
    assert settle(api, q, m.seq, "defer", lock_token=m.lock_token).status_code == 204
    r = api.post(url(f"queues/{q}/receive-deferred/"), {"seqs": [m.seq, 999]}, format="json")
    assert r.status_code == 200
    (got,) = r.json()["messages"]
    assert (got["seq"], got["body"], got["delivery_count"]) == (m.seq, "later", 2)


def test_renew(api: Any, q: str) -> None:
    mq.send(q, 1)
    m = claim(q)
    r = settle(api, q, m.seq, "renew", lock_token=m.lock_token, lock_duration=300)
    assert r.status_code == 200
    assert set(r.json()) == {"locked_until", "cancel_requested"}
    assert r.json()["locked_until"].endswith("Z")
    assert r.json()["cancel_requested"] is False
    assert m.locked_until is not None
    assert mq.peek(q)[0].locked_until > m.locked_until  # type: ignore[operator]


@pytest.mark.parametrize("verb", ["complete", "abandon", "defer", "renew"])
def test_stale_token_is_lock_lost(api: Any, q: str, verb: str) -> None:
    mq.send(q, 1)
    m = claim(q)
    error(settle(api, q, m.seq, verb, lock_token="nope"), 409, "lock_lost")


@pytest.mark.parametrize(
    ("verb", "body"),
    [
        ("complete", {}),
        ("complete", {"lock_token": 5}),
        ("complete", {"lock_token": "t", "x": 1}),
        ("abandon", {"lock_token": "t", "delay": "soon"}),
        ("reject", {"lock_token": "t"}),
        ("reject", {"lock_token": "t", "reason": ""}),
        ("renew", {"lock_token": "t", "lock_duration": -1}),
    ],
)
def test_invalid_settle(api: Any, q: str, verb: str, body: Any) -> None:
    mq.send(q, 1)
    m = claim(q)
    error(settle(api, q, m.seq, verb, **body), 400, "invalid_argument")
    assert mq.stats(q).counts["locked"] == 1


def test_seq_out_of_range_and_unknown_queue(api: Any, q: str) -> None:
    error(settle(api, q, 0, "complete", lock_token="t"), 400, "invalid_argument")
    error(settle(api, q, 2**64, "complete", lock_token="t"), 400, "invalid_argument")
    error(settle(api, "nope", 1, "complete", lock_token="t"), 404, "not_found")


def test_unknown_verb_is_json_404(api: Any, q: str) -> None:
    error(settle(api, q, 1, "explode", lock_token="t"), 404, "not_found")


def test_complete_batch(api: Any, q: str) -> None:
    mq.send_batch(q, [mq.OutMessage(i) for i in range(2)])
    a, b = mq.receive(q, max_messages=2)
    items = [{"seq": a.seq, "lock_token": a.lock_token}, {"seq": b.seq, "lock_token": "stale"}]
    r = api.post(url(f"queues/{q}/complete/"), {"items": items}, format="json")
    assert r.status_code == 200
    assert r.json() == {"results": [True, False]}


def test_renew_batch(api: Any, q: str) -> None:
    mq.send(q, 1)
    m = claim(q)
    items = [{"seq": m.seq, "lock_token": m.lock_token}]
    r = api.post(url(f"queues/{q}/renew/"), {"items": items, "lock_duration": 90}, format="json")
    assert r.json() == {"results": [True]}


def test_batch_errors(api: Any, q: str) -> None:
    path = url(f"queues/{q}/complete/")
    twice = [{"seq": 1, "lock_token": "a"}, {"seq": 1, "lock_token": "b"}]
    error(api.post(path, {"items": twice}, format="json"), 400, "invalid_argument")
    error(api.post(path, {"items": [{"seq": 1}]}, format="json"), 400, "invalid_argument")
    error(api.post(path, {"items": [[1, "a"]]}, format="json"), 400, "invalid_argument")
    many = [{"seq": i + 1, "lock_token": "t"} for i in range(257)]
    error(api.post(path, {"items": many}, format="json"), 400, "invalid_argument")
    error(
        api.post(
            url(f"queues/{q}/receive-deferred/"), {"seqs": list(range(1, 300))}, format="json"
        ),
        400,
        "invalid_argument",
    )


def test_empty_batches_still_need_the_queue(api: Any, db: Any) -> None:
    for path, body in (
        ("complete/", {"items": []}),
        ("renew/", {"items": []}),
        ("receive-deferred/", {"seqs": []}),
    ):
        error(api.post(url(f"queues/nope/{path}"), body, format="json"), 404, "not_found")
