"""A batch's children counted, and its callbacks fired: the one hook every terminal
transition of a message calls.

A child of a batch is a message whose ``batch_id`` is set (``batch``). Every statement
that ends a message returns its ``batch_id`` beside what it returned already, and the
path that ran it calls ``count`` in the same transaction with an outcome per row:

- ``completed``: a completion (removed, or kept with its result), a receive-and-delete;
- ``failed``: every dead letter, whatever its reason (``dead_letters.buried``: reject,
  abandon on the last delivery, lease expiry, a dead worker's lock, TTL, a cancelled
  task);
- ``cancelled``: removed without having run: ``cancel_scheduled``, a purge of waiting
  messages, a forced ``delete_queue`` of live ones, TTL expiry on a queue that does not
  dead-letter;
- ``reopened``: a redrive of a dead child (``failed`` goes back down: the batch is
  running again).

A purge of dead letters counts nothing: they were counted when they died. A dead letter
forwarded to another queue (``forward_dead_letters_to``) leaves its batch there, counted
as failed; what becomes of the copy is the other queue's business.

``count`` runs nothing for rows without a batch, so a plain message's settlement runs
exactly the statements it ran before batches existed. For the rows of batches it runs
one guarded ``UPDATE`` over all their batches (joined to a ``VALUES`` list of the
increments), which cannot count a sealed batch past its total; on PostgreSQL the batch
rows it updates stay locked until the transaction ends, and on SQLite writers are
serialized, so the settler whose increment brings a sealed batch's pending count to 0
is the only one that sees it at 0 with its callbacks unfired: it marks them fired (a
second guarded statement) and enqueues them through the ordinary send, in the same
transaction as the settlement. The callbacks are therefore enqueued exactly once, when
and only when that settlement commits; a rollback takes back the count and the
callbacks together.

The same finish ends what follows a message's own node (``nodes``): a chain step's next
step is enqueued, with the step's result, when the step completed (``STEP_BIT`` in
``fired``: at most once); the messages that wait for the node are released or
dead-lettered (``dependencies``). Dead-lettering them ends them, so ``count`` runs again
for their own nodes (a failure goes down a chain of dependents within the one
transaction).

A node within an ``mq.batch`` (``parent_id``: a child something depends on, ``nodes``)
counts in that batch, in the same transaction, when it finishes (as its message would
have: completed, failed or cancelled), and a reopen of the node (its dead message
redriven) reopens the batch. Settling children of several batches locks them, and the
batches their nodes count in, in id order first; a single count locks its node, then
the node's batch, as every path does (a message's row, then its node, then the batch).

Each callback is enqueued at most once in a batch's life. After a redrive re-opens a
finished batch, a callback that already fired does not fire again; one that had not
(``on_success`` of a batch that failed, once the redriven children complete) fires when
the batch finishes again and its condition holds.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.backends.utils import CursorWrapper

from ..exceptions import MQLiteError
from . import batches, chain_steps, dead_letters, dependencies, send
from .admission import admit
from .clock import now_ms
from .dialects import Dialect
from .prepare import for_queue
from .rows import QueueRow, columns
from .types import OutMessage

COMPLETED = "completed"
FAILED = "failed"
CANCELLED = "cancelled"
REOPENED = "reopened"

#: The callbacks, their bit in ``mqlite_batch.fired``, in the order they are enqueued.
CALLBACK_BITS = {"on_complete": 1, "on_success": 2, "on_failure": 4}
#: A chain step's node: its next step was enqueued.
STEP_BIT = 8


@dataclass(slots=True)
class BatchRow:
    """A batch as its counting statement returns it."""

    id: int
    sealed: int
    total: int
    completed: int
    failed: int
    cancelled: int
    fired: int
    callbacks: Any
    callback_seqs: Any
    #: A message's own node (``nodes``): the message; its chain's remaining steps; 1
    #: when messages wait for it (``dependencies``).
    seq: int | None
    steps: Any
    awaited: int
    #: The node of a child of an ``mq.batch`` (``nodes``): that batch.
    parent_id: int | None

    @property
    def pending(self) -> int:
        return self.total - self.completed - self.failed - self.cancelled


BATCH_COLUMNS = columns(BatchRow)
_RETURNING = ", ".join(f"mqlite_batch.{c}" for c in BATCH_COLUMNS.split(", "))

# -- name: count_children -----------------------------------------------------------------
# Add each batch's increments (completed, failed, cancelled; a reopen is failed - 1).
# Guarded: a sealed batch never counts past its total, and ``failed`` never goes below
# zero. Parameters: the VALUES rows (batch id, +completed, +failed, +cancelled).
COUNT = (
    "WITH v (bid, dc, df, dx) AS (VALUES {values}) "
    "UPDATE mqlite_batch SET completed = completed + v.dc, failed = failed + v.df, "
    "cancelled = cancelled + v.dx, "
    "finished_at = CASE WHEN v.df < 0 THEN NULL ELSE finished_at END "
    "FROM v WHERE mqlite_batch.id = v.bid AND mqlite_batch.failed + v.df >= 0 "
    "AND (mqlite_batch.sealed = 0 OR mqlite_batch.total - mqlite_batch.completed "
    "- mqlite_batch.failed - mqlite_batch.cancelled >= v.dc + v.df + v.dx) "
    f"RETURNING {_RETURNING}"
)

_DELTA = {COMPLETED: (1, 0, 0), FAILED: (0, 1, 0), CANCELLED: (0, 0, 1), REOPENED: (0, -1, 0)}


def count(
    cursor: CursorWrapper,
    dialect: Dialect,
    outcomes: Iterable[tuple[int | None, str]],
    results: Mapping[int, Any] | None = None,
) -> None:
    """Count each (batch id, outcome) of rows a statement just ended (``batch_id`` None:
    not a child, nothing to do), and fire the callbacks of a batch this finishes.
    ``results``: by batch id, the result a completion of a node's message carried (a
    chain step passes it to the next)."""
    per: dict[int, list[int]] = {}
    for batch_id, outcome in outcomes:
        if batch_id is None:
            continue
        delta = per.setdefault(int(batch_id), [0, 0, 0])
        for k, d in enumerate(_DELTA[outcome]):
            delta[k] += d
    if not per:
        return
    ids = sorted(per)
    if len(ids) > 1 and dialect.concurrent_writers:
        _lock(cursor, dialect, ids)
    params: list[Any] = []
    for batch_id in ids:
        params += [batch_id, *per[batch_id]]
    cursor.execute(COUNT.format(values=", ".join(["(%s, %s, %s, %s)"] * len(ids))), params)
    rows = [BatchRow(*r) for r in cursor.fetchall()]
    finish_all(cursor, dialect, rows, results)
    # A node reopened (its dead child redriven) had counted as failed in its batch.
    reopened = [(r.parent_id, REOPENED) for r in rows if r.parent_id and per[r.id][1] < 0]
    if reopened:
        count(cursor, dialect, reopened)


def _lock(cursor: CursorWrapper, dialect: Dialect, ids: list[int]) -> None:
    """Lock these batches, and the batches their nodes count in, in id order: two
    settlements that each end children of the same two batches must lock those rows in
    one order, or each could wait for the other. A node's ``parent_id`` never changes,
    so it is read before the lock."""
    marks = batches.placeholders(len(ids))
    cursor.execute(
        f"SELECT parent_id FROM mqlite_batch WHERE id IN ({marks}) AND parent_id IS NOT NULL",
        ids,
    )
    every = sorted(set(ids) | {r[0] for r in cursor.fetchall()})
    cursor.execute(
        f"SELECT id FROM mqlite_batch WHERE id IN ({batches.placeholders(len(every))}) "
        f"ORDER BY id {dialect.row_lock_sql(exclusive=True)}",
        every,
    )
    cursor.fetchall()


def finish_all(
    cursor: CursorWrapper,
    dialect: Dialect,
    rows: Sequence[BatchRow],
    results: Mapping[int, Any] | None = None,
) -> None:
    """``finish`` each of ``rows`` (just counted, locked by this transaction), then
    release or fail what waits for those that finished, in one pass."""
    ended = [r for r in rows if finish(cursor, dialect, r, (results or {}).get(r.id))]
    awaited = [r for r in ended if r.awaited]
    if awaited:
        _dependents(cursor, dialect, awaited)
    # A node within an mq.batch counts in it as its message would have (``nodes``).
    within = [(r.parent_id, _outcome(r)) for r in ended if r.parent_id]
    if within:
        count(cursor, dialect, within)


def _outcome(row: BatchRow) -> str:
    """How a finished node counts in the batch it sits in."""
    if row.completed == row.total:
        return COMPLETED
    return FAILED if row.failed else CANCELLED


def finish(cursor: CursorWrapper, dialect: Dialect, row: BatchRow, result: Any = None) -> bool:
    """If ``row`` (as this transaction just locked and counted it) is sealed with no
    child pending, mark it finished and enqueue each callback (and a chain's next
    step, with ``result``) that is due and has not fired. A callback that cannot be
    enqueued (checked when the batch was made, but its queue was deleted or changed
    since) is recorded in ``callback_error`` rather than failing the settlement. True
    when this finished it (the caller then sees to what waits for it, ``finish_all``)."""
    if not row.sealed or row.pending != 0:
        return False
    specs = dialect.load_json(row.callbacks) or {}
    due = 0
    for name, bit in CALLBACK_BITS.items():
        if name in specs and not row.fired & bit and _condition(name, row):
            due |= bit
    steps = dialect.load_json(row.steps) if row.steps is not None else None
    if steps and not row.fired & STEP_BIT and row.completed == row.total:
        due |= STEP_BIT
    now = now_ms()
    cursor.execute(
        "UPDATE mqlite_batch SET fired = %s, finished_at = %s "
        "WHERE id = %s AND fired = %s AND sealed = 1",
        [row.fired | due, now, row.id, row.fired],
    )
    if cursor.rowcount != 1:
        return False
    if not due:
        return True
    seqs = dict(dialect.load_json(row.callback_seqs) or {})
    errors: list[str] = []
    for name, bit in CALLBACK_BITS.items():
        if due & bit:
            spec = specs[name]
            msg = _message(spec, name, row)
            try:
                seqs[name] = send.enqueue_in(cursor.db.alias, spec["queue"], msg)
            except MQLiteError as exc:
                errors.append(f"{name}: {exc}")
    if due & STEP_BIT:
        try:
            seqs["then"] = chain_steps.enqueue_next(cursor, dialect, steps or [], row.seq, result)
        except MQLiteError as exc:
            errors.append(f"then: {exc}")
    cursor.execute(
        f"UPDATE mqlite_batch SET callback_seqs = {dialect.json_param()}, "
        "callback_error = COALESCE(%s, callback_error) WHERE id = %s",
        [json.dumps(seqs), "; ".join(errors) or None, row.id],
    )
    return True


#: A batch whose every number is as wide as its column allows: the summary with which a
#: callback's message is checked when the batch is made (``check_callback``).
_WIDE = 2**31 - 1
_WIDEST = BatchRow(2**63 - 1, 1, _WIDE, _WIDE, _WIDE, _WIDE, 7, None, None, None, None, 0, None)


def check_callback(spec: dict[str, Any], name: str, queue: QueueRow, now: int) -> None:
    """Raise what enqueuing callback ``name`` (``spec`` as stored) on ``queue`` would
    raise for its message: admission with the batch's summary in its properties, then
    the queue's rules (a group on a ``group_fifo`` queue). Run when the batch is made,
    so a callback that could never be enqueued is refused then, not found out by the
    settlement that finishes the batch."""
    for_queue(admit(_message(spec, name, _WIDEST), now), queue)


def _dependents(cursor: CursorWrapper, dialect: Dialect, rows: Sequence[BatchRow]) -> None:
    """Release the messages waiting for these just finished nodes, or dead-letter them
    where a node failed (``dependencies``), in the finishing settlement's transaction,
    all of them locked first in seq order."""
    taken = dependencies.taken(cursor, [r.id for r in rows])
    if not taken:
        return
    done: Counter[int] = Counter()
    why: dict[int, str] = {}
    for r in rows:
        for seq in taken.get(r.id, []):
            if r.completed == r.total:
                done[seq] += 1
            else:
                what = f"message {r.seq}" if r.seq is not None else f"batch {r.id}"
                why.setdefault(
                    seq,
                    f"{what} did not complete ({r.failed} dead-lettered, {r.cancelled} cancelled)",
                )
    dependencies.lock(cursor, dialect, sorted(set(done) | set(why)))
    now = now_ms()
    done = Counter({seq: k for seq, k in done.items() if seq not in why})
    if done:
        queue_ids = dependencies.release(cursor, dialect, done, now)
        if queue_ids:
            send.wake(cursor, dialect, dependencies.queue_names(cursor, queue_ids))
    if why:
        dead = [dead_letters.Buried(*r) for r in dependencies.fail(cursor, why, now)]
        buried(cursor, dialect, dead, "rejected")


def buried(
    cursor: CursorWrapper,
    dialect: Dialect,
    rows: Sequence[dead_letters.Buried],
    cause: str,
    *,
    source: QueueRow | None = None,
) -> dict[int, str]:
    """What every path that dead-letters rows calls, in its transaction: the queue's
    side (``dead_letters.buried``: lines, totals, forwarding; its answer returned),
    then each row counted as failed in its batch or node."""
    forwarded = dead_letters.buried(cursor, dialect, rows, cause, source=source)
    count(cursor, dialect, [(r.batch_id, FAILED) for r in rows])
    return forwarded


def _condition(name: str, row: BatchRow) -> bool:
    if name == "on_success":
        return row.completed == row.total
    if name == "on_failure":
        return row.failed > 0
    return True


def _message(spec: dict[str, Any], name: str, row: BatchRow) -> OutMessage:
    """The callback's message: as given to ``mq.Callback``, its properties carrying the
    batch and its summary."""
    summary = {
        "batch_id": row.id,
        "batch_callback": name,
        "batch_total": row.total,
        "batch_completed": row.completed,
        "batch_failed": row.failed,
        "batch_cancelled": row.cancelled,
    }
    return OutMessage(
        base64.b64decode(spec["body"]),
        content_type=spec["content_type"],
        message_id=spec["message_id"],
        group_id=spec["group_id"],
        subject=spec["subject"],
        properties={**(spec["properties"] or {}), **summary},
        correlation_id=spec["correlation_id"],
        reply_to=spec["reply_to"],
        priority=spec["priority"],
        delay=None if spec["delay_ms"] is None else spec["delay_ms"] / 1000,
        ttl=None if spec["ttl_ms"] is None else spec["ttl_ms"] / 1000,
    )
