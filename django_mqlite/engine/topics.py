"""Topics: one publish, a copy in every subscribed queue whose filter matches.

A publish runs in the caller's transaction (the outbox, for fan-out): a rollback leaves
no copy anywhere, a commit makes every copy claimable at once. Each copy is an ordinary
message of its queue, built by ``admission.admit`` like any send, so the queue's rules,
dedup, ordered lines, counters and wake-ups apply unchanged.

The common case (no ``message_id`` or ``group_id``; queues of ``standard`` ordering
without content dedup, the same test as the one-statement send) is **one** ``INSERT …
SELECT`` over the topic's subscriptions, each subscription's filter compiled to SQL in
its ``WHERE`` (``filters``). On PostgreSQL the statement also adds to each reached
queue's ``enqueued`` total and NOTIFYs it (a writable CTE); on SQLite the counter
trigger does the counting. Any other subscribed queue takes the general send for its
copy, in the same transaction.

Never half a fan-out: a publish first locks its topic row shared (PostgreSQL ``FOR KEY
SHARE``; SQLite serializes writers anyway) and reads the subscriptions; subscribing and
unsubscribing lock it exclusively. So the set of subscriptions a publish sees cannot
change until it commits: it is ordered entirely before or after every subscription
change. Topics live on one database (``using``, the one ``MQLITE["TOPICS"]`` names, or
``MQLITE["DATABASE"]``); a subscription of a queue on another database is refused with
``CrossDatabaseError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

from django.db import connections, transaction
from django.db.backends.utils import CursorWrapper

from ..conf import mqlite_settings
from ..exceptions import (
    CrossDatabaseError,
    InvalidArgumentError,
    TopicExistsError,
    TopicNotFoundError,
)
from . import core, events, filters, send, send_one, tracing
from .admission import admit
from .clock import from_ms, now_ms
from .dialects import Dialect
from .prepare import Row
from .types import Ordering, OutMessage, Subscription, Topic


def _declared(topic: str) -> Mapping[str, Any]:
    declared = mqlite_settings.TOPICS
    options = declared.get(topic) if isinstance(declared, Mapping) else None
    return options if isinstance(options, Mapping) else {}


def alias_of(using: str | None, topic: str) -> str:
    """The database of ``topic``: the one ``MQLITE["TOPICS"]`` names, else ``using``,
    else ``MQLITE["DATABASE"]`` (an explicit other ``using`` is refused)."""
    core.check_queue_name(topic)
    declared = _declared(topic).get("database")
    if isinstance(declared, str) and declared:
        if using is not None and using != declared:
            raise InvalidArgumentError(
                f'topic {topic!r} lives on database {declared!r} (MQLITE["TOPICS"]), not {using!r}'
            )
        return declared
    return using or mqlite_settings.DATABASE


def _lock_topic(cursor: CursorWrapper, dialect: Dialect, name: str, *, exclusive: bool) -> int:
    cursor.execute(
        f"SELECT id FROM mqlite_topic WHERE name = %s {dialect.row_lock_sql(exclusive=exclusive)}",
        [name],
    )
    row = cursor.fetchone()
    if row is None:
        raise TopicNotFoundError(f"topic {name!r} does not exist")
    return int(row[0])


def create_topic(name: str, *, using: str | None = None) -> Topic:
    """Create a topic; TopicExistsError if it exists."""
    alias = alias_of(using, name)
    cursor, _ = core.ctx(alias)
    with transaction.atomic(using=alias):
        now = now_ms()
        cursor.execute(
            "INSERT INTO mqlite_topic (name, created_at) VALUES (%s, %s) "
            "ON CONFLICT (name) DO NOTHING RETURNING id",
            [name, now],
        )
        if cursor.fetchone() is None:
            raise TopicExistsError(f"topic {name!r} exists")
    return Topic(name=name, created_at=from_ms(now), subscriptions=[])


def delete_topic(name: str, *, using: str | None = None) -> None:
    """Delete a topic and its subscriptions (the queues and their messages stay)."""
    alias = alias_of(using, name)
    cursor, dialect = core.ctx(alias)
    with transaction.atomic(using=alias):
        topic_id = _lock_topic(cursor, dialect, name, exclusive=True)
        cursor.execute("DELETE FROM mqlite_subscription WHERE topic_id = %s", [topic_id])
        cursor.execute("DELETE FROM mqlite_topic WHERE id = %s", [topic_id])


def subscribe(
    topic: str, queue: str, filter: Any = None, *, using: str | None = None
) -> Subscription:
    """Subscribe ``queue`` to ``topic`` with ``filter`` (None: every message), or
    replace the filter of its subscription. A malformed filter, an unknown topic or
    queue, or a queue on another database: a typed error, nothing written."""
    checked = filters.validate(filter)
    alias = alias_of(using, topic)
    core.check_queue_name(queue)
    # A queue MQLITE["QUEUES"] declares lives on its declared database (by default
    # MQLITE["DATABASE"]); one made at run time must exist on the topic's database.
    is_declared = queue in (mqlite_settings.QUEUES or {})
    declared = core.declared_database(queue) or mqlite_settings.DATABASE
    if is_declared and declared != alias:
        raise CrossDatabaseError(
            f"queue {queue!r} lives on database {declared!r}, "
            f"topic {topic!r} on {alias!r}: a publish cannot reach it"
        )
    cursor, dialect = core.ctx(alias)
    with transaction.atomic(using=alias):
        topic_id = _lock_topic(cursor, dialect, topic, exclusive=True)
        q = core.load_queue(cursor, queue)
        now = now_ms()
        cursor.execute(
            "INSERT INTO mqlite_subscription (topic_id, queue_id, filter, created_at) "
            f"VALUES (%s, %s, {dialect.json_param()}, %s) "
            "ON CONFLICT (topic_id, queue_id) DO UPDATE SET filter = excluded.filter "
            "RETURNING created_at",
            [topic_id, q.id, None if checked is None else core.dumps(checked), now],
        )
        created_at = int(cursor.fetchone()[0])
    return Subscription(topic=topic, queue=queue, filter=checked, created_at=from_ms(created_at))


def unsubscribe(topic: str, queue: str, *, using: str | None = None) -> bool:
    """Remove ``queue``'s subscription to ``topic``; False if it had none."""
    alias = alias_of(using, topic)
    core.check_queue_name(queue)
    cursor, dialect = core.ctx(alias)
    with transaction.atomic(using=alias):
        topic_id = _lock_topic(cursor, dialect, topic, exclusive=True)
        cursor.execute(
            "DELETE FROM mqlite_subscription WHERE topic_id = %s AND queue_id = "
            "(SELECT id FROM mqlite_queue WHERE name = %s) RETURNING id",
            [topic_id, queue],
        )
        return cursor.fetchone() is not None


_SUBSCRIPTIONS = (
    "SELECT s.id, t.name, q.name, s.filter, s.created_at, q.ordering, q.dedup_window_ms, "
    "q.content_dedup, q.id FROM mqlite_subscription s JOIN mqlite_topic t ON t.id = s.topic_id "
    "JOIN mqlite_queue q ON q.id = s.queue_id"
)


def get_topic(name: str, *, using: str | None = None) -> Topic:
    """A topic with its subscriptions; TopicNotFoundError if there is none."""
    found = list_topics(using=alias_of(using, name), name=name)
    if not found:
        raise TopicNotFoundError(f"topic {name!r} does not exist")
    return found[0]


def list_topics(*, using: str | None = None, name: str | None = None) -> list[Topic]:
    """Every topic of database ``using`` (default ``MQLITE["DATABASE"]``), by name."""
    cursor, dialect = core.ctx(using or mqlite_settings.DATABASE)
    where, params = ("WHERE name = %s", [name]) if name is not None else ("", [])
    cursor.execute(f"SELECT name, created_at FROM mqlite_topic {where} ORDER BY name", params)
    topics = {n: Topic(name=n, created_at=from_ms(c), subscriptions=[]) for n, c in cursor}
    cursor.execute(f"{_SUBSCRIPTIONS} ORDER BY s.id")
    for _, t, q, f, created, *_ in cursor.fetchall():
        if t in topics:
            sub = Subscription(t, q, dialect.load_json(f), from_ms(created))
            topics[t].subscriptions.append(sub)
    return list(topics.values())


def publish(
    topic: str,
    body: Any,
    *,
    subject: str | None = None,
    properties: dict[str, Any] | None = None,
    using: str | None = None,
    **options: Any,
) -> int:
    """Publish to ``topic``: a copy in every subscribed queue whose filter matches,
    in the caller's transaction. Returns the number of queues reached. Takes the
    keywords of ``mq.send``; the message is admitted once, before anything is written."""
    msg = OutMessage(body, subject=subject, properties=properties, **options)
    if tracing.hook is not None:  # the producer span names the topic
        return tracing.hook.send(topic, [msg], lambda ms: _publish(topic, ms[0], using), _none)
    return _publish(topic, msg, using)


def _none(reached: int) -> list[int]:
    return []


def _publish(topic: str, msg: OutMessage, using: str | None) -> int:
    alias = alias_of(using, topic)
    now = now_ms()
    row = admit(msg, now)
    cursor, dialect = core.ctx(alias)
    # Reads and one write statement need no savepoint inside the caller's transaction
    # (a statement is atomic on its own, as the one-statement send); outside one, the
    # lock must last until the copies are written, so the publish opens a transaction.
    outer = nullcontext() if connections[alias].in_atomic_block else transaction.atomic(alias)
    with outer:
        topic_id = _lock_topic(cursor, dialect, topic, exclusive=False)
        cursor.execute(f"{_SUBSCRIPTIONS} WHERE s.topic_id = %s ORDER BY s.id", [topic_id])
        fast: list[tuple[int, Any]] = []
        general: dict[int, tuple[str, Any]] = {}
        names: dict[int, str] = {}
        for sub_id, _, queue, raw, _, ordering, dedup_ms, content_dedup, queue_id in cursor:
            names[queue_id] = queue
            stored = dialect.load_json(raw)
            if (
                send_one.eligible(row)
                and ordering == Ordering.STANDARD.value
                and not (dedup_ms > 0 and content_dedup)
            ):
                fast.append((sub_id, stored))
            else:
                general[sub_id] = (queue, stored)
        groups = _where(dialect, fast)
        # More than one write: all of them or none (a savepoint), for a caller that
        # catches the error and carries on.
        writes = transaction.atomic(alias) if general or len(groups) > 1 else nullcontext()
        with writes:
            reached = _publish_fast(cursor, dialect, alias, topic_id, row, now, groups, names)
            for sub_id in _matching(cursor, dialect, row, list(general.items())):
                send._send(general[sub_id][0], [msg], using=alias, single=True, now=now)
                reached += 1
        return reached


def _message_source(dialect: Dialect) -> str:
    """The published message as a one-row table ``m`` for the filters to read."""
    return f"(SELECT CAST(%s AS varchar) AS subject, {dialect.json_param()} AS properties) AS m"


#: Parameters of one publish statement at most (SQLite allows 32766): a topic whose
#: filters need more is published in several statements, under the same topic lock.
MAX_PARAMS = 30_000


def _terms(dialect: Dialect, subs: list[tuple[int, Any]]) -> list[tuple[str, list[Any]]]:
    """For each of ``subs``: ``s.id`` is it and its filter holds."""
    terms: list[tuple[str, list[Any]]] = []
    for sub_id, stored in subs:
        if stored is None:
            terms.append(("s.id = %s", [sub_id]))
        else:
            sql, args = filters.compile_sql(stored, dialect, "m.subject", "m.properties")
            terms.append((f"(s.id = %s AND {sql})", [sub_id, *args]))
    return terms


def _where(dialect: Dialect, subs: list[tuple[int, Any]]) -> list[tuple[str, list[Any]]]:
    """``WHERE`` conditions over ``subs`` (OR of their terms), as few as fit."""
    groups: list[tuple[str, list[Any]]] = []
    sqls: list[str] = []
    params: list[Any] = []
    for sql, args in _terms(dialect, subs):
        if sqls and len(params) + len(args) > MAX_PARAMS:
            groups.append(("(" + " OR ".join(sqls) + ")", params))
            sqls, params = [], []
        sqls.append(sql)
        params += args
    if sqls:
        groups.append(("(" + " OR ".join(sqls) + ")", params))
    return groups


def _matching(
    cursor: CursorWrapper, dialect: Dialect, row: Row, subs: list[tuple[int, tuple[str, Any]]]
) -> list[int]:
    """The ids of ``subs`` whose filter takes ``row`` (for the general path)."""
    if not subs:
        return []
    found: list[int] = []
    for where, params in _where(dialect, [(i, stored) for i, (_, stored) in subs]):
        cursor.execute(
            f"SELECT s.id FROM mqlite_subscription s CROSS JOIN {_message_source(dialect)} "
            f"WHERE {where} ORDER BY s.id",
            [row.subject, row.properties, *params],
        )
        found += [int(r[0]) for r in cursor.fetchall()]
    return found


_COLUMNS = (
    "queue_id, state, priority, visible_at, expires_at, enqueued_at, body, subject, "
    "properties, correlation_id, reply_to, content_type, message_id, group_id, order_key, "
    "blocked, delivery_count"
)


def _publish_fast(
    cursor: CursorWrapper,
    dialect: Dialect,
    alias: str,
    topic_id: int,
    row: Row,
    now: int,
    groups: list[tuple[str, list[Any]]],
    names: dict[int, str],
) -> int:
    """The one statement: a copy for each subscription whose filter matches, the
    conditions in ``groups`` (more than one only when the filters need more than
    ``MAX_PARAMS`` parameters)."""
    reached: list[tuple[str, int]] = []
    for where, where_params in groups:
        reached += _insert_copies(cursor, dialect, topic_id, row, now, where, where_params, names)
    for name, _ in reached:
        if not send_one.wake_pending(alias, name):
            send_one.on_commit_wake(alias, name)
    if reached and events.listening(events.message_sent):
        for name, seq in reached:
            events.sent(alias, name, [seq])
    return len(reached)


def _insert_copies(
    cursor: CursorWrapper,
    dialect: Dialect,
    topic_id: int,
    row: Row,
    now: int,
    where: str,
    where_params: list[Any],
    names: dict[int, str],
) -> list[tuple[str, int]]:
    insert = (
        f"INSERT INTO mqlite_message ({_COLUMNS}) "
        "SELECT q.id, %s, %s, %s, COALESCE(%s, %s + q.default_ttl_ms), %s, %s, m.subject, "
        "m.properties, %s, %s, %s, NULL, NULL, NULL, 0, 0 "
        "FROM mqlite_subscription s JOIN mqlite_queue q ON q.id = s.queue_id "
        f"CROSS JOIN {_message_source(dialect)} WHERE s.topic_id = %s AND {where} "
        "RETURNING queue_id, seq"
    )
    params = [
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
        row.subject,
        row.properties,
        topic_id,
        *where_params,
    ]
    if dialect.writable_cte:
        # The copies, each queue's lifetime counter and its NOTIFY, in one statement
        # (PostgreSQL sends one notification per payload and transaction).
        notify = ", pg_notify('mqlite', q.name)" if dialect.has_listen_notify else ""
        sql = (
            f"WITH ins AS ({insert}), t AS ({send_one.grouped_totals_sql(dialect, 'ins')}) "
            f"SELECT q.id, ins.seq{notify} FROM ins JOIN mqlite_queue q ON q.id = ins.queue_id"
        )
    else:
        sql = insert  # the counter trigger adds to each queue's total (counts_enqueued)
    cursor.execute(sql, params)
    return [(names[r[0]], int(r[1])) for r in cursor.fetchall()]


def sync_declared(declared: Mapping[str, Any], *, using: str | None = None) -> int:
    """Create the topics ``MQLITE["TOPICS"]`` declares on database ``using`` and their
    declared subscriptions (``{"subscriptions": {queue: filter or None}}``), replacing
    the filters of those that exist; returns how many topics. Subscriptions made at run
    time are kept."""
    if not isinstance(declared, Mapping):
        raise InvalidArgumentError('MQLITE["TOPICS"] must be a dict of {name: {options}}')
    alias = using or mqlite_settings.DATABASE
    done = 0
    for name, options in declared.items():
        opts = dict(options or {})
        if (opts.pop("database", None) or mqlite_settings.DATABASE) != alias:
            continue
        subs = opts.pop("subscriptions", None) or {}
        if opts or not isinstance(subs, Mapping):
            raise InvalidArgumentError(
                f'MQLITE["TOPICS"][{name!r}]: the options are "database" and '
                '"subscriptions" ({queue: filter or None})'
            )
        try:
            create_topic(name, using=alias)
        except TopicExistsError:
            pass
        for queue, flt in subs.items():
            subscribe(name, queue, flt, using=alias)
        done += 1
    return done
