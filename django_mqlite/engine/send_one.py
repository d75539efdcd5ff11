"""The common send in one statement: a single message with no ``message_id`` and no
``group_id``, to a queue whose ordering is ``standard`` and that does not deduplicate by
content. Everything else (and any queue this statement does not match, including one
that does not exist) takes the general path in ``send``, which gives the same answer.

PostgreSQL: one statement resolves the queue, inserts the row, bumps the lifetime
counter and (once per transaction) NOTIFYs, with no savepoint: a single statement is
atomic on its own, and inside the caller's transaction it commits or rolls back with it.
It is a prepared statement on a direct connection (``prepared``). SQLite cannot modify
data in a CTE, so there the queue is resolved inside the INSERT and the counter is
bumped by the table's trigger (migration 0008) within the same statement.

Wake-ups: a successful send registers a ``Wake`` callback for its queue with
``transaction.on_commit``. While one is pending in the transaction, the NOTIFY it came
with is pending too (a rolled-back savepoint drops both), so a later send to that queue
in the same transaction issues no NOTIFY of its own.
"""

from __future__ import annotations

from typing import Any

from django.db import connections, transaction

from . import databases, events, prepared, wakeup
from .dialects import Dialect, dialect_for
from .prepare import Row
from .types import TOTAL_NAMES


class Wake:
    """An on-commit callback: wake this process's waiters on ``queue`` (and on
    ``others``: a publish registers one callback for every queue it reached)."""

    def __init__(self, queue: str, *others: str) -> None:
        self.queue = queue
        self.others = frozenset(others)

    def __call__(self) -> None:
        wakeup.notify(self.queue)
        for queue in sorted(self.others):
            wakeup.notify(queue)


class Counted:
    """An on-commit no-op saying that this transaction wrote ``queue``'s totals row with
    a send, so PostgreSQL holds an unfired ``mqlite_count_deferred`` event for it: later
    sends to the queue may leave their count to that event (``deferred``). Django drops
    the marker with a rolled-back savepoint, as PostgreSQL drops the event; once the
    events have fired early (``flush_deferred_counts``) it is ``fired``."""

    def __init__(self, queue: str) -> None:
        self.queue = queue
        self.deferred = False
        self.fired = False

    def __call__(self) -> None:
        pass


def _pending(alias: str, kind: type[Any], queue: str) -> Any:
    conn = connections[alias]
    if not conn.in_atomic_block:
        return None
    for entry in conn.run_on_commit:
        found = entry[1]
        if (
            isinstance(found, kind)
            and (found.queue == queue or queue in getattr(found, "others", ()))
            and not getattr(found, "fired", False)
        ):
            return found
    return None


def wake_pending(alias: str, queue: str) -> bool:
    """Whether this transaction already has a wake-up (and its NOTIFY) for ``queue``."""
    return _pending(alias, Wake, queue) is not None


def flush_deferred_counts(alias: str) -> None:
    """Add the counts that sends in this transaction left for commit to the totals now
    (PostgreSQL), so a reader of the totals inside the transaction sees its own sends.
    Nothing to do outside a transaction or when no count waits."""
    conn = connections[alias]
    if not dialect_for(alias).defers_counts or not conn.in_atomic_block:
        return
    marks = [
        entry[1]
        for entry in conn.run_on_commit
        if isinstance(entry[1], Counted) and not entry[1].fired
    ]
    if not any(m.deferred for m in marks):
        return
    with conn.cursor() as cursor:
        # Deferred to immediate fires what is queued now; then deferred again.
        cursor.execute("SET CONSTRAINTS mqlite_count_deferred IMMEDIATE")
        cursor.execute("SET CONSTRAINTS mqlite_count_deferred DEFERRED")
    for m in marks:  # their events have fired: a later send writes the row again
        m.fired = True


def on_commit_wake(alias: str, queue: str, *others: str) -> None:
    transaction.on_commit(Wake(queue, *others), using=alias)


def eligible(row: Row) -> bool:
    """Whether the one-statement path may try this message (the queue is checked by the
    statement itself)."""
    return row.message_id is None and row.group_id is None and row.unique_key is None


_OTHER_TOTALS = [n for n in TOTAL_NAMES if n != "enqueued"]

# The queue, when the fast path applies to it: standard ordering, no content dedup.
_QUEUE_WHERE = "name = %s AND ordering = 'standard' AND (dedup_window_ms = 0 OR content_dedup = %s)"
_QUEUE = f"SELECT id, default_ttl_ms FROM mqlite_queue WHERE {_QUEUE_WHERE}"
#: The columns a one-statement send or a publish writes: first those ``values`` gives
#: (after ``queue_id``), then ``subject`` and ``properties`` (bound by a send, read from
#: the published message by a publish), then the ones they leave at their defaults.
COLUMNS = (
    "queue_id, state, priority, visible_at, expires_at, enqueued_at, body, correlation_id, "
    "reply_to, content_type, subject, properties, message_id, group_id, order_key, "
    "blocked, delivery_count"
)
_TOTALS = (
    f"INSERT INTO mqlite_totals (queue_id, shard, enqueued, {', '.join(_OTHER_TOTALS)}) "
    "SELECT queue_id, {shard}, {count}, " + ", ".join("0" for _ in _OTHER_TOTALS) + " FROM {src} "
    "ON CONFLICT (queue_id, shard) DO UPDATE SET "
    "enqueued = mqlite_totals.enqueued + excluded.enqueued"
)


def values(row: Row, now: int) -> list[Any]:
    """The parameters of ``row``'s columns from ``state`` to ``content_type`` (``COLUMNS``),
    as a send or a publish at ``now`` writes them: ``expires_at`` takes two, the message's
    own and the start of the queue's default TTL."""
    return [
        "scheduled" if row.visible_at > now else "active",
        row.priority,
        row.visible_at,
        row.expires_at,
        row.visible_at,
        now,
        row.body,
        row.correlation_id,
        row.reply_to,
        row.content_type,
    ]


def grouped_totals_sql(dialect: Dialect, src: str) -> str:
    """An upsert adding to each queue's ``enqueued`` total the rows of ``src`` (a CTE
    of inserted messages with a ``queue_id`` column) that are its, in a writable CTE."""
    totals = _TOTALS.format(shard=dialect.totals_shard_sql(), count="count(*)", src=src)
    # An aggregate with no GROUP BY yields one row even for no insert: skip it then.
    return totals.replace(f" FROM {src} ", f" FROM {src} GROUP BY queue_id ")


# -- name: send_one (PostgreSQL) ---------------------------------------------------------
# The PostgreSQL statements, built once: "notify", "plain" and "deferred" (below).
_postgres: dict[str, str] = {}


def _postgres_sql(dialect: Dialect, notify: bool) -> str:
    key = "notify" if notify else "plain"
    sql = _postgres.get(key)
    if sql is None:
        sql = _postgres[key] = _build_postgres_sql(dialect, notify)
    return sql


def _build_postgres_sql(dialect: Dialect, notify: bool) -> str:
    select = (
        "SELECT q.id, CAST(%s AS varchar), CAST(%s AS smallint), CAST(%s AS bigint), "
        "COALESCE(CAST(%s AS bigint), CAST(%s AS bigint) + q.default_ttl_ms), "
        "CAST(%s AS bigint), CAST(%s AS bytea), CAST(%s AS varchar), CAST(%s AS varchar), "
        "CAST(%s AS varchar), CAST(%s AS varchar), CAST(%s AS jsonb), "
        "NULL, NULL, NULL, 0, 0 FROM q"
    )
    totals = grouped_totals_sql(dialect, "m")
    tail = ", pg_notify('mqlite', %s)" if notify else ""
    return (
        f"WITH q AS ({_QUEUE}), "
        f"m AS (INSERT INTO mqlite_message ({COLUMNS}) {select} RETURNING seq, queue_id), "
        f"t AS ({totals}) "
        f"SELECT seq{tail} FROM m"
    )


# -- name: send_one_deferred (PostgreSQL) ------------------------------------------------
# A later send to a queue in a transaction that has written the queue's totals already:
# the count goes to a transaction-local setting, which the deferred trigger of
# migration 0008 adds to the totals row once, at commit.
_PENDING = "'mqlite.enqueued_' || queue_id"
_DEFERRED_TAIL = (
    f"set_config({_PENDING}, "
    f"(COALESCE(NULLIF(current_setting({_PENDING}, true), ''), '0')::bigint + 1)::text, true)"
)


def _deferred_sql(dialect: Dialect) -> str:
    sql = _postgres.get("deferred")
    if sql is None:
        head, _, _ = _postgres_sql(dialect, False).partition(", t AS (")
        sql = _postgres["deferred"] = f"{head} SELECT seq, {_DEFERRED_TAIL} FROM m"
    return sql


# -- name: send_one_insert (SQLite) -----------------------------------------------------
# The queue's ``enqueued`` total is added by the trigger of migration 0008, inside this
# statement.
_INSERT_FROM = (
    f"INSERT INTO mqlite_message ({COLUMNS}) "
    "SELECT q.id, %s, %s, %s, COALESCE(%s, %s + q.default_ttl_ms), %s, %s, %s, %s, %s, %s, "
    "%s, NULL, NULL, NULL, 0, 0 FROM "
)
_SQLITE_INSERT = f"{_INSERT_FROM}({_QUEUE}) AS q RETURNING seq"
#: MariaDB's (``Dialect.acknowledges_insert_id``): the same, its seq the insert id, and
#: the queue read by the INSERT's own SELECT rather than through a derived table (15-35
#: us less server CPU a send, measured on MariaDB 10.11).
_ONE_INSERT = f"{_INSERT_FROM}mqlite_queue q WHERE {_QUEUE_WHERE}"


def try_send(alias: str, queue: str, row: Row, now: int) -> int | None:
    """Send ``row`` in one statement; its seq, or None when the general path must run
    (the queue is missing, ordered, deduplicating by content, ...)."""
    cursor, dialect = databases.ctx(alias)
    notify = dialect.has_listen_notify and not wake_pending(alias, queue)
    counted: Counted | None = _pending(alias, Counted, queue) if dialect.defers_counts else None
    params: list[Any] = [queue, False]  # the queue's name; content_dedup must be off
    columns = [*values(row, now), row.subject, row.properties]
    if counted is not None:
        prepared.execute(
            cursor, alias, "send_deferred", _deferred_sql(dialect), [*params, *columns]
        )
        got = cursor.fetchone()
        seq = None if got is None else int(got[0])
        if seq is not None:
            counted.deferred = True
        return seq
    if dialect.writable_cte:
        sql = _postgres_sql(dialect, notify)
        label = "send_notify" if notify else "send"
        tail = [queue] if notify else []
        prepared.execute(cursor, alias, label, sql, [*params, *columns, *tail])
        got = cursor.fetchone()
        seq = None if got is None else int(got[0])
    elif dialect.acknowledges_insert_id:
        cursor.execute(_ONE_INSERT, [*columns, *params])
        seq = int(cursor.lastrowid) if cursor.rowcount == 1 else None
    else:
        cursor.execute(_SQLITE_INSERT, [*columns, *params])
        got = cursor.fetchone()
        seq = None if got is None else int(got[0])
    if seq is not None and dialect.defers_counts and connections[alias].in_atomic_block:
        transaction.on_commit(Counted(queue), using=alias)
    if seq is not None and not wake_pending(alias, queue):
        on_commit_wake(alias, queue)
    if seq is not None and events.listening(events.message_sent):
        events.sent(alias, queue, [seq])
    return seq
