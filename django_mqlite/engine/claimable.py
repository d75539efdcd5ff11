"""Whether a claim of a queue could take something now, by a read: ``claimable``.

A worker on SQLite is woken by its commit watcher on every commit another connection
makes, and most of them put nothing in a queue: a completion, a heartbeat, the reaper,
another process's claim. A claim there is a write transaction (``BEGIN IMMEDIATE``,
the database's one write lock) even when it finds nothing, so a worker that claimed on
each of those wake-ups committed an empty transaction a task at a trickle and two a
second idle (docs/benchmark.md). ``claimable`` answers with one read, which takes no
lock and commits nothing, so the worker claims only the queues where a claim could take
a message.

The read errs only towards yes: a queue is claimable when one of its messages is
``active``, unblocked and unexpired (the claim's pick), ``scheduled`` and due (the
claim promotes it first), or ``locked`` with a lapsed lease (the claim's lease return
makes it active). A paused or rate-limited queue may be answered yes and claim
nothing, as before. It never answers no where the claim, run at the same moment, would
take a message: each branch is a condition the claim's own statements test.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import databases, maintenance
from .clock import now_ms

# -- name: claimable -----------------------------------------------------------------------
# Invariant: the names of the queues among those asked for that hold a message the claim
# would take now or make claimable first: active, unblocked and unexpired (PICK, over
# its index), scheduled and due (``promote_due``, over the due index), or locked past
# its lease (``maintenance.LAPSED``, over the queue's locked rows, as the claim's own
# return of its queue's leases). A read. Parameters: the queue names, then now (expiry),
# now (due), now (lapsed).
CLAIMABLE = (
    "SELECT q.name FROM mqlite_queue q WHERE q.name IN ({names}) AND ("
    " EXISTS (SELECT 1 FROM mqlite_message {claim} WHERE queue_id = q.id"
    " AND state = 'active' AND blocked = 0 AND (expires_at IS NULL OR expires_at > %s))"
    " OR EXISTS (SELECT 1 FROM mqlite_message {due} WHERE queue_id = q.id"
    " AND state = 'scheduled' AND visible_at <= %s)"
    " OR EXISTS (SELECT 1 FROM mqlite_message {state} WHERE queue_id = q.id"
    f" AND {maintenance.LAPSED}))"
)


def claimable(alias: str, queues: Iterable[str]) -> set[str]:
    """Those of ``queues`` on database ``alias`` where a claim now could take a message
    (the module's docstring; an unknown queue is not claimable). One read, outside any
    transaction of the caller's making: on SQLite it takes no lock and commits nothing."""
    names = sorted(set(queues))
    if not names:
        return set()
    cursor, dialect = databases.ctx(alias)
    now = now_ms()
    sql = CLAIMABLE.format(
        names=", ".join(["%s"] * len(names)),
        claim=dialect.index_hint("mqlite_msg_claim"),
        due=dialect.index_hint("mqlite_msg_due"),
        state=dialect.index_hint("mqlite_msg_state"),
    )
    cursor.execute(sql, [*names, now, now, now])
    return {row[0] for row in cursor.fetchall()}
