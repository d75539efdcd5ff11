"""A message's own node: a batch of one (a row of ``mqlite_batch`` whose ``seq`` is the
message) made for a message that something follows: a chain step (its node carries the
chain's remaining steps in ``steps``) or a message others depend on (``dependencies``).

The node is sealed with a total of 1 and the message becomes its child (``batch_id``),
so the message's end is counted there by ``tally`` like any batch child's, in the
transaction of the statement that ends it, and the node finishes exactly once: what
follows the message (the next step, its dependents) hangs on the node's finish. A plain
message has no node and its settlement runs no statement for one. A message joins a
node only while it is in no batch and has not been delivered.

A child of an ``mq.batch`` that something depends on gets a node too, whose
``parent_id`` is the batch: the message becomes the node's child and the node takes
its place in the batch (``tally`` counts the node's outcome there, in the transaction
that finishes the node, and a reopen of the node reopens the batch), so the batch's
counts and callbacks are what they would have been with the message as its child.
``children_sql`` finds a batch's children through their nodes."""

from __future__ import annotations

from typing import Any

from django.db.backends.utils import CursorWrapper

from .clock import now_ms
from .dialects import Dialect


def make(
    cursor: CursorWrapper,
    dialect: Dialect,
    seq: int,
    steps: Any = None,
    parent: int | None = None,
) -> int:
    """Make ``seq``'s node (with ``steps``, JSON text of a chain's remaining steps, or
    None) and make the message its child; returns the node's id. The caller has checked
    (and, on PostgreSQL, locked) the message: live, and in no batch, or a child of the
    ``mq.batch`` ``parent``, in which the node takes its place."""
    cursor.execute(
        "INSERT INTO mqlite_batch (created_at, sealed, total, completed, failed, cancelled, "
        "fired, awaited, seq, steps, parent_id) VALUES (%s, 1, 1, 0, 0, 0, 0, 0, %s, "
        f"{dialect.json_param()}, %s) RETURNING id",
        [now_ms(), seq, steps, parent],
    )
    node = int(cursor.fetchone()[0])
    if parent is None:
        cursor.execute(
            "UPDATE mqlite_message SET batch_id = %s WHERE seq = %s AND batch_id IS NULL",
            [node, seq],
        )
    else:
        cursor.execute(
            "UPDATE mqlite_message SET batch_id = %s WHERE seq = %s AND batch_id = %s",
            [node, seq, parent],
        )
    assert cursor.rowcount == 1, f"message {seq} was checked to be in no batch, or in {parent}"
    return node


def is_own(cursor: CursorWrapper, batch_id: int) -> bool:
    """Whether batch ``batch_id`` is a message's own node (not an ``mq.batch``)."""
    cursor.execute("SELECT seq FROM mqlite_batch WHERE id = %s", [batch_id])
    row = cursor.fetchone()
    return row is not None and row[0] is not None


#: A condition on a message's ``batch_id`` that holds for the children of batch ``%s``
#: (the parameter given twice): its own, and those that sit behind a node of theirs.
CHILDREN_SQL = "(batch_id = %s OR batch_id IN (SELECT id FROM mqlite_batch WHERE parent_id = %s))"
