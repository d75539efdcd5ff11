"""HTTP receive and receive-deferred know their byte budget before anything is claimed:
the engine claims only the messages that fit, so the rest are never locked, loaded or
rendered (item 10 of the one-core review: 256 x 1 MiB claimed, then trimmed to 8 MiB)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

import django_mqlite as mq
from django_mqlite.api import bodies

from .conftest import url

pytestmark = pytest.mark.django_db

BODY = b"x" * 100_000


@pytest.fixture
def small_budget() -> Iterator[None]:
    with override_settings(MQLITE={"API_MAX_RESPONSE_BYTES": 300_000}):
        yield


@pytest.fixture
def rendered(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The seqs the API rendered."""
    seen: list[int] = []
    real = bodies.received

    def spy(m: mq.Received) -> Any:
        seen.append(m.seq)
        return real(m)

    monkeypatch.setattr(bodies, "received", spy)
    return seen


def test_receive_claims_only_what_fits(
    api: Any, q: str, small_budget: None, rendered: list[int]
) -> None:
    seqs = mq.send_batch(q, [mq.OutMessage(BODY) for _ in range(10)])
    r = api.post(url(f"queues/{q}/receive/"), {"max_messages": 10}, format="json")
    got = [m["seq"] for m in r.json()["messages"]]
    assert r.json()["truncated"] is True and got == seqs[: len(got)] and 1 <= len(got) < 10
    assert rendered == got  # nothing claimed, loaded or rendered beyond what is returned
    assert mq.stats(q).totals["delivered"] == len(got)
    assert {p.state for p in mq.peek(q) if p.seq not in got} == {"active"}


def test_receive_and_delete_and_attempts_claim_by_bytes_too(
    api: Any, q: str, small_budget: None
) -> None:
    mq.send_batch(q, [mq.OutMessage(BODY) for _ in range(6)])
    for extra in ({"mode": "receive_and_delete"}, {"attempt_id": "a1"}):
        r = api.post(url(f"queues/{q}/receive/"), {"max_messages": 3, **extra}, format="json")
        assert len(r.json()["messages"]) == 2  # 225 kB of stored bytes: two of 101 kB
        assert len(r.content) <= 300_000


def test_receive_deferred_claims_only_what_fits(
    api: Any, q: str, small_budget: None, rendered: list[int]
) -> None:
    mq.send_batch(q, [mq.OutMessage(BODY) for _ in range(5)])
    for m in mq.receive(q, max_messages=5):
        m.defer()
    seqs = [p.seq for p in mq.peek(q, state="deferred")]
    r = api.post(url(f"queues/{q}/receive-deferred/"), {"seqs": seqs}, format="json")
    got = [m["seq"] for m in r.json()["messages"]]
    assert got == seqs[:2] and r.json()["truncated"] is True
    assert rendered == got


def test_small_messages_fill_the_whole_count(api: Any, q: str, rendered: list[int]) -> None:
    mq.send_batch(q, [mq.OutMessage(b"s") for _ in range(256)])
    r = api.post(url(f"queues/{q}/receive/"), {"max_messages": 256}, format="json")
    assert len(r.json()["messages"]) == 256 and "truncated" not in r.json()


def test_attempt_ids_stay_private_to_the_user(api: Any, nobody: Any, q: str) -> None:
    from django.contrib.auth.models import User

    from .conftest import grant

    other = grant(User.objects.get(username="mallory"))
    nobody.force_authenticate(other)
    mq.send_batch(q, [mq.OutMessage(b"a"), mq.OutMessage(b"b")])
    mine = api.post(url(f"queues/{q}/receive/"), {"attempt_id": "same"}, format="json")
    theirs = nobody.post(url(f"queues/{q}/receive/"), {"attempt_id": "same"}, format="json")
    (m,), (t,) = mine.json()["messages"], theirs.json()["messages"]
    assert m["seq"] != t["seq"] and m["lock_token"] != t["lock_token"]
    # and an id from Python without a scope is a namespace of its own
    assert mq.receive(q, attempt_id="same") == []
