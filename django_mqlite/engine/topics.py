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
from typing import Any, Protocol

from django.db import connections, transaction
from django.db.backends.utils import CursorWrapper

from ..conf import current
from ..exceptions import (
    CrossDatabaseError,
    InvalidArgumentError,
    TopicExistsError,
    TopicNotFoundError,
)
from . import (
    admission,
    arguments,
    canonical_json,
    databases,
    events,
    fanout,
    filters,
    send,
    send_one,
    tracing,
)
from .admission import admit
from .clock import from_ms, now_ms
from .dialects import Dialect
from .prepare import Row
from .rows import load_queue
from .types import Ordering, OutMessage, Subscription, Topic


class TaskDelivery(Protocol):
    """What the Tasks integration (``tasks/topics.py``) does for topics; the engine
    knows no task, so it asks."""

    def refusal(self, queue: str) -> str | None:
        """Why ``queue`` takes no plain subscription (it runs tasks), or None."""

    def deliver(self, topic: str, task: str, msg: OutMessage, using: str) -> None:
        """Enqueue the published ``msg`` as a call of ``task``, in the caller's
        transaction (InvalidArgumentError when it cannot be one)."""

    def subscribe(
        self, topic: str, task: str, filter: Any, *, queue: str, using: str
    ) -> Subscription:
        """Subscribe ``task`` (a dotted path) to ``topic`` on ``queue`` as
        ``mq.subscribe_task`` does (a declared task subscription)."""


#: Installed by the Tasks integration when the app is ready (``tasks/plugin.py``).
task_delivery: TaskDelivery | None = None


def _declared(topic: str) -> Mapping[str, Any]:
    options = current().topics.get(topic)
    return options if isinstance(options, Mapping) else {}


def alias_of(using: str | None, topic: str) -> str:
    """The database of ``topic``: the one ``MQLITE["TOPICS"]`` names, else ``using``,
    else ``MQLITE["DATABASE"]`` (an explicit other ``using`` is refused)."""
    arguments.check_queue_name(topic)
    declared = _declared(topic).get("database")
    if isinstance(declared, str) and declared:
        if using is not None and using != declared:
            raise InvalidArgumentError(
                f'topic {topic!r} lives on database {declared!r} (MQLITE["TOPICS"]), not {using!r}'
            )
        return declared
    return using or current().database


def topic_database(name: str) -> str:
    """The database alias topic ``name`` lives on (for a caller's ``transaction.atomic``)."""
    return alias_of(None, name)


def _lock_topic(
    cursor: CursorWrapper, dialect: Dialect, name: str, *, exclusive: bool
) -> tuple[int, int]:
    """The topic's id and version, its row locked (shared: a publish; exclusive: a
    change of its subscriptions, which then gets a new version and drops this
    process's plan)."""
    lock = dialect.row_lock_sql(exclusive=exclusive)
    cursor.execute(f"SELECT id, version FROM mqlite_topic WHERE name = %s {lock}", [name])
    row = cursor.fetchone()
    if row is None:
        raise TopicNotFoundError(f"topic {name!r} does not exist")
    if not exclusive:
        return int(row[0]), int(row[1])
    version = fanout.new_version()
    cursor.execute("UPDATE mqlite_topic SET version = %s WHERE id = %s", [version, row[0]])
    fanout.forget(cursor.db.alias, name)
    return int(row[0]), version


def create_topic(name: str, *, using: str | None = None) -> Topic:
    """Create a topic; TopicExistsError if it exists."""
    alias = alias_of(using, name)
    cursor, _ = databases.ctx(alias)
    with transaction.atomic(using=alias):
        now = now_ms()
        cursor.execute(
            "INSERT INTO mqlite_topic (name, created_at, version) VALUES (%s, %s, %s) "
            "ON CONFLICT (name) DO NOTHING RETURNING id",
            [name, now, fanout.new_version()],
        )
        if cursor.fetchone() is None:
            raise TopicExistsError(f"topic {name!r} exists")
    return Topic(name=name, created_at=from_ms(now), subscriptions=[])


def delete_topic(name: str, *, using: str | None = None) -> None:
    """Delete a topic and its subscriptions (the queues and their messages stay)."""
    alias = alias_of(using, name)
    cursor, dialect = databases.ctx(alias)
    with transaction.atomic(using=alias):
        topic_id, _ = _lock_topic(cursor, dialect, name, exclusive=True)
        cursor.execute("DELETE FROM mqlite_subscription WHERE topic_id = %s", [topic_id])
        cursor.execute("DELETE FROM mqlite_topic_totals WHERE topic_id = %s", [topic_id])
        cursor.execute("DELETE FROM mqlite_topic WHERE id = %s", [topic_id])


def subscribe(
    topic: str,
    queue: str,
    filter: Any = None,
    *,
    using: str | None = None,
    task: str | None = None,
) -> Subscription:
    """Subscribe ``queue`` to ``topic`` with ``filter`` (None: every message), or
    replace the filter of its subscription. A malformed filter, an unknown topic or
    queue, or a queue on another database: a typed error, nothing written.

    A queue that runs Django tasks takes no copies (its worker runs only envelopes its
    backend signed): subscribe a task to it with ``mq.subscribe_task``, which passes
    ``task``."""
    checked = filters.validate(filter)
    if task is None and task_delivery is not None:
        refused = task_delivery.refusal(queue)
        if refused is not None:
            raise InvalidArgumentError(refused)
    alias = alias_of(using, topic)
    arguments.check_queue_name(queue)
    # A queue MQLITE["QUEUES"] declares lives on its declared database (by default
    # MQLITE["DATABASE"]); one made at run time must exist on the topic's database.
    is_declared = queue in current().queues
    declared = databases.declared_database(queue) or current().database
    if is_declared and declared != alias:
        raise CrossDatabaseError(
            f"queue {queue!r} lives on database {declared!r}, "
            f"topic {topic!r} on {alias!r}: a publish cannot reach it"
        )
    cursor, dialect = databases.ctx(alias)
    with transaction.atomic(using=alias):
        topic_id, _ = _lock_topic(cursor, dialect, topic, exclusive=True)
        q = load_queue(cursor, queue)
        now = now_ms()
        cursor.execute(
            "INSERT INTO mqlite_subscription (topic_id, queue_id, filter, created_at, task) "
            f"VALUES (%s, %s, {dialect.json_param()}, %s, %s) "
            "ON CONFLICT (topic_id, queue_id) DO UPDATE SET filter = excluded.filter, "
            "task = excluded.task RETURNING created_at",
            [topic_id, q.id, None if checked is None else canonical_json.dumps(checked), now, task],
        )
        created_at = int(cursor.fetchone()[0])
    return Subscription(topic, queue, checked, from_ms(created_at), task)


def unsubscribe(topic: str, queue: str, *, using: str | None = None) -> bool:
    """Remove ``queue``'s subscription to ``topic``; False if it had none."""
    alias = alias_of(using, topic)
    arguments.check_queue_name(queue)
    cursor, dialect = databases.ctx(alias)
    with transaction.atomic(using=alias):
        topic_id, _ = _lock_topic(cursor, dialect, topic, exclusive=True)
        cursor.execute(
            "DELETE FROM mqlite_subscription WHERE topic_id = %s AND queue_id = "
            "(SELECT id FROM mqlite_queue WHERE name = %s) RETURNING queue_id",
            [topic_id, queue],
        )
        found = cursor.fetchone()
        if found is None:
            return False
        cursor.execute(
            "DELETE FROM mqlite_topic_totals WHERE topic_id = %s AND queue_id = %s",
            [topic_id, found[0]],
        )
        return True


_SUBSCRIPTIONS = (
    "SELECT s.id, t.name, q.name, s.filter, s.created_at, q.ordering, q.dedup_window_ms, "
    "q.content_dedup, q.id, s.task FROM mqlite_subscription s "
    "JOIN mqlite_topic t ON t.id = s.topic_id JOIN mqlite_queue q ON q.id = s.queue_id"
)


def get_topic(name: str, *, using: str | None = None) -> Topic:
    """A topic with its subscriptions; TopicNotFoundError if there is none."""
    found = list_topics(using=alias_of(using, name), name=name)
    if not found:
        raise TopicNotFoundError(f"topic {name!r} does not exist")
    return found[0]


def list_topics(*, using: str | None = None, name: str | None = None) -> list[Topic]:
    """Every topic of database ``using`` (default ``MQLITE["DATABASE"]``), by name."""
    cursor, dialect = databases.ctx(using or current().database)
    where, params = ("WHERE name = %s", [name]) if name is not None else ("", [])
    cursor.execute(f"SELECT name, created_at FROM mqlite_topic {where} ORDER BY name", params)
    topics = {n: Topic(name=n, created_at=from_ms(c), subscriptions=[]) for n, c in cursor}
    cursor.execute(f"{_SUBSCRIPTIONS} ORDER BY s.id")
    for _, t, q, f, created, *_, task in cursor.fetchall():
        if t in topics:
            sub = Subscription(t, q, dialect.load_json(f), from_ms(created), task)
            topics[t].subscriptions.append(sub)
    return list(topics.values())


def matching_queues(
    topic: str,
    *,
    subject: str | None = None,
    properties: dict[str, Any] | None = None,
    using: str | None = None,
) -> list[str]:
    """The queues subscribed to ``topic`` whose filter takes a message with ``subject``
    and ``properties``, by name: the filters compiled and run by the database exactly
    as a publish runs them (``fanout.where_of``), and nothing written. Subject and
    properties pass admission's checks first (InvalidArgumentError)."""
    alias = alias_of(using, topic)
    row_subject = admission.text(subject, "subject", 256)
    row_properties = admission.properties(properties)
    cursor, dialect = databases.ctx(alias)
    cursor.execute("SELECT id FROM mqlite_topic WHERE name = %s", [topic])
    found = cursor.fetchone()
    if found is None:
        raise TopicNotFoundError(f"topic {topic!r} does not exist")
    cursor.execute("SELECT id, filter FROM mqlite_subscription WHERE topic_id = %s", [found[0]])
    subs = [(int(i), dialect.load_json(f)) for i, f in cursor.fetchall()]
    where, params = fanout.where_of(dialect, subs)
    if where is None:
        return []
    cursor.execute(
        "SELECT q.name FROM mqlite_subscription s JOIN mqlite_queue q ON q.id = s.queue_id "
        f"CROSS JOIN ({fanout.message_sql(dialect)}) AS m WHERE s.topic_id = %s AND {where} "
        "ORDER BY q.name",
        [row_subject, row_properties, found[0], *params],
    )
    return [str(r[0]) for r in cursor.fetchall()]


def topic_totals(*, using: str | None = None) -> dict[str, dict[str, Any]]:
    """Lifetime counters of every topic on database ``using``: ``{topic: {"published":
    n, "delivered": {queue: copies}}}`` (a subscription that never got a copy: 0). A
    rolled-back publish counts nowhere: the counters are written in its transaction."""
    alias = using or current().database
    cursor, _ = databases.ctx(alias)
    out: dict[str, dict[str, Any]] = {
        t.name: {"published": 0, "delivered": {s.queue: 0 for s in t.subscriptions}}
        for t in list_topics(using=alias)
    }
    cursor.execute(
        "SELECT t.name, c.queue_id, q.name, SUM(c.published), SUM(c.delivered) "
        "FROM mqlite_topic_totals c JOIN mqlite_topic t ON t.id = c.topic_id "
        "LEFT JOIN mqlite_queue q ON q.id = c.queue_id GROUP BY t.name, c.queue_id, q.name"
    )
    for topic, queue_id, queue, published, delivered in cursor.fetchall():
        entry = out.get(topic)  # None: made after the listing above
        if entry is not None and queue_id == 0:
            entry["published"] = int(published)
        elif entry is not None and queue in entry["delivered"]:
            entry["delivered"][queue] = int(delivered)
    return out


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
    return len(
        publish_to(topic, body, subject=subject, properties=properties, using=using, **options)
    )


def publish_to(
    topic: str,
    body: Any,
    *,
    subject: str | None = None,
    properties: dict[str, Any] | None = None,
    using: str | None = None,
    **options: Any,
) -> list[str]:
    """``publish``, returning the names of the queues reached."""
    msg = OutMessage(body, subject=subject, properties=properties, **options)
    if tracing.hook is not None:  # the producer span names the topic
        return tracing.hook.send(topic, [msg], lambda ms: _publish(topic, ms[0], using), _none)
    return _publish(topic, msg, using)


def _none(reached: list[str]) -> list[int]:
    return []


def _publish(topic: str, msg: OutMessage, using: str | None) -> list[str]:
    alias = alias_of(using, topic)
    now = now_ms()
    row = admit(msg, now)
    if row.unique_key is not None:  # a key is per queue; a publish reaches many
        raise InvalidArgumentError("publish does not take a unique_key")
    if msg.depends_on is not None:  # a copy per queue: send them with mq.send instead
        raise InvalidArgumentError("publish does not take depends_on")
    cursor, dialect = databases.ctx(alias)
    # Reads and one write statement need no savepoint inside the caller's transaction
    # (a statement is atomic on its own, as the one-statement send): PostgreSQL's
    # planned publish. Without a writable CTE it is two (the copies, then the count),
    # and the count can fail after the copies (a lock wait timeout on MariaDB undoes
    # only its statement): a savepoint, so a caller that catches the error keeps
    # neither. Outside a transaction, the lock must last until the copies are written,
    # so the publish opens one.
    in_caller = connections[alias].in_atomic_block
    outer = nullcontext() if in_caller and dialect.writable_cte else transaction.atomic(alias)
    with outer:
        plan = fanout.cached(alias, topic)
        reached = None
        if plan is not None and send_one.eligible(row):
            copies = fanout.run(cursor, dialect, alias, plan, row, now)
            if copies is not None:
                _sent(alias, copies)
                reached = [name for name, _ in copies]
        if reached is None:
            reached = _publish_locked(cursor, dialect, alias, topic, msg, row, now)
        wake(alias, reached)
        return reached


def _publish_locked(
    cursor: CursorWrapper,
    dialect: Dialect,
    alias: str,
    topic: str,
    msg: OutMessage,
    row: Row,
    now: int,
) -> list[str]:
    """The publish that reads the topic under its shared lock (no plan yet, a stale
    one, or a copy that needs the general send), and plans the next publishes."""
    topic_id, version = _lock_topic(cursor, dialect, topic, exclusive=False)
    cursor.execute(f"{_SUBSCRIPTIONS} WHERE s.topic_id = %s ORDER BY s.id", [topic_id])
    subs = cursor.fetchall()
    names = {r[8]: r[2] for r in subs}  # queue id -> name
    queue_of = {r[0]: r[8] for r in subs}  # subscription id -> queue id
    tasks = {r[0]: r[9] for r in subs if r[9] is not None}  # subscription id -> task
    every: list[tuple[int, Any]] = []
    fast: list[tuple[int, Any]] = []
    general: dict[int, tuple[str, Any]] = {}
    for sub_id, _, queue, raw, _, ordering, dedup_ms, content_dedup, _, task in subs:
        stored = dialect.load_json(raw)
        every.append((sub_id, stored))
        standard = ordering == Ordering.STANDARD.value and not (dedup_ms > 0 and content_dedup)
        if standard and task is None:
            fast.append((sub_id, stored))
        else:
            general[sub_id] = (queue, stored)
    plan = None
    if not general:
        where, params = fanout.where_of(dialect, every)
        if len(params) <= MAX_PARAMS:
            plan = fanout.Plan(topic_id, version, names, where, params)
            fanout.remember(alias, topic, plan)
    if not send_one.eligible(row):
        general.update((i, (names[queue_of[i]], stored)) for i, stored in fast)
        fast = []
    groups = _where(dialect, fast)
    # More than one write: all of them or none (a savepoint), for a caller that
    # catches the error and carries on.
    writes = transaction.atomic(alias) if general or len(groups) > 1 else nullcontext()
    with writes:
        copies: list[tuple[int, int]] = []
        for where, where_params in groups:
            copies += _insert_copies(cursor, dialect, topic_id, row, now, where, where_params)
        queue_ids = [queue_id for queue_id, _ in copies]
        for sub_id in _matching(cursor, dialect, row, list(general.items())):
            if sub_id in tasks:
                _deliver_task(topic, tasks[sub_id], msg, alias)
            else:
                send._send(general[sub_id][0], [msg], using=alias, single=True, now=now)
            queue_ids.append(queue_of[sub_id])
        fanout.count(cursor, dialect, topic_id, queue_ids)
    # The general path's copies are sends, which signal for themselves.
    _sent(alias, [(names[queue_id], seq) for queue_id, seq in copies])
    return [names[i] for i in queue_ids]


def _sent(alias: str, copies: list[tuple[str, int]]) -> None:
    """``message_sent`` for each copy the publish statement wrote, after commit."""
    if copies and events.listening(events.message_sent):
        for name, seq in copies:
            events.sent(alias, name, [seq])


def _deliver_task(topic: str, task: str, msg: OutMessage, alias: str) -> None:
    if task_delivery is None:
        raise InvalidArgumentError(
            f"topic {topic!r} has a task subscription ({task!r}) and no Tasks integration "
            "is installed to enqueue it"
        )
    task_delivery.deliver(topic, task, msg, alias)


def wake(alias: str, queues: list[str]) -> None:
    """Wake this process's waiters on ``queues`` at commit (one callback for them)."""
    fresh = [q for q in queues if not send_one.wake_pending(alias, q)]
    if fresh:
        send_one.on_commit_wake(alias, *fresh)


#: Parameters of one publish statement at most (SQLite allows 32766): a topic whose
#: filters need more is published in several statements, under the same topic lock.
MAX_PARAMS = 30_000


def _where(dialect: Dialect, subs: list[tuple[int, Any]]) -> list[tuple[str, list[Any]]]:
    """``WHERE`` conditions over ``subs`` (OR of their terms), as few as fit."""
    groups: list[tuple[str, list[Any]]] = []
    sqls: list[str] = []
    params: list[Any] = []
    for sub in subs:
        sql, args = fanout.where_of(dialect, [sub])
        assert sql is not None
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
            f"SELECT s.id FROM mqlite_subscription s CROSS JOIN ({fanout.message_sql(dialect)}) "
            f"AS m WHERE {where} ORDER BY s.id",
            [row.subject, row.properties, *params],
        )
        found += [int(r[0]) for r in cursor.fetchall()]
    return found


def _insert_copies(
    cursor: CursorWrapper,
    dialect: Dialect,
    topic_id: int,
    row: Row,
    now: int,
    where: str,
    where_params: list[Any],
) -> list[tuple[int, int]]:
    """The copies for the subscriptions ``where`` takes, in one statement (the lifetime
    counters: PostgreSQL in the same statement, SQLite by its trigger); (queue id, seq)
    of each."""
    insert = (
        f"INSERT INTO mqlite_message ({send_one.COLUMNS}) {fanout.select_sql(dialect)} "
        "FROM mqlite_subscription s JOIN mqlite_queue q ON q.id = s.queue_id "
        f"CROSS JOIN ({fanout.message_sql(dialect)}) AS m WHERE s.topic_id = %s AND {where} "
        "RETURNING queue_id, seq"
    )
    params = [*send_one.values(row, now), row.subject, row.properties, topic_id, *where_params]
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
    return [(int(r[0]), int(r[1])) for r in cursor.fetchall()]
