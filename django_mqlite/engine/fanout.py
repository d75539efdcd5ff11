"""The publish statement: a copy for every matching subscription, in one statement.

A topic's subscriptions change rarely and are published to often, so a process keeps,
per topic, its **plan**: the subscriptions' filters compiled to SQL, the names of their
queues, and the topic row's ``version`` when it was read. Every change of a topic's
subscriptions (``subscribe``, ``unsubscribe``) and of a subscribed queue's ordering or
dedup settings (``update_queue``, ``delete_queue``) sets ``version`` to a fresh random
value, in the transaction of the change.

A publish with a plan runs one statement guarded by that version: the statement joins
the topic row ``WHERE id = %s AND version = %s``, so a stale plan inserts nothing and
says so (the statement returns a marker row only when the guard held); the publish then
reads the topic afresh under its lock (``topics.publish``) and caches the new plan. A
plan is used only when every subscribed queue takes the one-statement copy (``standard``
ordering, no content dedup) and the message has no ``message_id`` or ``group_id``.

PostgreSQL: the statement takes the topic row ``FOR KEY SHARE`` in its first CTE, so
``subscribe``/``unsubscribe``/``delete_topic`` (which lock it ``FOR UPDATE``) wait for the
publisher's commit, as for the locked path; and a change that commits while the
statement waits for that lock is seen (the row is re-read), so the guard fails and the
publish re-plans. The same statement inserts the copies, adds to each reached queue's
``enqueued`` total, adds to the topic's counters (``mqlite_topic_totals``) and NOTIFYs
each reached queue. It runs as a prepared statement where ``prepared`` allows.

SQLite (writers serialized, no writable CTE): the copies in one ``INSERT … SELECT`` (the
counter trigger counts each copy in its queue's totals), then one upsert of the topic's
counters, which also tells a stale plan (it returns nothing) from a publish that matched
no subscription. MariaDB runs the same two statements, after locking the topic row
shared while its version is the plan's (``LOCK IN SHARE MODE``), since its writers run
side by side: a change of the subscriptions then waits for the publish's commit, as on
PostgreSQL.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from django.db.backends.utils import CursorWrapper

from . import filters, prepared, send_one
from .dialects import Dialect
from .prepare import Row

#: Plans kept per process, at most (then the cache starts again).
MAX_PLANS = 1024
#: A plan is read afresh after this long even when its version still matches: a
#: subscription changed by a process that does not set versions (an older release
#: during a rolling upgrade, a hand edit) is seen within this bound.
PLAN_TTL_S = 30.0


def new_version() -> int:
    """A topic version no earlier one is likely to have had (63 random bits)."""
    return secrets.randbits(62) + 1


def changed_queue(cursor: CursorWrapper, queue_id: int) -> None:
    """A subscribed queue's ordering or dedup changed, or it is deleted: every topic it
    is subscribed to gets a new version (publishers re-plan)."""
    cursor.execute(
        "UPDATE mqlite_topic SET version = %s WHERE id IN "
        "(SELECT topic_id FROM mqlite_subscription WHERE queue_id = %s)",
        [new_version(), queue_id],
    )


@dataclass(frozen=True)
class Plan:
    """What a publish to one topic needs: the compiled filters of its subscriptions
    (``where``: an OR of ``s.id = %s AND <filter>`` terms, or None when it has none)."""

    topic_id: int
    version: int
    names: dict[int, str]  # queue id -> queue name, of every subscription
    where: str | None
    params: list[Any]
    made: float = field(default_factory=time.monotonic)


_plans: dict[tuple[str, str], Plan] = {}


def cached(alias: str, topic: str) -> Plan | None:
    plan = _plans.get((alias, topic))
    if plan is not None and time.monotonic() - plan.made > PLAN_TTL_S:
        return None
    return plan


def remember(alias: str, topic: str, plan: Plan) -> None:
    if len(_plans) >= MAX_PLANS:
        _plans.clear()
    _plans[(alias, topic)] = plan


def forget(alias: str, topic: str) -> None:
    _plans.pop((alias, topic), None)


def where_of(dialect: Dialect, subs: list[tuple[int, Any]]) -> tuple[str | None, list[Any]]:
    """The condition taking exactly the subscriptions of ``subs`` (id, stored filter)
    whose filter holds for the message ``m``."""
    terms: list[str] = []
    params: list[Any] = []
    for sub_id, stored in subs:
        if stored is None:
            terms.append("s.id = %s")
            params.append(sub_id)
        else:
            sql, args = filters.compile_sql(stored, dialect, "m.subject", "m.properties")
            terms.append(f"(s.id = %s AND {sql})")
            params += [sub_id, *args]
    return ("(" + " OR ".join(terms) + ")" if terms else None), params


# The copy of a message for queue ``q``, in the order of ``send_one.COLUMNS``: the
# values of ``send_one.values``, cast so that a prepared statement knows their types,
# then the message's subject and properties from ``m``.
_SELECT = (
    "SELECT q.id, CAST(%s AS varchar), CAST(%s AS smallint), CAST(%s AS bigint), "
    "COALESCE(CAST(%s AS bigint), CAST(%s AS bigint) + q.default_ttl_ms), CAST(%s AS bigint), "
    "CAST(%s AS {blob}), CAST(%s AS varchar), CAST(%s AS varchar), CAST(%s AS varchar), "
    "m.subject, m.properties, NULL, NULL, NULL, 0, 0"
)
_COUNT_SET = (
    "ON CONFLICT (topic_id, queue_id, shard) DO UPDATE SET "
    "published = mqlite_topic_totals.published + excluded.published, "
    "delivered = mqlite_topic_totals.delivered + excluded.delivered"
)


def select_sql(dialect: Dialect) -> str:
    """The ``SELECT`` list of a copy for queue ``q`` of message ``m``."""
    return _SELECT.format(blob=dialect.blob_type)


def message_sql(dialect: Dialect) -> str:
    """The published message as a one-row table ``m`` for the filters to read."""
    return f"SELECT CAST(%s AS varchar) AS subject, {dialect.json_param()} AS properties"


# -- name: publish (PostgreSQL) -----------------------------------------------------------
def _postgres_sql(dialect: Dialect, where: str) -> str:
    shard = dialect.totals_shard_sql()
    select = select_sql(dialect)
    return (
        "WITH t AS (SELECT id FROM mqlite_topic WHERE id = %s AND version = %s FOR KEY SHARE), "
        f"m AS ({message_sql(dialect)}), "
        f"ins AS (INSERT INTO mqlite_message ({send_one.COLUMNS}) {select} "
        "FROM t JOIN mqlite_subscription s ON s.topic_id = t.id "
        f"JOIN mqlite_queue q ON q.id = s.queue_id CROSS JOIN m WHERE {where} "
        "RETURNING queue_id, seq), "
        f"tot AS ({send_one.grouped_totals_sql(dialect, 'ins')}), "
        "cnt AS (INSERT INTO mqlite_topic_totals (topic_id, queue_id, shard, published, "
        f"delivered) SELECT t.id, 0, {shard}, 1, 0 FROM t UNION ALL "
        f"SELECT %s, queue_id, {shard}, 0, count(*) FROM ins GROUP BY queue_id {_COUNT_SET}) "
        "SELECT 0, 0, NULL FROM t UNION ALL "
        "SELECT q.id, ins.seq, pg_notify('mqlite', q.name) "
        "FROM ins JOIN mqlite_queue q ON q.id = ins.queue_id"
    )


# -- name: publish_copies (SQLite) ---------------------------------------------------------
def _sqlite_sql(dialect: Dialect, where: str) -> str:
    select = select_sql(dialect)
    return (
        f"INSERT INTO mqlite_message ({send_one.COLUMNS}) {select} "
        "FROM mqlite_topic t JOIN mqlite_subscription s ON s.topic_id = t.id "
        f"JOIN mqlite_queue q ON q.id = s.queue_id CROSS JOIN ({message_sql(dialect)}) AS m "
        f"WHERE t.id = %s AND t.version = %s AND {where} RETURNING queue_id, seq"
    )


def count_sql(dialect: Dialect, reached: int, *, guarded: bool) -> str:
    """One upsert adding a publish to the topic's count and a copy to each of
    ``reached`` queues (``%s`` each, after the topic's id). ``guarded``: only while the
    topic's version is the one given (two more ``%s``); returns a row per counter."""
    rows = ", ".join(["(0, 1, 0)"] + ["(%s, 0, 1)"] * reached)
    guard = " AND t.version = %s" if guarded else ""
    return (
        "INSERT INTO mqlite_topic_totals (topic_id, queue_id, shard, published, delivered) "
        f"SELECT t.id, v.column1, {dialect.totals_shard_sql()}, v.column2, v.column3 "
        f"FROM mqlite_topic t, (VALUES {rows}) AS v WHERE t.id = %s{guard} {_COUNT_SET} "
        "RETURNING queue_id"
    )


def run(
    cursor: CursorWrapper, dialect: Dialect, alias: str, plan: Plan, row: Row, now: int
) -> list[tuple[str, int]] | None:
    """Publish ``row`` by ``plan`` in one statement (SQLite: and its counter upsert).
    (queue name, seq) of each copy, or None when the plan is stale (nothing written)."""
    if plan.where is None:
        return _count_only(cursor, dialect, plan)
    message = [row.subject, row.properties]
    if dialect.writable_cte:
        sql = _postgres_sql(dialect, plan.where)
        params = [plan.topic_id, plan.version, *message, *send_one.values(row, now), *plan.params]
        prepared.execute(cursor, alias, "publish", sql, [*params, plan.topic_id])
        got = cursor.fetchall()
        if not got or got[0][0] != 0:  # no marker row: the guard did not hold
            return None
        return [(plan.names[r[0]], int(r[1])) for r in got[1:]]
    if dialect.concurrent_writers and not _hold(cursor, dialect, plan):
        return None  # stale: nothing written
    sql = _sqlite_sql(dialect, plan.where)
    cursor.execute(
        sql, [*send_one.values(row, now), *message, plan.topic_id, plan.version, *plan.params]
    )
    copies = [(int(r[0]), int(r[1])) for r in cursor.fetchall()]
    cursor.execute(
        count_sql(dialect, len(copies), guarded=True),
        [*(queue_id for queue_id, _ in copies), plan.topic_id, plan.version],
    )
    if not cursor.fetchall():
        # The version changed between the two statements, which only a second writer
        # can do: on SQLite writes are serialized, and MariaDB holds the topic (``_hold``).
        # So the INSERT's guard failed as well: nothing was copied.
        if copies:
            raise RuntimeError("a publish's topic changed under its copies")
        return None
    return [(plan.names[queue_id], seq) for queue_id, seq in copies]


def _hold(cursor: CursorWrapper, dialect: Dialect, plan: Plan) -> bool:
    """Where writers run side by side with no writable CTE (MariaDB): lock the topic row
    shared while its version is the plan's, as the locked path does, so a change of its
    subscriptions waits for this publish's commit. Without it a change could commit
    between the copies and the guarded count, which then fails after the copies are
    written, and the publish would be run again by the locked path: a second copy."""
    cursor.execute(
        f"SELECT id FROM mqlite_topic WHERE id = %s AND version = %s "
        f"{dialect.row_lock_sql(exclusive=False)}",
        [plan.topic_id, plan.version],
    )
    return cursor.fetchone() is not None


def _count_only(
    cursor: CursorWrapper, dialect: Dialect, plan: Plan
) -> list[tuple[str, int]] | None:
    """A topic without subscriptions: count the publish (guarded), reach nobody."""
    cursor.execute(count_sql(dialect, 0, guarded=True), [plan.topic_id, plan.version])
    return [] if cursor.fetchall() else None


def count(cursor: CursorWrapper, dialect: Dialect, topic_id: int, queue_ids: list[int]) -> None:
    """Count a publish and its copies (for the locked path, which holds the topic)."""
    cursor.execute(count_sql(dialect, len(queue_ids), guarded=False), [*queue_ids, topic_id])
    cursor.fetchall()
