"""Queue management: create (idempotent, or changes settings), get, list, delete."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from typing import Any

from django.db import transaction

from ..conf import mqlite_settings
from ..exceptions import InvalidArgumentError, QueueNotEmptyError
from . import core
from .clock import now_ms
from .types import Ordering, Queue

#: The options of ``create_queue``, in the order the docs and the admin show them.
QUEUE_OPTIONS = (
    "ordering",
    "lock_duration",
    "max_delivery_count",
    "default_ttl",
    "dead_letter_on_expire",
    "dedup_window",
    "content_dedup",
    "dlq_max_age",
    "dlq_max_count",
    "dlq_max_bytes",
    "keep_results",
)


def _bool(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{what} must be true or false")
    return value


def _signed_ms(value: object, what: str) -> int | None:
    """Retention bounds: None/0 inherit the global default, >0 bounds, <0 unbounded."""
    if value is None:
        return None
    if isinstance(value, dt.timedelta):
        value = value.total_seconds()
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise InvalidArgumentError(f"{what} must be seconds or a timedelta")
    return round(float(value) * 1000)


def _signed_int(value: object, what: str) -> int | None:
    if value is None:
        return None
    return core.check_int(value, what, -(2**62), 2**62)


def _columns(options: Mapping[str, Any]) -> dict[str, Any]:
    unknown = set(options) - set(QUEUE_OPTIONS)
    if unknown:
        raise InvalidArgumentError(f"unknown queue option(s): {', '.join(sorted(unknown))}")
    o = {
        "ordering": "standard",
        "lock_duration": 30,
        "max_delivery_count": 10,
        "default_ttl": None,
        "dead_letter_on_expire": True,
        "dedup_window": 600,
        "content_dedup": False,
        "dlq_max_age": None,
        "dlq_max_count": None,
        "dlq_max_bytes": None,
        "keep_results": None,
        **options,
    }
    try:
        ordering = Ordering(o["ordering"]).value
    except ValueError:
        raise InvalidArgumentError(
            "ordering must be one of standard, group_fifo, strict_fifo"
        ) from None
    return {
        "ordering": ordering,
        "lock_duration_ms": core.duration_ms(o["lock_duration"], "lock_duration", allow_zero=False),
        "max_delivery_count": core.check_int(
            o["max_delivery_count"], "max_delivery_count", 1, 10_000
        ),
        "default_ttl_ms": core.optional_duration_ms(o["default_ttl"], "default_ttl"),
        "dead_letter_on_expire": _bool(o["dead_letter_on_expire"], "dead_letter_on_expire"),
        "dedup_window_ms": core.duration_ms(o["dedup_window"], "dedup_window"),
        "content_dedup": _bool(o["content_dedup"], "content_dedup"),
        "dlq_max_age_ms": _signed_ms(o["dlq_max_age"], "dlq_max_age"),
        "dlq_max_count": _signed_int(o["dlq_max_count"], "dlq_max_count"),
        "dlq_max_bytes": _signed_int(o["dlq_max_bytes"], "dlq_max_bytes"),
        "keep_results_ms": core.optional_duration_ms(o["keep_results"], "keep_results"),
    }


def create_queue(name: str, *, using: str | None = None, **options: Any) -> Queue:
    """Create a queue, or bring an existing one's settings to ``options``.

    Changing ``ordering`` is refused while the queue holds live messages: their lines
    were laid out under the old ordering.
    """
    core.check_queue_name(name)
    cols = _columns(options)
    alias = core.alias_of(using, name)
    cursor, _ = core.ctx(alias)
    with transaction.atomic(using=alias):
        cursor.execute(f"SELECT {core.QUEUE_COLUMNS} FROM mqlite_queue WHERE name = %s", [name])
        row = cursor.fetchone()
        if row is None:
            names = ", ".join(cols)
            cursor.execute(
                f"INSERT INTO mqlite_queue (name, {names}, created_at) "
                f"VALUES (%s, {core.placeholders(len(cols))}, %s)",
                [name, *cols.values(), now_ms()],
            )
        else:
            current = core.QueueRow(*row)
            if current.ordering != cols["ordering"] and _live_count(cursor, current.id):
                raise InvalidArgumentError(
                    f"queue {name!r} holds live messages; its ordering cannot change now"
                )
            sets = ", ".join(f"{c} = %s" for c in cols)
            cursor.execute(
                f"UPDATE mqlite_queue SET {sets} WHERE id = %s", [*cols.values(), current.id]
            )
        return core.load_queue(cursor, name).public()


def _live_count(cursor: Any, queue_id: int) -> int:
    cursor.execute(
        "SELECT count(*) FROM (SELECT 1 FROM mqlite_message WHERE queue_id = %s "
        f"AND state IN {core.LIVE_SQL} LIMIT 1) t",
        [queue_id],
    )
    return int(cursor.fetchone()[0])


def get_queue(name: str, *, using: str | None = None) -> Queue:
    cursor, _ = core.ctx(core.alias_of(using, name))
    return core.load_queue(cursor, name).public()


def list_queues(*, using: str | None = None) -> list[Queue]:
    """Queues by name (without ``using``: those of every queue database)."""
    found: dict[str, Queue] = {}
    for alias, shown in core.listed_on(using):
        cursor, _ = core.ctx(alias)
        cursor.execute(f"SELECT {core.QUEUE_COLUMNS} FROM mqlite_queue ORDER BY name")
        for r in cursor.fetchall():
            row = core.QueueRow(*r)
            if shown(row.name):
                found[row.name] = row.public()
    return [found[n] for n in sorted(found)]


def delete_queue(name: str, *, force: bool = False, using: str | None = None) -> None:
    """Delete a queue and everything in it. Refuses a queue with live messages unless
    ``force=True`` (dead letters and kept results do not count as live)."""
    alias = core.alias_of(using, name)
    cursor, _ = core.ctx(alias)
    with transaction.atomic(using=alias):
        q = core.load_queue(cursor, name)
        if not force and _live_count(cursor, q.id):
            raise QueueNotEmptyError(
                f"queue {name!r} still holds live messages; pass force=True to delete it"
            )
        for table in ("mqlite_message", "mqlite_attempt", "mqlite_dedup", "mqlite_totals"):
            cursor.execute(f"DELETE FROM {table} WHERE queue_id = %s", [q.id])
        cursor.execute("DELETE FROM mqlite_queue WHERE id = %s", [q.id])


def sync_declared(declared: Mapping[str, Mapping[str, Any]], *, using: str | None = None) -> int:
    """Create/update the queues ``MQLITE["QUEUES"]`` declares on database ``using``
    (default: the queue database); returns how many."""
    if not isinstance(declared, Mapping):
        raise InvalidArgumentError('MQLITE["QUEUES"] must be a dict of {name: {options}}')
    alias = core.alias_of(using)
    done = 0
    for name, options in declared.items():
        # Each declared queue is created on its own database only (by default the
        # queue database): ``migrate --database X`` creates the queues that live on X.
        opts = dict(options or {})
        if (opts.pop("database", None) or mqlite_settings.DATABASE) != alias:
            continue
        create_queue(name, using=alias, **opts)
        done += 1
    return done
