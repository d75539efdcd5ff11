"""Finished batch retention: a batch row (an ``mq.batch``, or a message's own node) is
deleted by the reaper ``MQLITE["BATCH_RETENTION"]`` seconds after it finished (default
7 days; None keeps them), so ``mqlite_batch`` does not grow forever.

A batch is deleted only when nothing can read or count it any more:

- it is finished: sealed, every child settled, ``finished_at`` past the cutoff (a
  redrive that re-opens it clears ``finished_at``);
- no message points at it (``batch_id``): a dead-lettered child could be redriven and
  counted there again, and a kept result is read through it (``mq.batch_results``);
  such a batch stays until DLQ or result retention has removed its children;
- no message waits for it (an edge in ``mqlite_dependency``);
- no node counts in it (``parent_id``: a child something depends on).

A chain step's node that holds the chain's remaining steps is kept by the same rule
while its step's message is there (a dead step's redrive resumes the chain); once the
step is gone (purged, or its dead letter removed) the chain has ended.

One set-based statement per chunk (``maintenance._repeat``), seeking the oldest finished
batches by the ``mqlite_batch_finished`` index; its conditions hold in the statement that
deletes, so a batch re-opened or referenced meanwhile is not deleted. A settlement
never reads a deleted batch: whatever could count in it (a child row, a node) keeps it.
"""

from __future__ import annotations

from django.db.backends.utils import CursorWrapper

from ..conf import current

# -- name: delete_finished_batches --------------------------------------------------------
# Parameters: the cutoff (epoch ms), the chunk size.
DELETE = (
    "DELETE FROM mqlite_batch WHERE id IN (SELECT b.id FROM mqlite_batch b "
    "WHERE b.finished_at IS NOT NULL AND b.finished_at <= %s AND b.sealed = 1 "
    "AND b.total = b.completed + b.failed + b.cancelled "
    "AND NOT EXISTS (SELECT 1 FROM mqlite_message m WHERE m.batch_id = b.id) "
    "AND NOT EXISTS (SELECT 1 FROM mqlite_dependency d WHERE d.batch_id = b.id) "
    "AND NOT EXISTS (SELECT 1 FROM mqlite_batch c WHERE c.parent_id = b.id) "
    "ORDER BY b.finished_at LIMIT %s)"
)


def step(cursor: CursorWrapper, now: int, chunk: int) -> int:
    """Delete up to ``chunk`` finished batches past the retention; how many."""
    keep_ms = current().batch_retention_ms
    if keep_ms is None:
        return 0
    cursor.execute(DELETE, [now - keep_ms, chunk])
    return cursor.rowcount
