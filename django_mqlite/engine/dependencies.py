"""Dependencies: a message that waits (``send(..., depends_on=[...])``) until what it
depends on has completed, non-claimable in the meantime, and is dead-lettered
(``DependencyFailed``) when that cannot happen any more.

What a message can depend on is a *node*: a batch (``mq.batch``), or a message's own
node, a batch of one made for it the first time something depends on it (``nodes``).
A node finishes when its last child ends (``tally``): *succeeded* when every child
completed, *failed* when one was dead-lettered or removed without running (cancelled,
purged, dropped by TTL). Rule, for a message sent with ``depends_on``:

- at the send, in its transaction, each dependency's row is locked (the message's, on
  PostgreSQL ``FOR UPDATE``; the node's, by the guarded ``UPDATE`` that marks it
  awaited) and read: one that already succeeded (a completed message kept with its
  result, a finished batch with every child completed) counts as done; one still
  running gets an edge in ``mqlite_dependency``; one that already failed, or a seq that
  is not there (never sent, or completed and not kept), or a queue or batch on another
  database, is a typed error, with nothing written. A child of an ``mq.batch`` gets a
  node within its batch (``nodes``: the batch counts the node as it did the child).
  The message is stored ``waiting`` with ``waiting_on`` = the number of edges (or as it
  would be without them when there are none);
- the settlement that finishes a node deletes its edges (``DELETE … RETURNING``: one
  settler gets them, once) in its own transaction and, when the node succeeded, takes
  one off each waiting message's ``waiting_on`` in one guarded ``UPDATE`` that makes it
  ``active`` (or ``scheduled`` until its own delay ends) when that was the last; when
  the node failed, it dead-letters the waiting messages (``DependencyFailed``, counted
  as rejected), which ends them in turn (their own dependents fail the same way).

Because the edge is written under the node's row lock and the finishing settlement
takes that lock before it reads the edges, a dependency added while its node finishes
is seen by exactly one of them: by the send (the node had finished) or by the
settlement (the edge was there). A waiting message holds its group's line like a
scheduled one; a redrive of a dead node (or of a dependent that died of it) revives no
edge, so a dependent dead-lettered with ``DependencyFailed`` stays so until it is
redriven itself (it then runs without waiting).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.backends.utils import CursorWrapper

from ..exceptions import CrossDatabaseError, InvalidArgumentError
from . import arguments, batches, databases, nodes
from .dialects import Dialect
from .types import BatchRef, MessageRef

#: The reason of a message dead-lettered because a dependency failed.
REASON = "DependencyFailed"


@dataclass(frozen=True)
class Waiting:
    """What a send with ``depends_on`` waits for: the nodes not finished yet."""

    nodes: tuple[int, ...]


def check(depends_on: Any) -> list[Any]:
    """``depends_on`` as a list of references, shape checked before anything is read:
    a seq (an int, on the sender's database), a ``(queue, seq)`` pair, an
    ``mq.MessageRef``, an ``mq.BatchRef`` or an object with ``id`` and ``alias`` (an
    ``mq.Batch``)."""
    if not isinstance(depends_on, list | tuple):
        raise InvalidArgumentError(
            "depends_on must be a list of seqs, (queue, seq) pairs or batches"
        )
    if not depends_on:
        raise InvalidArgumentError("depends_on must name at least one message or batch")
    if len(depends_on) > 500:
        raise InvalidArgumentError("depends_on takes at most 500 dependencies")
    out: list[Any] = []
    for ref in depends_on:
        if isinstance(ref, tuple) and len(ref) == 2:
            arguments.check_queue_name(ref[0])
            out.append((ref[0], arguments.check_seq(ref[1])))
        elif isinstance(ref, MessageRef | BatchRef):
            arguments.check_seq(ref.seq if isinstance(ref, MessageRef) else ref.id)
            if ref.using is not None and not isinstance(ref.using, str):
                raise InvalidArgumentError("depends_on: a reference's using must be an alias")
            out.append(ref)
        elif hasattr(ref, "id") and hasattr(ref, "alias"):
            out.append(ref)
        else:
            out.append(arguments.check_seq(ref))
    return out


def resolve(cursor: CursorWrapper, dialect: Dialect, alias: str, refs: list[Any]) -> Waiting:
    """Lock and read each dependency (see the module docstring) inside the send's
    transaction on ``alias``; the nodes still running, or a typed error."""
    seqs: dict[int, str | None] = {}
    node_ids: set[int] = set()
    for ref in refs:
        if isinstance(ref, int):
            seqs.setdefault(ref, None)
        elif isinstance(ref, tuple):
            queue, seq = ref
            there = databases.alias_of(None, queue)
            if there != alias:
                raise CrossDatabaseError(
                    f"queue {queue!r} lives on database {there!r}; the dependent message "
                    f"lives on {alias!r}"
                )
            seqs[seq] = queue
        elif isinstance(ref, MessageRef):
            _same_database(f"message {ref.seq}", ref.using, alias)
            seqs.setdefault(ref.seq, None)
        elif isinstance(ref, BatchRef):
            _same_database(f"batch {ref.id}", ref.using, alias)
            if nodes.is_own(cursor, ref.id):  # a message's node: name the message
                raise InvalidArgumentError(f"depends_on: batch {ref.id} does not exist")
            node_ids.add(ref.id)
        else:
            if ref.alias != alias:
                raise CrossDatabaseError(
                    f"batch {ref.id} lives on database {ref.alias!r}; the dependent message "
                    f"lives on {alias!r}"
                )
            node_ids.add(int(ref.id))
    if seqs:
        node_ids |= _message_nodes(cursor, dialect, seqs)
    return Waiting(tuple(sorted(n for n in node_ids if _awaits(cursor, n))))


def _same_database(what: str, using: str | None, alias: str) -> None:
    there = alias if using is None else databases.alias_of(using)
    if there != alias:
        raise CrossDatabaseError(
            f"{what} lives on database {there!r}; the dependent message lives on {alias!r}"
        )


def _message_nodes(
    cursor: CursorWrapper, dialect: Dialect, seqs: dict[int, str | None]
) -> set[int]:
    """The nodes of these messages (made for those that have none), each row locked;
    the seqs of messages that already completed (kept with their results) need none."""
    wanted = sorted(seqs)
    cursor.execute(
        "SELECT seq, state, batch_id, queue_id FROM mqlite_message "
        f"WHERE seq IN ({batches.placeholders(len(wanted))}) "
        f"ORDER BY seq {dialect.row_lock_sql(exclusive=True)}",
        wanted,
    )
    found = {r[0]: r[1:] for r in cursor.fetchall()}
    names = _queue_names(cursor, {r[2] for r in found.values()})
    found = {
        seq: (state, batch_id, names.get(qid)) for seq, (state, batch_id, qid) in found.items()
    }
    out: set[int] = set()
    for seq in wanted:
        if seq not in found or (seqs[seq] is not None and found[seq][2] != seqs[seq]):
            where = f" on {seqs[seq]!r}" if seqs[seq] else ""
            raise InvalidArgumentError(
                f"depends_on: message {seq}{where} does not exist (never sent, or completed "
                "on a queue that keeps no results); nothing was written"
            )
        state, batch_id, _queue = found[seq]
        if state == "completed":
            continue
        if state == "dead_lettered":
            raise InvalidArgumentError(
                f"depends_on: message {seq} is dead-lettered; nothing was written"
            )
        if batch_id is None:
            out.add(nodes.make(cursor, dialect, seq))
        elif not nodes.is_own(cursor, batch_id):  # a child of an mq.batch: a node within
            out.add(nodes.make(cursor, dialect, seq, parent=int(batch_id)))
        else:
            out.add(int(batch_id))
    return out


def _awaits(cursor: CursorWrapper, node_id: int) -> bool:
    """Mark the node awaited (which locks it) and read how it stands: True while it
    runs, False once it succeeded; a failed or unknown node is an error."""
    cursor.execute(
        "UPDATE mqlite_batch SET awaited = 1 WHERE id = %s "
        "RETURNING sealed, total, completed, failed, cancelled",
        [node_id],
    )
    row = cursor.fetchone()
    if row is None:
        raise InvalidArgumentError(f"depends_on: batch {node_id} does not exist")
    sealed, total, completed, failed, cancelled = row
    if failed or cancelled:
        raise InvalidArgumentError(
            f"depends_on: batch {node_id} already failed ({failed} dead-lettered, "
            f"{cancelled} cancelled); nothing was written"
        )
    return not (sealed and completed == total)


def wait(cursor: CursorWrapper, seq: int, waiting: Waiting) -> bool:
    """Make the just-sent message ``seq`` wait for ``waiting``'s nodes (nothing to do
    when there are none). False when the row may not wait: the send collapsed into a
    message a consumer already has or had (producer dedup)."""
    if not waiting.nodes:
        return True
    cursor.execute(
        "UPDATE mqlite_message SET state = 'waiting', waiting_on = %s WHERE seq = %s "
        "AND state IN ('active', 'scheduled') AND delivery_count = 0 AND waiting_on = 0",
        [len(waiting.nodes), seq],
    )
    if cursor.rowcount != 1:
        return False
    values = ", ".join(["(%s, %s)"] * len(waiting.nodes))
    cursor.execute(
        f"INSERT INTO mqlite_dependency (batch_id, seq) VALUES {values}",
        [v for node in waiting.nodes for v in (node, seq)],
    )
    return True


# -- the end of a node ---------------------------------------------------------------


def taken(cursor: CursorWrapper, node_ids: Sequence[int]) -> dict[int, list[int]]:
    """By node, the messages that waited for these nodes, their edges deleted (one
    caller gets them, once)."""
    cursor.execute(
        "DELETE FROM mqlite_dependency "
        f"WHERE batch_id IN ({batches.placeholders(len(node_ids))}) RETURNING batch_id, seq",
        list(node_ids),
    )
    out: dict[int, list[int]] = {}
    for node, seq in cursor.fetchall():
        out.setdefault(node, []).append(seq)
    return out


def lock(cursor: CursorWrapper, dialect: Dialect, seqs: Sequence[int]) -> None:
    """Lock these waiting messages in seq order before changing them: two settlements
    that finish nodes waited for by the same messages then never wait for each other
    the other way round (a deadlock on PostgreSQL). Nothing where writes are
    serialized."""
    if not dialect.concurrent_writers or len(seqs) < 2:
        return
    cursor.execute(
        f"SELECT seq FROM mqlite_message WHERE seq IN ({batches.placeholders(len(seqs))}) "
        f"ORDER BY seq {dialect.row_lock_sql(exclusive=True)}",
        sorted(seqs),
    )
    cursor.fetchall()


def release(
    cursor: CursorWrapper, dialect: Dialect, done: Mapping[int, int], now: int
) -> list[int]:
    """``done[seq]`` more dependencies of each waiting message succeeded: those for which
    they were the last become claimable (``active``, or ``scheduled`` until their own
    delay ends), in one statement. Returns the queue ids of the messages made
    claimable."""
    seqs = sorted(done)
    values = ", ".join(["(%s, %s)"] * len(seqs))
    cursor.execute(
        f"WITH v (seq, k) AS (VALUES {values}) "
        "UPDATE mqlite_message SET waiting_on = waiting_on - v.k, state = CASE "
        "WHEN waiting_on > v.k THEN state WHEN visible_at > %s THEN 'scheduled' "
        "ELSE 'active' END "
        "FROM v WHERE mqlite_message.seq = v.seq AND mqlite_message.state = 'waiting' "
        "RETURNING mqlite_message.queue_id, mqlite_message.state",
        [*(x for seq in seqs for x in (seq, done[seq])), now],
    )
    return sorted({q for q, state in cursor.fetchall() if state == "active"})


#: What ``fail`` returns per row: its queue, seq, line and batch.
FAILED_COLUMNS = "queue_id, seq, order_key, batch_id"


def fail(
    cursor: CursorWrapper, why: Mapping[int, str], now: int
) -> list[tuple[int, int, str | None, int | None]]:
    """Dead-letter the waiting messages among ``why``'s (``DependencyFailed``, each with
    its description); the caller buries and counts them (``tally.buried``)."""
    seqs = sorted(why)
    values = ", ".join(["(%s, %s)"] * len(seqs))
    returning = ", ".join(f"mqlite_message.{c}" for c in FAILED_COLUMNS.split(", "))
    cursor.execute(
        f"WITH v (seq, description) AS (VALUES {values}) "
        "UPDATE mqlite_message SET state = 'dead_lettered', waiting_on = 0, "
        "dead_letter_reason = %s, dead_letter_description = v.description, "
        "dead_lettered_at = %s FROM v "
        "WHERE mqlite_message.seq = v.seq AND mqlite_message.state = 'waiting' "
        f"RETURNING {returning}",
        [*(x for seq in seqs for x in (seq, why[seq])), REASON, now],
    )
    return [(q, seq, key, node) for q, seq, key, node in cursor.fetchall()]


def queue_names(cursor: CursorWrapper, queue_ids: Sequence[int]) -> list[str]:
    """The names of these queues."""
    return sorted(_queue_names(cursor, queue_ids).values())


def _queue_names(cursor: CursorWrapper, queue_ids: Any) -> dict[int, str]:
    ids = sorted(queue_ids)
    if not ids:
        return {}
    cursor.execute(
        f"SELECT id, name FROM mqlite_queue WHERE id IN ({batches.placeholders(len(ids))})", ids
    )
    return dict(cursor.fetchall())
