"""Plumbing shared by the engine's verbs: connections, queue lookup, argument checks,
lifetime counters and the ordered-line bookkeeping.

The rule every transition follows, written down once:

    A transition is one guarded SQL statement. Its WHERE clause states everything that
    must hold for the transition to be legal (state, lock token, live lease, ...), so
    the database applies it atomically or not at all. Zero rows affected is an answer,
    not an error to retry: a settlement that matched nothing consults the receipt table
    (an exact replay of a settlement that already committed succeeds) and otherwise
    raises ``LockLostError``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.backends.utils import CursorWrapper

from ..conf import mqlite_settings
from ..exceptions import InvalidArgumentError, QueueNotFoundError
from .clock import from_ms
from .cursor import cursor_for
from .dialects import Dialect, dialect_for
from .types import TOTAL_NAMES, Ordering, Queue

LIVE_SQL = "('active', 'locked', 'deferred', 'scheduled')"
QUEUE_NAME_RE = re.compile(r"[A-Za-z0-9._-]{1,80}")
#: The longest lease a claim or renewal may ask for (as SQS allows): a longer one would
#: hide a message from every consumer for that long after its holder died.
MAX_LOCK_MS = 12 * 3600 * 1000
#: The furthest ahead a message may be scheduled, and the longest duration accepted.
MAX_DURATION_S = 10 * 365 * 86400
MAX_RECEIVE = 256
MAX_PEEK = 1000
MAX_WAIT_S = 20.0
MAX_KEY_LEN = 128
PRIORITY_RANGE = (-32768, 32767)

MESSAGE_COLUMNS = (
    "seq, body, message_id, group_id, subject, properties, correlation_id, reply_to, "
    "content_type, priority, delivery_count, enqueued_at, lock_token, locked_until"
)


def message_fields(queue: str, row: Sequence[Any], dialect: Dialect) -> dict[str, Any]:
    """The fields every message value shares, from the first 12 of ``MESSAGE_COLUMNS``."""
    (seq, body, message_id, group_id, subject, props, corr, reply_to, ctype, priority,
     delivery_count, enqueued_at) = row[:12]  # fmt: skip
    return {
        "queue": queue,
        "seq": seq,
        "body": bytes(body),
        "message_id": message_id,
        "group_id": group_id,
        "subject": subject,
        "properties": dialect.load_json(props) or {},
        "correlation_id": corr,
        "reply_to": reply_to,
        "content_type": ctype,
        "priority": priority,
        "delivery_count": delivery_count,
        "enqueued_at": from_ms(enqueued_at),
    }


def declared_database(queue: str) -> str | None:
    """The database alias ``MQLITE["QUEUES"]`` declares for ``queue``, if it names one."""
    declared = mqlite_settings.QUEUES
    options = declared.get(queue) if isinstance(declared, dict) else None
    alias = options.get("database") if isinstance(options, dict) else None
    return alias if isinstance(alias, str) and alias else None


def alias_of(using: str | None, queue: str | None = None) -> str:
    """The database a call runs on: the one ``queue`` is declared on, else ``using``,
    else ``MQLITE["DATABASE"]``. The one place this is decided.

    An explicit ``using`` that names another database than the queue's declared one is
    refused: the call would act on a queue of the same name somewhere else.
    """
    if queue is not None:
        declared = declared_database(queue)
        if declared is not None:
            if using is not None and using != declared:
                raise InvalidArgumentError(
                    f"queue {queue!r} lives on database {declared!r} "
                    f'(MQLITE["QUEUES"]), not {using!r}'
                )
            return declared
    return using or mqlite_settings.DATABASE


def database_of(queue: str, *, using: str | None = None) -> str:
    """The database alias every call for ``queue`` uses (``mq.database_of``): open
    ``transaction.atomic(using=mq.database_of(queue))`` around a send to make it part
    of that database's transaction."""
    return alias_of(using, check_queue_name(queue))


def queue_databases() -> list[str]:
    """Every database that holds queues: ``MQLITE["DATABASE"]`` first, then each alias
    a declared queue names (in declaration order). Listing calls without ``using=``
    (``list_queues``, ``stats()``, ``reap``) cover all of them."""
    aliases = [mqlite_settings.DATABASE]
    declared = mqlite_settings.QUEUES
    for name in declared if isinstance(declared, dict) else ():
        alias = declared_database(name)
        if alias is not None and alias not in aliases:
            aliases.append(alias)
    return aliases


def listed_on(using: str | None) -> list[tuple[str, Callable[[str], bool]]]:
    """For a listing call: each database to read, with a filter on queue names. With
    ``using``, that database and all its queues; without, every queue database and on
    each only the queues a call without ``using`` reaches there."""
    if using:
        return [(using, lambda name: True)]
    return [
        (alias, lambda name, alias=alias: alias_of(None, name) == alias)  # type: ignore[misc]
        for alias in queue_databases()
    ]


@dataclass(frozen=True)
class QueueRow:
    """A queue as the engine uses it: its id and settings in milliseconds."""

    id: int
    name: str
    ordering: str
    lock_duration_ms: int
    max_delivery_count: int
    default_ttl_ms: int | None
    dead_letter_on_expire: bool
    dedup_window_ms: int
    content_dedup: bool
    dlq_max_age_ms: int | None
    dlq_max_count: int | None
    dlq_max_bytes: int | None
    keep_results_ms: int | None
    created_at: int
    forward_dead_letters_to: str | None
    paused: bool
    rate_limit_milli: int | None
    max_in_flight: int | None

    @property
    def limited(self) -> bool:
        """Claims from this queue must count against a rate or in-flight limit."""
        return self.rate_limit_milli is not None or self.max_in_flight is not None

    def public(self) -> Queue:
        return Queue(
            name=self.name,
            ordering=Ordering(self.ordering),
            lock_duration=self.lock_duration_ms / 1000,
            max_delivery_count=self.max_delivery_count,
            default_ttl=_s(self.default_ttl_ms),
            dead_letter_on_expire=bool(self.dead_letter_on_expire),
            dedup_window=self.dedup_window_ms / 1000,
            content_dedup=bool(self.content_dedup),
            dlq_max_age=_s(self.dlq_max_age_ms),
            dlq_max_count=self.dlq_max_count,
            dlq_max_bytes=self.dlq_max_bytes,
            keep_results=_s(self.keep_results_ms),
            created_at=from_ms(self.created_at),
            forward_dead_letters_to=self.forward_dead_letters_to,
            paused=bool(self.paused),
            rate_limit=None if self.rate_limit_milli is None else self.rate_limit_milli / 1000,
            max_in_flight=self.max_in_flight,
        )


QUEUE_COLUMNS = ", ".join(QueueRow.__dataclass_fields__)


def _s(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def load_queue(cursor: CursorWrapper, name: str) -> QueueRow:
    check_queue_name(name)
    cursor.execute(f"SELECT {QUEUE_COLUMNS} FROM mqlite_queue WHERE name = %s", [name])
    row = cursor.fetchone()
    if row is None:
        raise QueueNotFoundError(f"queue {name!r} does not exist")
    return QueueRow(*row)


# -- argument checks -------------------------------------------------------------------


def check_queue_name(name: object) -> str:
    # fullmatch: "$" would let a trailing newline through, and nothing is trimmed.
    if not isinstance(name, str) or not QUEUE_NAME_RE.fullmatch(name):
        raise InvalidArgumentError(
            f"invalid queue name {name!r}: 1-80 characters of letters, digits, '.', '_', '-'"
        )
    return name


def duration_ms(value: object, what: str, *, allow_zero: bool = True) -> int:
    """Seconds (int/float) or a timedelta, as whole milliseconds."""
    if isinstance(value, dt.timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise InvalidArgumentError(f"{what} must be seconds or a timedelta, not {value!r}")
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        raise InvalidArgumentError(f"{what} must be {'> 0' if not allow_zero else '>= 0'}")
    if seconds > MAX_DURATION_S:
        raise InvalidArgumentError(f"{what} is too long (at most ten years)")
    return round(seconds * 1000)


def lock_ms(value: object, what: str = "lock_duration") -> int:
    """A lease length: more than zero and at most ``MAX_LOCK_MS`` (12 hours)."""
    ms = duration_ms(value, what, allow_zero=False)
    if ms > MAX_LOCK_MS:
        raise InvalidArgumentError(f"{what} is too long (at most {MAX_LOCK_MS // 1000} seconds)")
    return ms


def optional_lock_ms(value: object) -> int | None:
    return None if value is None else lock_ms(value)


def optional_duration_ms(value: object, what: str) -> int | None:
    return None if value is None else duration_ms(value, what, allow_zero=False)


def check_int(value: object, what: str, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise InvalidArgumentError(f"{what} must be an integer in [{lo}, {hi}], not {value!r}")
    return value


def check_worker_id(value: object) -> None:
    """A ``worker_id`` is None or a worker row's id (a positive 64-bit integer)."""
    if value is not None:
        check_int(value, "worker_id", 1, 2**63 - 1)


def check_str(value: object, what: str, max_len: int = MAX_KEY_LEN) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > max_len:
        raise InvalidArgumentError(f"{what} must be a non-empty string of at most {max_len}")
    return value


def check_seq(value: object) -> int:
    return check_int(value, "seq", 1, 2**63 - 1)


def check_token(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > 64:
        raise InvalidArgumentError("lock_token must be a non-empty string")
    return value


# -- lifetime counters -----------------------------------------------------------------

_totals_sql: dict[tuple[str, tuple[str, ...]], str] = {}


def bump_totals(cursor: CursorWrapper, dialect: Dialect, queue_id: int, **counts: int) -> None:
    """Add to a queue's lifetime counters in the current transaction."""
    counts = {k: v for k, v in counts.items() if v}
    if not counts:
        return
    names = tuple(sorted(counts))
    key = (dialect.vendor, names)
    sql = _totals_sql.get(key)
    if sql is None:
        assert set(names) <= set(TOTAL_NAMES)
        cols = ", ".join(names)
        params = ", ".join(["%s"] * len(names))
        sets = ", ".join(f"{n} = mqlite_totals.{n} + excluded.{n}" for n in names)
        defaults = ", ".join(f"{n}" for n in TOTAL_NAMES if n not in names)
        zero = ", ".join("0" for n in TOTAL_NAMES if n not in names)
        sql = (
            f"INSERT INTO mqlite_totals (queue_id, shard, {cols}"
            f"{', ' + defaults if defaults else ''}) "
            f"VALUES (%s, {dialect.totals_shard_sql()}, {params}{', ' + zero if zero else ''}) "
            f"ON CONFLICT (queue_id, shard) DO UPDATE SET {sets}"
        )
        _totals_sql[key] = sql
    cursor.execute(sql, [queue_id, *(counts[n] for n in names)])


def touch_worker(cursor: CursorWrapper, worker_id: int, now: int) -> None:
    """A claim or a renewal is proof of life: stamp the worker's heartbeat in the same
    transaction (never moving it back). Otherwise a worker that resumes after a pause
    longer than WORKER_STALE_AFTER (SIGSTOP, a VM freeze, a long wait for SQLite's write
    lock) and claims or renews before its heartbeat thread writes would have those fresh
    leases reclaimed as a dead worker's, and handed to another worker while it still
    runs them under a live lease."""
    cursor.execute(
        "UPDATE mqlite_worker SET last_seen = %s WHERE id = %s AND last_seen < %s",
        [now, worker_id, now],
    )


# -- ordered lines ---------------------------------------------------------------------


def order_key_for(queue: QueueRow, group_id: str | None) -> str | None:
    """The line a new message waits in: its group, the whole queue, or none."""
    if queue.ordering == Ordering.STRICT_FIFO:
        return ""
    return group_id


def lock_lines(cursor: CursorWrapper, dialect: Dialect, queue_id: int, keys: Iterable[str]) -> None:
    """Serialize writers of the same lines (sorted, so two writers never deadlock).

    On databases with concurrent writers, "is there an earlier live message?" (asked by
    a send) and "who is the line's next message?" (asked when a head leaves) must not run
    side by side, or each could miss the other's uncommitted row and leave a line with
    no claimable head. Where writes are serialized anyway this is a no-op.
    """
    sql = dialect.lock_group_sql()
    if sql is None:
        return
    for key in sorted(set(keys)):
        cursor.execute(sql, [f"mqlite:{queue_id}:{key}"])


# Unblock a line's earliest live message, unless the line already has an unblocked one.
# Idempotent: safe to run for any line after any change to it. ``blocked = 1`` (not a
# bare ``blocked``) so both lookups are equality seeks on mqlite_msg_line.
def release_sql(dialect: Dialect) -> str:
    line = f"FROM mqlite_message {dialect.index_hint('mqlite_msg_line')}"
    return (
        "UPDATE mqlite_message SET blocked = 0 WHERE seq = ("
        f" SELECT seq {line}"
        f" WHERE queue_id = %s AND order_key = %s AND state IN {LIVE_SQL} AND blocked = 1"
        " ORDER BY seq LIMIT 1"
        ") AND NOT EXISTS ("
        f" SELECT 1 {line}"
        f" WHERE queue_id = %s AND order_key = %s AND state IN {LIVE_SQL} AND blocked = 0"
        ")"
    )


def release_lines(
    cursor: CursorWrapper, dialect: Dialect, queue_id: int, keys: Iterable[str | None]
) -> None:
    """After a line changed (a message left it, or rejoined it blocked), make sure its
    earliest live message is claimable."""
    todo = sorted({k for k in keys if k is not None})
    if not todo:
        return
    lock_lines(cursor, dialect, queue_id, todo)
    for key in todo:
        cursor.execute(release_sql(dialect), [queue_id, key, queue_id, key])


def release_by_queue(
    cursor: CursorWrapper, dialect: Dialect, pairs: Iterable[tuple[int, str | None]]
) -> None:
    by_queue: dict[int, set[str]] = {}
    for queue_id, key in pairs:
        if key is not None:
            by_queue.setdefault(queue_id, set()).add(key)
    for queue_id, keys in by_queue.items():
        release_lines(cursor, dialect, queue_id, keys)


def placeholders(n: int) -> str:
    return ", ".join(["%s"] * n)


def dumps(value: Any) -> str:
    """Canonical JSON; NaN and infinities raise ValueError (no column or client takes
    them back)."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, allow_nan=False)


def dumps_arg(value: Any, what: str) -> str | None:
    """``dumps`` of a caller's value (None stays None): a value JSON cannot hold, or
    cannot hold canonically (dict keys of mixed types), is an InvalidArgumentError."""
    if value is None:
        return None
    try:
        return dumps(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArgumentError(f"{what} is not JSON: {exc}") from None


def chunks(seq: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


def ctx(alias: str) -> tuple[CursorWrapper, Dialect]:
    return cursor_for(alias), dialect_for(alias)
