"""A message's own node: a batch of one (a row of ``mqlite_batch`` whose ``seq`` is the
message) made for a message that something follows: a chain step (its node carries the
chain's remaining steps in ``steps``) or a message others depend on (``dependencies``).

The node is sealed with a total of 1 and the message becomes its child (``batch_id``),
so the message's end is counted there by ``tally`` like any batch child's, in the
transaction of the statement that ends it, and the node finishes exactly once: what
follows the message (the next step, its dependents) hangs on the node's finish. A plain
message has no node and its settlement runs no statement for one. A message joins a
node only while it is in no batch and has not been delivered."""

from __future__ import annotations

from typing import Any

from django.db.backends.utils import CursorWrapper

from .clock import now_ms
from .dialects import Dialect


def make(cursor: CursorWrapper, dialect: Dialect, seq: int, steps: Any = None) -> int:
    """Make ``seq``'s node (with ``steps``, JSON text of a chain's remaining steps, or
    None) and make the message its child; returns the node's id. The caller has checked
    (and, on PostgreSQL, locked) the message: live, in no batch."""
    cursor.execute(
        "INSERT INTO mqlite_batch (created_at, sealed, total, completed, failed, cancelled, "
        f"fired, awaited, seq, steps) VALUES (%s, 1, 1, 0, 0, 0, 0, 0, %s, {dialect.json_param()}) "
        "RETURNING id",
        [now_ms(), seq, steps],
    )
    node = int(cursor.fetchone()[0])
    cursor.execute(
        "UPDATE mqlite_message SET batch_id = %s WHERE seq = %s AND batch_id IS NULL", [node, seq]
    )
    assert cursor.rowcount == 1, f"message {seq} was checked to be in no batch"
    return node


def is_own(cursor: CursorWrapper, batch_id: int) -> bool:
    """Whether batch ``batch_id`` is a message's own node (not an ``mq.batch``)."""
    cursor.execute("SELECT seq FROM mqlite_batch WHERE id = %s", [batch_id])
    row = cursor.fetchone()
    return row is not None and row[0] is not None
