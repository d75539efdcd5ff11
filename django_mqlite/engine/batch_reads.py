"""Reading batches: one batch's progress (``get_batch``), the batches of a database
(``list_batches``, newest first: those made with ``mq.batch``, not the batch of one a
chain step or a message others depend on gets, ``nodes``) and the kept results of a
batch's children (``batch_results``)."""

from __future__ import annotations

from typing import Any

from ..exceptions import BatchNotFoundError, InvalidArgumentError
from . import arguments, databases, nodes, tally
from .clock import from_ms
from .dialects import Dialect
from .types import BatchInfo, BatchState

_SELECT = f"SELECT {tally.BATCH_COLUMNS}, created_at, finished_at, callback_error FROM mqlite_batch"
#: What ``list_batches`` returns at most.
MAX_LIST = 1000


def _info(dialect: Dialect, found: Any) -> BatchInfo:
    *counted, created_at, finished_at, error = found
    row = tally.BatchRow(*counted)
    return BatchInfo(
        id=row.id,
        total=row.total,
        pending=row.pending if row.sealed else row.total,
        completed=row.completed,
        failed=row.failed,
        cancelled=row.cancelled,
        state=BatchState.of(sealed=bool(row.sealed), pending=row.pending),
        created_at=from_ms(created_at),
        finished_at=None if finished_at is None else from_ms(finished_at),
        callbacks=dict(dialect.load_json(row.callback_seqs) or {}),
        callback_error=error,
    )


def get_batch(batch_id: int, *, using: str | None = None) -> BatchInfo:
    """A batch's progress (``BatchInfo``); ``BatchNotFoundError`` for an unknown id."""
    arguments.check_seq(batch_id)
    alias = databases.alias_of(using)
    cursor, dialect = databases.ctx(alias)
    cursor.execute(f"{_SELECT} WHERE id = %s", [batch_id])
    found = cursor.fetchone()
    if found is None:
        raise BatchNotFoundError(f"batch {batch_id} does not exist on {alias!r}")
    return _info(dialect, found)


def list_batches(
    *, state: str | None = None, limit: int = 50, using: str | None = None
) -> list[BatchInfo]:
    """The batches made with ``mq.batch`` on a database, newest first, at most ``limit``
    (up to 1000); ``state`` ``"running"`` or ``"finished"`` keeps those (an open batch
    is seen only by the transaction that makes it)."""
    if state not in (None, BatchState.RUNNING.value, BatchState.FINISHED.value):
        raise InvalidArgumentError("state must be 'running' or 'finished'")
    limit = arguments.check_int(limit, "limit", 1, MAX_LIST)
    pending = "total - completed - failed - cancelled"
    where = {
        None: "",
        BatchState.RUNNING.value: f"AND sealed = 1 AND {pending} > 0 ",
        BatchState.FINISHED.value: f"AND sealed = 1 AND {pending} = 0 ",
    }[state]
    cursor, dialect = databases.ctx(databases.alias_of(using))
    cursor.execute(f"{_SELECT} WHERE seq IS NULL {where}ORDER BY id DESC LIMIT %s", [limit])
    return [_info(dialect, r) for r in cursor.fetchall()]


def batch_results(batch_id: int, *, using: str | None = None) -> dict[int, Any]:
    """The kept results of a batch's completed children, by seq (children on queues
    that keep results; a child whose queue does not keep them is not there)."""
    arguments.check_seq(batch_id)
    cursor, dialect = databases.ctx(databases.alias_of(using))
    cursor.execute(
        f"SELECT seq, result FROM mqlite_message WHERE {nodes.CHILDREN_SQL} "
        "AND state = 'completed' ORDER BY seq",
        [batch_id, batch_id],
    )
    return {seq: dialect.load_json(result) for seq, result in cursor.fetchall()}
