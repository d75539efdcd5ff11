"""The reaper's passes. Each is set-based, bounded to ``REAP_CHUNK`` rows per statement
and its own short transaction, and safe to run from any number of processes at once
(on PostgreSQL the picks skip rows another reaper holds; on SQLite writes serialize).

A *quiet* pass (``reap(quiet=True)``: the reaper's last pass found nothing) runs its
steps in one transaction per database instead of one per statement, so an idle database
costs one transaction a pass rather than about ten. The first step that finds work ends
that transaction: it commits with that step's one chunk, and the steps after it run as
an ordinary pass, each statement its own transaction. So no transaction ever holds the
locks of two steps (each step takes its line, row and batch locks in its own order; two
steps' in one transaction could meet a sender's in the opposite order, a deadlock), and
none holds them longer than an ordinary pass would. The history sample is taken before
the quiet transaction opens: on SQLite that transaction holds the write lock from its
start, and the sample counts every queue's depth (``history.sample`` reads outside any
transaction).
"""

from __future__ import annotations

import contextvars
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from ..conf import current
from . import batch_retention as retention
from . import databases, events, history, lines, liveness, tally, totals
from .clock import now_ms
from .dead_letters import EXHAUSTED_REASON, Buried
from .dialects import Dialect
from .redrive import delete_rows
from .rows import (
    EXPIRED_COLUMNS,
    QUEUE_COLUMNS,
    RECLAIMED_COLUMNS,
    ExpiredRow,
    QueueRow,
    ReclaimedRow,
)

TTL_EXPIRED = "TTLExpired"
#: Set while a quiet pass runs (``reap(quiet=True)``): every step takes one chunk at most.
_quiet = contextvars.ContextVar("mqlite_quiet_reap", default=False)
MAX_CHUNKS_PER_PASS = 100


def _chunk() -> int:
    return current().reap_chunk


def _repeat(alias: str, step: Callable[[CursorWrapper, Dialect, int], int]) -> int:
    """Run ``step`` in its own transaction until it does less than a full chunk."""
    total = 0
    for _ in range(MAX_CHUNKS_PER_PASS):
        with transaction.atomic(using=alias):
            # The cursor is opened inside the transaction: a connection that broke is
            # then replaced by Django instead of failing every chunk that follows.
            cursor, dialect = databases.ctx(alias)
            n = step(cursor, dialect, now_ms())
        total += n
        if n < _chunk() or _quiet.get():
            break
    return total


def reclaim_sql(dialect: Dialect, pick_where: str, index: str) -> str:
    """Return expired/orphaned locks to active, or dead-letter them when that was the
    message's last allowed delivery: the same rule for lease expiry and dead workers, so
    a crash never buys an extra delivery.

    A row returned to ``active`` keeps its lock token until the next claim replaces it:
    that is how a lapsed settlement (``settle``, SQS's receipt handles) knows that no
    other receive took the message since. Nothing else reads the token of an active row."""
    max_sql = (
        "(SELECT q.max_delivery_count FROM mqlite_queue q WHERE q.id = mqlite_message.queue_id)"
    )
    return (
        f"UPDATE mqlite_message SET "
        f"state = CASE WHEN delivery_count >= {max_sql} THEN 'dead_lettered' ELSE 'active' END, "
        f"lock_token = CASE WHEN delivery_count >= {max_sql} THEN NULL ELSE lock_token END, "
        "locked_until = NULL, locked_by = NULL, visible_at = %s, "
        f"dead_letter_reason = CASE WHEN delivery_count >= {max_sql} "
        f"THEN '{EXHAUSTED_REASON}' ELSE dead_letter_reason END, "
        f"dead_lettered_at = CASE WHEN delivery_count >= {max_sql} THEN %s "
        "ELSE dead_lettered_at END "
        f"WHERE seq IN (SELECT seq FROM mqlite_message {dialect.index_hint(index)} "
        f"WHERE {pick_where} "
        f"LIMIT %s {dialect.lock_suffix()}) "
        f"RETURNING {RECLAIMED_COLUMNS}"
    )


def apply_reclaimed(cursor: CursorWrapper, dialect: Dialect, fetched: list[Any]) -> None:
    """Count the reclaimed rows (``reclaim_sql``'s ``ReclaimedRow``s): each is a retry or,
    when it was the last allowed delivery, a burial (``tally.buried``)."""
    rows = [ReclaimedRow(*r) for r in fetched]
    per_queue: dict[int, Counter[str]] = {}
    for r in rows:
        per_queue.setdefault(r.queue_id, Counter())[r.state] += 1
    for queue_id, c in per_queue.items():
        total = c["active"] + c["dead_lettered"]
        totals.bump_totals(cursor, dialect, queue_id, reclaimed=total, retried=c["active"])
    dead = [
        Buried(r.queue_id, r.seq, r.order_key, r.batch_id)
        for r in rows
        if r.state == "dead_lettered"
    ]
    tally.buried(cursor, dialect, dead, "exhausted")


#: A lease that ran out: the rows ``expire_locks`` returns, and the rows whose presence
#: makes PostgreSQL's one-statement claim return them first (``claim._ONE_LAPSED``).
LAPSED = "state = 'locked' AND locked_until <= %s"


def expire_locks(alias: str, queue: str | None = None) -> int:
    """Return the leases that ran out (``reclaim_sql``'s rule): of every queue (the
    reaper, seeking ``mqlite_msg_lease``), or of ``queue`` alone (a receive on it, see
    ``expire_queue_locks``; seeking that queue's locked rows in ``mqlite_msg_state``)."""
    if queue is None:
        where, index, scope = "", "mqlite_msg_lease", []
    else:
        where, index = (
            "queue_id = (SELECT id FROM mqlite_queue WHERE name = %s) AND ",
            ("mqlite_msg_state"),
        )
        scope = [queue]

    def step(cursor: CursorWrapper, dialect: Dialect, now: int) -> int:
        cursor.execute(
            reclaim_sql(
                dialect,
                f"{where}{LAPSED} ORDER BY locked_until",
                index,
            ),
            [now, now, *scope, now, _chunk()],
        )
        rows = cursor.fetchall()
        apply_reclaimed(cursor, dialect, rows)
        return len(rows)

    return _repeat(alias, step)


#: A receive returns its queue's expired leases at most this often (milliseconds of the
#: engine's clock, per queue and process): a busy queue pays one extra statement per
#: interval, not per receive.
QUEUE_LEASES_EVERY_MS = 250
_queue_leases_at: dict[tuple[str, str], int] = {}
_queue_leases_lock = threading.Lock()


def expire_queue_locks(alias: str, queue: str) -> int:
    """What a receive on ``queue`` runs before its claim, in a statement and transaction
    of its own (on SQLite, a savepoint of the claim's transaction: ``claim._claim``):
    ``expire_locks`` for that queue, at most every ``QUEUE_LEASES_EVERY_MS``
    in this process (``queue_leases_due``). A visibility timeout then ends on time with
    no reaper running (an SQS-only deployment is a web server); delivery counts,
    dead-lettering and the line of a group are the reaper's, because it is the reaper's
    statement. PostgreSQL's one-statement claim asks its own statement whether a lease
    lapsed and runs ``expire_locks`` only then (``claim._claim_one``)."""
    if not queue_leases_due(alias, queue):
        return 0
    return expire_locks(alias, queue)


def queue_leases_due(alias: str, queue: str) -> bool:
    """Whether a receive on ``queue`` returns the queue's expired leases now: at most
    every ``QUEUE_LEASES_EVERY_MS`` per queue and process, counted from this call when
    it says yes. The interval runs on the engine's clock (a frozen clock in tests); a
    clock that went back makes it due."""
    key, now = (alias, queue), now_ms()
    with _queue_leases_lock:
        last = _queue_leases_at.get(key)
        if last is not None and 0 <= now - last < QUEUE_LEASES_EVERY_MS:
            return False
        _queue_leases_at[key] = now
    return True


# Locks held by a worker that is not alive (liveness.py). Parameter: the boundary,
# ``liveness.stale_before_ms(now)``.
_STALE_OWNER = (
    # ``locked_by IS NOT NULL`` is implied by the IN, but PostgreSQL only matches a
    # partial index on terms it can see: spell it out so mqlite_msg_owner applies.
    "state = 'locked' AND locked_by IS NOT NULL AND locked_by IN (SELECT w.id FROM mqlite_worker w "
    f"WHERE {liveness.NOT_ALIVE_SQL})"
)


def reclaim_stale_workers(alias: str) -> int:
    """Reclaim the locks of workers that are not alive (liveness.py) under the
    lease-expiry rule, without waiting out their leases."""

    def step(cursor: CursorWrapper, dialect: Dialect, now: int) -> int:
        cursor.execute(
            reclaim_sql(dialect, _STALE_OWNER, "mqlite_msg_owner"),
            [now, now, liveness.stale_before_ms(now), _chunk()],
        )
        rows = cursor.fetchall()
        apply_reclaimed(cursor, dialect, rows)
        return len(rows)

    return _repeat(alias, step)


def prune_workers(alias: str) -> int:
    """Forget worker rows that stopped, or went silent, more than ``WORKER_RETENTION``
    seconds ago (their locks were reclaimed long before)."""
    keep_ms = current().worker_retention_ms

    def step(cursor: CursorWrapper, dialect: Dialect, now: int) -> int:
        cursor.execute(
            "DELETE FROM mqlite_worker WHERE id IN (SELECT id FROM mqlite_worker "
            "WHERE last_seen <= %s LIMIT %s)",
            [now - keep_ms, _chunk()],
        )
        return cursor.rowcount

    return _repeat(alias, step)


def promote_scheduled(alias: str) -> int:
    def step(cursor: CursorWrapper, dialect: Dialect, now: int) -> int:
        cursor.execute(
            "UPDATE mqlite_message SET state = 'active' WHERE seq IN ("
            f" SELECT seq FROM mqlite_message {dialect.index_hint('mqlite_msg_due')}"
            " WHERE state = 'scheduled' AND visible_at <= %s"
            f" ORDER BY visible_at LIMIT %s {dialect.lock_suffix()})",
            [now, _chunk()],
        )
        return cursor.rowcount

    return _repeat(alias, step)


def _ttl_pick(dialect: Dialect) -> str:
    return (
        f"SELECT seq FROM mqlite_message {dialect.index_hint('mqlite_msg_ttl')} "
        f"WHERE expires_at IS NOT NULL AND state IN {lines.LIVE_SQL} AND expires_at <= %s "
        "AND queue_id IN (SELECT id FROM mqlite_queue WHERE dead_letter_on_expire = %s) "
        f"ORDER BY expires_at LIMIT %s {dialect.lock_suffix()}"
    )


def expire_ttl(alias: str) -> int:
    """Messages past their TTL in any live state: dead-lettered (``TTLExpired``) or
    removed, per the queue's ``dead_letter_on_expire``."""

    def bury(cursor: CursorWrapper, dialect: Dialect, now: int) -> int:
        cursor.execute(
            "UPDATE mqlite_message SET state = 'dead_lettered', lock_token = NULL, "
            "locked_until = NULL, locked_by = NULL, dead_letter_reason = %s, "
            "dead_letter_description = 'time to live ran out', dead_lettered_at = %s "
            f"WHERE seq IN ({_ttl_pick(dialect)}) RETURNING {EXPIRED_COLUMNS}",
            [TTL_EXPIRED, now, now, True, _chunk()],
        )
        rows = [ExpiredRow(*r) for r in cursor.fetchall()]
        dead = [Buried(r.queue_id, r.seq, r.order_key, r.batch_id) for r in rows]
        tally.buried(cursor, dialect, dead, "expired")
        _expired(cursor, [(r.queue_id, r.seq) for r in rows], True)
        return len(rows)

    def drop(cursor: CursorWrapper, dialect: Dialect, now: int) -> int:
        cursor.execute(
            f"DELETE FROM mqlite_message WHERE seq IN ({_ttl_pick(dialect)}) "
            f"RETURNING {EXPIRED_COLUMNS}",
            [now, False, _chunk()],
        )
        rows = [ExpiredRow(*r) for r in cursor.fetchall()]
        lines.release_by_queue(cursor, dialect, [(r.queue_id, r.order_key) for r in rows])
        for queue_id, n in Counter(r.queue_id for r in rows).items():
            totals.bump_totals(cursor, dialect, queue_id, expired=n)
        tally.count(cursor, dialect, [(r.batch_id, tally.CANCELLED) for r in rows])
        _expired(cursor, [(r.queue_id, r.seq) for r in rows], False)
        return len(rows)

    return _repeat(alias, bury) + _repeat(alias, drop)


def _expired(cursor: CursorWrapper, rows: list[tuple[int, int]], dead_lettered: bool) -> None:
    """``message_expired`` for the rows a TTL statement just took, after it commits."""
    if not rows or not events.listening(events.message_expired):
        return
    alias = cursor.db.alias
    names = events.queue_names(cursor, [q for q, _ in rows])
    events.after_commit(
        alias,
        events.message_expired,
        [
            {"queue": names[q], "seq": seq, "dead_lettered": dead_lettered, "using": alias}
            for q, seq in rows
        ],
    )


def expire_records(alias: str) -> dict[str, int]:
    """Receipts, receive attempts and dedup records past their time."""
    out = {}
    for table, name in (
        ("mqlite_receipt", "receipts"),
        ("mqlite_attempt", "attempts"),
        ("mqlite_dedup", "dedup"),
    ):

        def step(cursor: CursorWrapper, dialect: Dialect, now: int, table: str = table) -> int:
            cursor.execute(
                f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} "
                "WHERE expires_at <= %s LIMIT %s)",
                [now, _chunk()],
            )
            return cursor.rowcount

        out[name] = _repeat(alias, step)
    return out


def _effective(own: int | None, default: int | None) -> int | None:
    """Per-queue bound over the global default: 0/None inherit, >0 bounds, <0 unbounded."""
    value = default if own is None or own == 0 else own
    if value is None or value <= 0:
        return None
    return int(value)


def dlq_retention(alias: str) -> int:
    """Trim each queue's dead letters, oldest first, to its age/count/bytes bounds."""
    cursor, _ = databases.ctx(alias)
    cursor.execute(f"SELECT {QUEUE_COLUMNS} FROM mqlite_queue")
    queues = [QueueRow(*r) for r in cursor.fetchall()]
    removed = 0
    conf = current()
    for q in queues:
        max_age = _effective(q.dlq_max_age_ms, conf.dlq_max_age_ms)
        max_count = _effective(q.dlq_max_count, conf.dlq_max_count)
        max_bytes = _effective(q.dlq_max_bytes, conf.dlq_max_bytes)
        picks: list[tuple[str, list[Any]]] = []
        if max_age is not None:
            picks.append(
                (
                    "SELECT seq FROM mqlite_message WHERE queue_id = %s "
                    "AND state = 'dead_lettered' AND dead_lettered_at <= %s ORDER BY seq LIMIT %s",
                    [q.id, "now-age", _chunk()],
                )
            )
        if max_count is not None:
            picks.append(
                (
                    "SELECT seq FROM (SELECT seq, row_number() OVER (ORDER BY seq DESC) AS n "
                    "FROM mqlite_message WHERE queue_id = %s AND state = 'dead_lettered') t "
                    "WHERE n > %s ORDER BY seq LIMIT %s",
                    [q.id, max_count, _chunk()],
                )
            )
        if max_bytes is not None:
            picks.append(
                (
                    "SELECT seq FROM (SELECT seq, SUM(length(body)) OVER (ORDER BY seq DESC) AS b "
                    "FROM mqlite_message WHERE queue_id = %s AND state = 'dead_lettered') t "
                    "WHERE b > %s ORDER BY seq LIMIT %s",
                    [q.id, max_bytes, _chunk()],
                )
            )
        for sql, params in picks:

            def step(
                cursor: CursorWrapper,
                dialect: Dialect,
                now: int,
                sql: str = sql,
                params: list[Any] = params,
                q: Any = q,
                max_age: int | None = max_age,
            ) -> int:
                bound = [now - max_age if p == "now-age" and max_age else p for p in params]
                cursor.execute(sql, bound)
                seqs = [r[0] for r in cursor.fetchall()]
                if not seqs:
                    return 0
                delete_rows(cursor, dialect, q.id, "dead_lettered", seqs, "purged")
                return len(seqs)

            removed += _repeat(alias, step)
    return removed


def result_retention(alias: str) -> int:
    """Drop completed messages (kept results) past their queue's ``keep_results`` (all
    of them for a queue that no longer keeps results).

    Driven by the queue table: for each queue, a range seek of ``mqlite_msg_results``
    (queue, completed_at) up to that queue's cutoff, so a pass reads only what it
    deletes plus one probe per queue, however many results are being kept. (Scanning
    the completed rows in ``completed_at`` order and checking each queue's cutoff per
    row, as this pass once did, read every kept result on every pass.)"""

    def step(cursor: CursorWrapper, dialect: Dialect, now: int) -> int:
        cursor.execute(
            "DELETE FROM mqlite_message WHERE seq IN (SELECT m.seq FROM mqlite_queue q "
            f"CROSS JOIN mqlite_message m {dialect.index_hint('mqlite_msg_results')} "
            "WHERE m.queue_id = q.id AND m.state = 'completed' "
            "AND m.completed_at <= %s - COALESCE(q.keep_results_ms, 0) LIMIT %s)",
            [now, _chunk()],
        )
        return cursor.rowcount

    return _repeat(alias, step)


def batch_retention(alias: str) -> int:
    """Delete finished batches past ``BATCH_RETENTION`` that nothing references
    (``batch_retention``)."""
    return _repeat(alias, lambda cursor, dialect, now: retention.step(cursor, now, _chunk()))


def reap(*, using: str | None = None, quiet: bool = False) -> dict[str, int]:
    """Run every maintenance pass once on ``using`` (default: on every queue database);
    returns counts by pass (summed over the databases). ``quiet``: the caller expects
    nothing to do (its last pass found nothing), so the steps share one transaction per
    database until one finds work (the module's docstring)."""
    total: dict[str, int] = {}
    for alias in [using] if using else databases.queue_databases():
        for name, n in _reap(alias, quiet).items():
            total[name] = total.get(name, 0) + n
    return total


def _steps() -> list[tuple[str, Callable[[str], int | dict[str, int]]]]:
    """The pass's steps in order, each ``(name, run(alias))``; ``expire_records`` answers
    a count per kind of record."""
    return [
        ("expired_locks", expire_locks),
        ("stale_worker_locks", reclaim_stale_workers),
        ("promoted", promote_scheduled),
        ("ttl_expired", expire_ttl),
        ("expired_", expire_records),
        ("dlq_trimmed", dlq_retention),
        ("results_pruned", result_retention),
        ("workers_pruned", prune_workers),
        ("batches_pruned", batch_retention),
        ("history_trimmed", _trim_history),
    ]


def _trim_history(alias: str) -> int:
    return _repeat(alias, history.trim_step) if history.trim_due(alias) else 0


def _reap(alias: str, quiet: bool = False) -> dict[str, int]:
    # Sampling first: a minute's sample shows the queue as the minute ended, before this
    # pass's own changes (which belong to the new minute). Outside the quiet transaction.
    out = {"history_sampled": history.sample(alias)}
    steps = iter(_steps())

    def run(name: str, step: Callable[[str], int | dict[str, int]]) -> int:
        n = step(alias)
        counts = {f"{name}{k}": v for k, v in n.items()} if isinstance(n, dict) else {name: n}
        out.update(counts)
        return sum(counts.values())

    if quiet:
        token = _quiet.set(True)
        try:
            with transaction.atomic(using=alias):
                for name, step in steps:
                    if run(name, step):
                        break  # commit this step's chunk; the rest run as an ordinary pass
        finally:
            _quiet.reset(token)
    for name, step in steps:
        run(name, step)
    return out
