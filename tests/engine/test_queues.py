"""Queues: create (idempotent), update, get, list, delete, declared queues."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import override_settings

import django_mqlite as mq

pytestmark = pytest.mark.django_db


def test_create_returns_settings_with_spec_defaults() -> None:
    q = mq.create_queue("orders")
    assert q.name == "orders"
    assert q.ordering == mq.Ordering.STANDARD
    assert q.lock_duration == 30
    assert q.max_delivery_count == 10
    assert q.default_ttl is None
    assert q.dead_letter_on_expire is True
    assert q.dedup_window == 600
    assert q.content_dedup is False
    assert q.keep_results is None
    assert q.created_at.tzinfo is not None


def test_create_is_idempotent_and_never_touches_settings_not_given() -> None:
    first = mq.create_queue("orders", lock_duration=dt.timedelta(minutes=2), keep_results=60)
    assert mq.create_queue("orders", lock_duration=120) == first
    assert mq.create_queue("orders") == first
    assert [q.name for q in mq.list_queues()] == ["orders"]


def test_create_with_other_settings_raises_queue_exists() -> None:
    mq.create_queue("orders", keep_results=60)
    with pytest.raises(mq.QueueExistsError) as exc:
        mq.create_queue("orders", max_delivery_count=3, keep_results=60)
    assert exc.value.code == "already_exists"
    assert "max_delivery_count" in exc.value.message
    assert mq.get_queue("orders").max_delivery_count == 10


def test_update_queue_changes_only_given_settings() -> None:
    mq.create_queue("orders", keep_results=60)
    changed = mq.update_queue("orders", max_delivery_count=3, default_ttl=60)
    assert (changed.max_delivery_count, changed.default_ttl, changed.keep_results) == (3, 60, 60)
    with pytest.raises(mq.QueueNotFoundError):
        mq.update_queue("nope", max_delivery_count=3)
    with pytest.raises(mq.InvalidArgumentError):
        mq.update_queue("orders", colour="blue")


@pytest.mark.parametrize(
    "name", ["", "a" * 81, "has space", "slash/", "ünïcode", 7, None, "semi;colon"]
)
def test_bad_queue_names_are_refused(name: object) -> None:
    with pytest.raises(mq.InvalidArgumentError) as exc:
        mq.create_queue(name)  # type: ignore[arg-type]
    assert exc.value.code == "invalid_argument"
    assert mq.list_queues() == []


def test_longest_and_punctuated_names_are_fine() -> None:
    for name in ("a" * 80, "a.b_c-d", "0"):
        assert mq.create_queue(name).name == name


@pytest.mark.parametrize(
    "options",
    [
        {"ordering": "lifo"},
        {"lock_duration": 0},
        {"lock_duration": -1},
        {"lock_duration": "30"},
        {"max_delivery_count": 0},
        {"max_delivery_count": True},
        {"default_ttl": 0},
        {"dedup_window": -5},
        {"content_dedup": "yes"},
        {"dead_letter_on_expire": 1},
        {"dlq_max_count": 1.5},
        {"dlq_max_age": float("nan")},
        {"keep_results": -1},
        {"colour": "blue"},
    ],
)
def test_bad_queue_options_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        mq.create_queue("orders", **options)
    assert mq.list_queues() == []


def test_get_unknown_queue_is_not_found() -> None:
    with pytest.raises(mq.QueueNotFoundError) as exc:
        mq.get_queue("nope")
    assert exc.value.code == "not_found"


def test_send_to_unknown_queue_is_not_found() -> None:
    with pytest.raises(mq.QueueNotFoundError):
        mq.send("nope", b"x")


def test_delete_refuses_live_messages_unless_forced() -> None:
    mq.create_queue("orders")
    mq.send("orders", b"x")
    with pytest.raises(mq.QueueNotEmptyError):
        mq.delete_queue("orders")
    assert mq.get_queue("orders")
    mq.delete_queue("orders", force=True)
    with pytest.raises(mq.QueueNotFoundError):
        mq.get_queue("orders")
    with connection.cursor() as c:
        c.execute("SELECT count(*) FROM mqlite_message")
        assert c.fetchone()[0] == 0


def test_delete_keeps_dead_letters_and_results_unless_forced() -> None:
    mq.create_queue("a")
    mq.delete_queue("a")
    mq.create_queue("b")
    mq.send("b", b"x")
    (m,) = mq.receive("b")
    m.reject("bad")
    with pytest.raises(mq.QueueNotEmptyError):
        mq.delete_queue("b")
    assert mq.stats("b").counts["dead_lettered"] == 1
    mq.create_queue("c", keep_results=60)
    mq.send("c", b"x")
    (m,) = mq.receive("c")
    m.complete()
    with pytest.raises(mq.QueueNotEmptyError):
        mq.delete_queue("c")
    mq.delete_queue("b", force=True)
    mq.delete_queue("c", force=True)
    assert mq.list_queues() == []


def test_ordering_cannot_change_while_messages_are_live() -> None:
    mq.create_queue("orders")
    mq.send("orders", b"x", group_id="g")
    with pytest.raises(mq.InvalidArgumentError):
        mq.update_queue("orders", ordering="strict_fifo")
    (m,) = mq.receive("orders")
    m.complete()
    assert mq.update_queue("orders", ordering="strict_fifo").ordering == "strict_fifo"


@pytest.mark.django_db(transaction=True)
def test_declared_queues_are_synced_on_migrate() -> None:
    declared = {"QUEUES": {"mail": {"max_delivery_count": 2}, "audit": {}}}
    with override_settings(MQLITE=declared):
        call_command("migrate", verbosity=0)
        assert mq.get_queue("mail").max_delivery_count == 2
        assert mq.get_queue("audit").max_delivery_count == 10
