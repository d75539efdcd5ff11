"""``mq.once(key)``: run a side effect once per key, recorded in the work's transaction;
``mq.prune_once(older_than)``: forget old keys."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.db import IntegrityError, connections, transaction

from ..exceptions import InvalidArgumentError
from . import databases
from .clock import now_ms


@contextmanager
def once(key: str, *, using: str | None = None) -> Iterator[bool]:
    """Yield True the first time ``key`` is seen, False after that.

    Use inside ``transaction.atomic()``: the key is recorded in the same transaction as
    the work, so if the work rolls back the key is free again. Two workers racing on one
    key: the second blocks until the first commits or rolls back, then sees the outcome;
    exactly one gets True.
    """
    if not isinstance(key, str) or not key.strip() or len(key) > 255:
        # A None or blank key would make every message after the first a "duplicate".
        raise InvalidArgumentError(
            f"key must be a non-empty string of at most 255 characters, not {key!r}"
        )
    alias = databases.alias_of(using)
    if not connections[alias].in_atomic_block:
        raise InvalidArgumentError("mq.once() must run inside transaction.atomic()")
    cursor = databases.cursor_for(alias)
    try:
        with transaction.atomic(using=alias):
            cursor.execute(
                'INSERT INTO mqlite_processed_key ("key", processed_at) VALUES (%s, %s) '
                "ON CONFLICT (key) DO NOTHING RETURNING id",
                [key, now_ms()],
            )
            first = cursor.fetchone() is not None
    except IntegrityError:  # pragma: no cover - ON CONFLICT covers the race
        first = False
    yield first


def prune_once(older_than: float | timedelta, *, using: str | None = None) -> int:
    """Delete ``mq.once`` keys recorded more than ``older_than`` ago (seconds or a
    ``timedelta``); returns how many. Keys are never pruned by themselves: keep each one
    longer than its message can still be delivered again (its TTL, or the time a dead
    letter may wait for a redrive), or a late redelivery runs the work a second time."""
    seconds = older_than.total_seconds() if isinstance(older_than, timedelta) else older_than
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:
        raise InvalidArgumentError(f"older_than must be a positive duration, not {older_than!r}")
    alias = databases.alias_of(using)
    with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
        cursor.execute(
            "DELETE FROM mqlite_processed_key WHERE processed_at < %s",
            [now_ms() - int(seconds * 1000)],
        )
        return int(cursor.rowcount)
