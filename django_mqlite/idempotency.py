"""``mq.once(key)``: run a side effect once per key, recorded in the work's transaction."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import IntegrityError, connections, transaction

from .engine import core
from .engine.clock import now_ms
from .exceptions import InvalidArgumentError


@contextmanager
def once(key: str, *, using: str | None = None) -> Iterator[bool]:
    """Yield True the first time ``key`` is seen, False after that.

    Use inside ``transaction.atomic()``: the key is recorded in the same transaction as
    the work, so if the work rolls back the key is free again. Two workers racing on one
    key: the second blocks until the first commits or rolls back, then sees the outcome;
    exactly one gets True.
    """
    if not isinstance(key, str) or not key or len(key) > 255:
        raise InvalidArgumentError("key must be a non-empty string of at most 255 characters")
    alias = core.alias_of(using)
    if not connections[alias].in_atomic_block:
        raise InvalidArgumentError("mq.once() must run inside transaction.atomic()")
    cursor = connections[alias].cursor()
    try:
        with transaction.atomic(using=alias):
            cursor.execute(
                "INSERT INTO mqlite_processed_key (key, processed_at) VALUES (%s, %s) "
                "ON CONFLICT (key) DO NOTHING RETURNING id",
                [key, now_ms()],
            )
            first = cursor.fetchone() is not None
    except IntegrityError:  # pragma: no cover - ON CONFLICT covers the race
        first = False
    yield first
