"""Queue management: create (idempotent), update settings, get, list, delete."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from typing import Any

from django.db import transaction

from ..conf import current
from ..exceptions import InvalidArgumentError, QueueExistsError, QueueNotEmptyError
from . import arguments, batches, databases, fanout, limits, lines, tally
from .clock import now_ms
from .rows import QUEUE_COLUMNS, QueueRow, load_queue
from .types import Ordering, Queue

#: The most ``max_snoozes`` a queue may set.
MAX_SNOOZES = 100_000

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
    "forward_dead_letters_to",
    "rate_limit",
    "max_in_flight",
    "max_snoozes",
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
    return arguments.check_int(value, what, -(2**62), 2**62)


_DEFAULTS: dict[str, Any] = {
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
    "forward_dead_letters_to": None,
    "rate_limit": None,
    "max_in_flight": None,
    "max_snoozes": 100,
}


def _ordering(value: object) -> str:
    try:
        return Ordering(value).value  # type: ignore[arg-type]  # checked by the enum
    except ValueError:
        raise InvalidArgumentError(
            "ordering must be one of standard, group_fifo, strict_fifo"
        ) from None


def _forward_target(value: object) -> str | None:
    if value is None:
        return None
    try:
        return arguments.check_queue_name(value)
    except InvalidArgumentError:
        raise InvalidArgumentError(
            f"forward_dead_letters_to must be a queue name or None, not {value!r}"
        ) from None


def _check_forward(cursor: Any, name: str, cols: Mapping[str, Any]) -> None:
    """A dead-letter forward target must be another queue that exists."""
    target = cols.get("forward_dead_letters_to")
    if target is not None:
        if target == name:
            raise InvalidArgumentError("a queue cannot forward its dead letters to itself")
        load_queue(cursor, target)


# Each option: its column and the check that turns a value into the column's value.
_COLUMN: dict[str, tuple[str, Any]] = {
    "ordering": ("ordering", _ordering),
    "lock_duration": ("lock_duration_ms", lambda v: arguments.lock_ms(v, "lock_duration")),
    "max_delivery_count": (
        "max_delivery_count",
        lambda v: arguments.check_int(v, "max_delivery_count", 1, 10_000),
    ),
    "default_ttl": ("default_ttl_ms", lambda v: arguments.optional_duration_ms(v, "default_ttl")),
    "dead_letter_on_expire": (
        "dead_letter_on_expire",
        lambda v: _bool(v, "dead_letter_on_expire"),
    ),
    "dedup_window": ("dedup_window_ms", lambda v: arguments.duration_ms(v, "dedup_window")),
    "content_dedup": ("content_dedup", lambda v: _bool(v, "content_dedup")),
    "dlq_max_age": ("dlq_max_age_ms", lambda v: _signed_ms(v, "dlq_max_age")),
    "dlq_max_count": ("dlq_max_count", lambda v: _signed_int(v, "dlq_max_count")),
    "dlq_max_bytes": ("dlq_max_bytes", lambda v: _signed_int(v, "dlq_max_bytes")),
    "keep_results": (
        "keep_results_ms",
        lambda v: arguments.optional_duration_ms(v, "keep_results"),
    ),
    "forward_dead_letters_to": ("forward_dead_letters_to", _forward_target),
    "rate_limit": ("rate_limit_milli", limits.rate_limit_milli),
    "max_in_flight": ("max_in_flight", limits.max_in_flight),
    "max_snoozes": (
        "max_snoozes",
        lambda v: arguments.check_int(v, "max_snoozes", 0, MAX_SNOOZES),
    ),
}


def _columns(options: Mapping[str, Any]) -> dict[str, Any]:
    """The checked column values of the options given (and only those)."""
    unknown = set(options) - set(QUEUE_OPTIONS)
    if unknown:
        raise InvalidArgumentError(f"unknown queue option(s): {', '.join(sorted(unknown))}")
    out = {}
    for option, value in options.items():
        column, check = _COLUMN[option]
        out[column] = check(value)
    return out


def create_queue(name: str, *, using: str | None = None, **options: Any) -> Queue:
    """Create a queue; on an existing one, return it when every option given matches
    its setting, else raise ``QueueExistsError``. Options not given are never touched
    (``update_queue`` changes settings)."""
    arguments.check_queue_name(name)
    given = _columns(options)
    cols = {**_columns(_DEFAULTS), **given}
    alias = databases.alias_of(using, name)
    cursor, _ = databases.ctx(alias)
    with transaction.atomic(using=alias):
        _check_forward(cursor, name, given)
        names = ", ".join(cols)
        cursor.execute(
            f"INSERT INTO mqlite_queue (name, {names}, created_at) "
            f"VALUES (%s, {batches.placeholders(len(cols))}, %s) ON CONFLICT (name) DO NOTHING",
            [name, *cols.values(), now_ms()],
        )
        created = cursor.rowcount == 1
        current = load_queue(cursor, name)
    if not created:
        differ = sorted(
            option
            for option, (column, _check) in _COLUMN.items()
            if column in given and getattr(current, column) != given[column]
        )
        if differ:
            raise QueueExistsError(
                f"queue {name!r} exists with other settings ({', '.join(differ)}); "
                "use update_queue to change them"
            )
    return current.public()


def update_queue(name: str, *, using: str | None = None, **options: Any) -> Queue:
    """Change the settings given; the others keep their values.

    Changing ``ordering`` is refused while the queue holds live messages: their lines
    were laid out under the old ordering.
    """
    cols = _columns(options)
    alias = databases.alias_of(using, name)
    cursor, _ = databases.ctx(alias)
    with transaction.atomic(using=alias):
        current = load_queue(cursor, name)
        if not cols:
            return current.public()
        _check_forward(cursor, name, cols)
        if {"ordering", "dedup_window_ms", "content_dedup"} & set(cols):
            # Its topics' publishers re-plan. Their rows are locked before the queue's,
            # in a publish's order (topic, then the queue its copies' key checks): the
            # other order deadlocks with a publish on MariaDB. And the live count below
            # then sees what publishes that held a topic wrote.
            fanout.changed_queue(cursor, current.id)
        if cols.get("ordering", current.ordering) != current.ordering and _live_count(
            cursor, current.id
        ):
            raise InvalidArgumentError(
                f"queue {name!r} holds live messages; its ordering cannot change now"
            )
        sets = ", ".join(f"{c} = %s" for c in cols)
        cursor.execute(
            f"UPDATE mqlite_queue SET {sets} WHERE id = %s", [*cols.values(), current.id]
        )
        return load_queue(cursor, name).public()


def _live_count(cursor: Any, queue_id: int, *, any_state: bool = False) -> int:
    states = "" if any_state else f"AND state IN {lines.LIVE_SQL}"
    cursor.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM mqlite_message WHERE queue_id = %s {states} "
        "LIMIT 1) t",
        [queue_id],
    )
    return int(cursor.fetchone()[0])


def get_queue(name: str, *, using: str | None = None) -> Queue:
    """The queue named ``name``; raises ``QueueNotFoundError`` when there is none."""
    cursor, _ = databases.ctx(databases.alias_of(using, name))
    return load_queue(cursor, name).public()


def list_queues(*, using: str | None = None) -> list[Queue]:
    """Queues by name (without ``using``: those of every queue database)."""
    found: dict[str, Queue] = {}
    for alias, shown in databases.listed_on(using):
        cursor, _ = databases.ctx(alias)
        cursor.execute(f"SELECT {QUEUE_COLUMNS} FROM mqlite_queue ORDER BY name")
        for r in cursor.fetchall():
            row = QueueRow(*r)
            if shown(row.name):
                found[row.name] = row.public()
    return [found[n] for n in sorted(found)]


def delete_queue(name: str, *, force: bool = False, using: str | None = None) -> None:
    """Delete a queue and everything in it. Refuses a queue that holds any message
    (live ones, dead letters, kept results) unless ``force=True``.

    A live child of a batch deleted with it counts as cancelled there (``tally``), in
    this transaction, as a purge's would: the delete may be what finishes the batch.
    Dead children and kept results were counted when they ended."""
    alias = databases.alias_of(using, name)
    cursor, dialect = databases.ctx(alias)
    with transaction.atomic(using=alias):
        q = load_queue(cursor, name)
        if not force and _live_count(cursor, q.id, any_state=True):
            raise QueueNotEmptyError(
                f"queue {name!r} still holds messages (live, dead-lettered or kept "
                "results); pass force=True to delete it"
            )
        fanout.changed_queue(cursor, q.id)
        cursor.execute(
            "DELETE FROM mqlite_message WHERE queue_id = %s AND batch_id IS NOT NULL "
            f"AND state IN {lines.LIVE_SQL} RETURNING batch_id",
            [q.id],
        )
        children = [(batch_id, tally.CANCELLED) for (batch_id,) in cursor.fetchall()]
        tables = (
            "mqlite_message",
            "mqlite_attempt",
            "mqlite_dedup",
            "mqlite_totals",
            "mqlite_topic_totals",
        )
        # Its subscriptions go with it: a queue of the same name made later is not subscribed.
        for table in (*tables, "mqlite_subscription"):
            cursor.execute(f"DELETE FROM {table} WHERE queue_id = %s", [q.id])
        cursor.execute("DELETE FROM mqlite_history WHERE queue_id = %s", [q.id])
        cursor.execute("DELETE FROM mqlite_queue WHERE id = %s", [q.id])
        # Counted once the queue is gone: a callback aimed at it is recorded in its
        # batch's callback_error, not enqueued among the rows just deleted.
        tally.count(cursor, dialect, children)


def sync_declared(declared: Mapping[str, Mapping[str, Any]], *, using: str | None = None) -> int:
    """Create the queues ``MQLITE["QUEUES"]`` declares on database ``using`` (default:
    the queue database) and bring the options each declaration gives to their declared
    values; returns how many."""
    if not isinstance(declared, Mapping):
        raise InvalidArgumentError('MQLITE["QUEUES"] must be a dict of {name: {options}}')
    alias = databases.alias_of(using)
    done = 0
    for name, options in declared.items():
        # Each declared queue is created on its own database only (by default the
        # queue database): ``migrate --database X`` creates the queues that live on X.
        opts = dict(options or {})
        if (opts.pop("database", None) or current().database) != alias:
            continue
        try:
            create_queue(name, using=alias, **opts)
        except QueueExistsError:
            update_queue(name, using=alias, **opts)
        done += 1
    return done
