"""Queues: list, create, read, change, delete."""

from __future__ import annotations

from typing import Any

import django_mqlite as mq

from .conftest import error, url


def test_create_then_list_and_read(api: Any) -> None:
    r = api.post(url("queues/"), {"name": "orders", "max_delivery_count": 3}, format="json")
    assert r.status_code == 201, r.content
    assert r.json()["name"] == "orders"
    assert r.json()["max_delivery_count"] == 3
    assert r.json()["created_at"].endswith("Z")
    assert [q["name"] for q in api.get(url("queues/")).json()["queues"]] == ["orders"]
    got = api.get(url("queues/orders/")).json()
    assert got["ordering"] == "standard"
    assert got["lock_duration"] == 30


def test_create_existing_is_200_when_given_settings_match(api: Any, make_queue: Any) -> None:
    make_queue("orders", max_delivery_count=5, keep_results=60)
    r = api.post(url("queues/"), {"name": "orders", "max_delivery_count": 5}, format="json")
    assert r.status_code == 200, r.content
    # Settings not given are never touched (keep_results stays).
    assert mq.get_queue("orders").keep_results == 60


def test_create_existing_with_other_settings_is_409(api: Any, make_queue: Any) -> None:
    make_queue("orders", max_delivery_count=5)
    r = api.post(url("queues/"), {"name": "orders", "lock_duration": 7}, format="json")
    error(r, 409, "already_exists")
    assert mq.get_queue("orders").lock_duration == 30


def test_patch_changes_only_given_settings(api: Any, make_queue: Any) -> None:
    make_queue("orders", max_delivery_count=5, lock_duration=12)
    r = api.patch(url("queues/orders/"), {"dedup_window": 0}, format="json")
    assert r.status_code == 200, r.content
    q = mq.get_queue("orders")
    assert (q.max_delivery_count, q.lock_duration, q.dedup_window) == (5, 12, 0)


def test_patch_unknown_queue_is_404(api: Any) -> None:
    error(api.patch(url("queues/nope/"), {}, format="json"), 404, "not_found")


def test_get_unknown_queue_is_404(api: Any, db: Any) -> None:
    error(api.get(url("queues/nope/")), 404, "not_found")


def test_invalid_name_is_400(api: Any, db: Any) -> None:
    error(api.post(url("queues/"), {"name": "a b"}, format="json"), 400, "invalid_argument")
    error(api.post(url("queues/"), {"name": 5}, format="json"), 400, "invalid_argument")
    error(api.get(url("queues/a%20b/")), 400, "invalid_argument")


def test_wrong_types_and_unknown_fields_are_400(api: Any, db: Any) -> None:
    for body in (
        {"name": "x", "lock_duration": "30"},
        {"name": "x", "content_dedup": 1},
        {"name": "x", "max_delivery_count": 0},
        {"name": "x", "ordering": "random"},
        {"name": "x", "colour": "blue"},
        {"name": "x", "lock_duration": 0},
    ):
        error(api.post(url("queues/"), body, format="json"), 400, "invalid_argument")
    assert mq.list_queues() == []


def test_delete(api: Any, make_queue: Any) -> None:
    make_queue("orders")
    assert api.delete(url("queues/orders/")).status_code == 204
    assert mq.list_queues() == []
    error(api.delete(url("queues/orders/")), 404, "not_found")


def test_delete_with_live_messages_needs_force(api: Any, make_queue: Any) -> None:
    make_queue("orders")
    mq.send("orders", "x")
    error(api.delete(url("queues/orders/")), 409, "queue_not_empty")
    assert mq.get_queue("orders")
    assert api.delete(url("queues/orders/") + "?force=true").status_code == 204
    assert mq.list_queues() == []
