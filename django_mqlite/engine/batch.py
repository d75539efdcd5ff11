"""Batches: a group of messages with callbacks enqueued exactly once when the last of
them settles (``mq.batch``, ``mq.get_batch``).

``with mq.batch(on_complete=mq.Callback(queue, body), ...) as b: b.send(queue, body)``
opens ``transaction.atomic`` on the batch's database (joining the caller's transaction
when one is open), writes the batch row, and makes each message ``b.send`` /
``b.send_batch`` sends (by the ordinary send, admission and all) a child: one guarded
``UPDATE`` sets its ``batch_id``, only on a live message in no batch (a send that
producer dedup collapsed into a message already finished, or already in a batch, adds
no child). At the end of the block the batch is sealed with its total: before that no
callback can fire, since the count of an unsealed batch never finishes it, and nothing
is visible to any other transaction until the caller's commits. A block that sent no
child raises ``InvalidArgumentError``; a block that raises rolls the batch and its
children back with the rest.

Counting and firing are ``tally``'s (its docstring has the rule). A batch lives on one
database: its callbacks' queues and its children's must all be there
(``CrossDatabaseError`` otherwise, before anything is written); its database is
``using``, else the one its callbacks' queues live on, else ``MQLITE["DATABASE"]``.

While a block is open, ``current()`` is the batch it builds, in this thread or task:
how an integration (the Django Tasks backend) makes what it enqueues join the batch.

Children join only from the thread that opened the block, the one whose connection
holds the block's transaction. Another thread has its own connection: what it sent
would commit on its own, pointing at a batch no one else can see yet (and gone if the
block rolls back). So ``send``, ``send_batch``, ``join`` and ``check`` from any other
thread (one handed the batch, or one running in a copy of the block's context) raise
``InvalidArgumentError`` before anything is written.
"""

from __future__ import annotations

import base64
import contextvars
import json
import sys
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from django.db import transaction

from ..exceptions import CrossDatabaseError, InvalidArgumentError
from . import arguments, batches, databases, send, tally
from .admission import admit
from .clock import now_ms
from .rows import load_queue
from .types import Callback, OutMessage

# -- name: join_batch ---------------------------------------------------------------------
# A message becomes a child only while it waits for its first delivery and is in no
# batch: one a consumer has (locked, deferred) or has had is partly run, perhaps settled
# before the batch could count it, and one in another batch is counted there. Parameters:
# the batch id, then the seqs.
_JOIN = (
    "UPDATE mqlite_message SET batch_id = %s WHERE batch_id IS NULL "
    "AND state IN ('active', 'scheduled', 'waiting') AND delivery_count = 0 AND seq IN ({seqs}) "
    "RETURNING seq"
)

_current: contextvars.ContextVar[Batch | None] = contextvars.ContextVar(
    "mqlite_batch", default=None
)


def current() -> Batch | None:
    """The batch an open ``mq.batch`` block builds in this context, if any."""
    return _current.get()


class Batch:
    """The batch a ``with mq.batch(...)`` block builds (see the module docstring)."""

    def __init__(
        self,
        *,
        on_complete: Callback | None = None,
        on_success: Callback | None = None,
        on_failure: Callback | None = None,
        using: str | None = None,
    ) -> None:
        given = {"on_complete": on_complete, "on_success": on_success, "on_failure": on_failure}
        self._callbacks = {name: cb for name, cb in given.items() if cb is not None}
        for name, cb in self._callbacks.items():
            if not isinstance(cb, Callback):
                raise InvalidArgumentError(f"{name} must be an mq.Callback")
        self.alias = _alias(using, self._callbacks)
        self.id = 0
        self._children: set[int] = set()
        self._atomic: Any = None
        self._token: contextvars.Token[Batch | None] | None = None
        self._thread = 0  # the opening thread's ident, while the block is open

    # -- the block ---------------------------------------------------------------------

    def __enter__(self) -> Batch:
        now = now_ms()
        specs = {name: stored(cb, now) for name, cb in self._callbacks.items()}
        self._atomic = transaction.atomic(using=self.alias)
        self._atomic.__enter__()
        try:
            cursor, dialect = databases.ctx(self.alias)
            for name, cb in self._callbacks.items():
                tally.check_callback(specs[name], name, load_queue(cursor, cb.queue), now)
            cursor.execute(
                "INSERT INTO mqlite_batch (created_at, sealed, total, completed, failed, "
                f"cancelled, fired, callbacks) VALUES (%s, 0, 0, 0, 0, 0, 0, "
                f"{dialect.json_param()}) RETURNING id",
                [now, json.dumps(specs)],
            )
            self.id = int(cursor.fetchone()[0])
        except BaseException:
            self._atomic.__exit__(*sys.exc_info())
            raise
        self._thread = threading.get_ident()
        self._token = _current.set(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            _current.reset(self._token)
            self._token = None
        if exc_type is None:
            try:
                if not self._children:
                    raise InvalidArgumentError("a batch needs at least one child")
                self._seal()
            except BaseException:
                self._atomic.__exit__(*sys.exc_info())
                raise
        self._atomic.__exit__(exc_type, exc, tb)

    # -- children ----------------------------------------------------------------------

    def send(self, queue: str, body: Any, **options: Any) -> int:
        """Send a child (``mq.send``'s keywords); returns its seq."""
        self.check(queue, options.pop("using", None))
        seq = send.send(queue, body, using=self.alias, **options)
        self.join_sent([seq])
        return seq

    def send_batch(self, queue: str, messages: Sequence[OutMessage]) -> list[int]:
        """Send many children (``mq.send_batch``); a dedup-conflict slot is seq 0."""
        self.check(queue, None)
        seqs = send.send_batch(queue, messages, using=self.alias)
        self.join_sent(seqs)
        return seqs

    def join(self, seqs: Sequence[int]) -> list[int]:
        """Make messages already on the batch's database children; returns their seqs,
        sorted. Each must wait for its first delivery (``active`` or ``scheduled``,
        never delivered) and be in no batch: any other, or an unknown seq, raises
        ``InvalidArgumentError`` and none joins."""
        self._require_open()
        if not isinstance(seqs, list | tuple | set | frozenset):
            raise InvalidArgumentError("seqs must be a list of integers")
        wanted = sorted({arguments.check_seq(s) for s in seqs})
        with transaction.atomic(using=self.alias):  # a refusal takes back what joined
            joined = self._join(wanted)
            refused = sorted(set(wanted) - set(joined))
            if refused:
                raise InvalidArgumentError(
                    f"messages {refused} may not join the batch: a message joins while it "
                    "waits for its first delivery (active or scheduled) and is in no batch; "
                    "none joined"
                )
        self._children.update(joined)
        return joined

    def join_sent(self, seqs: Sequence[int]) -> list[int]:
        """Make children of the messages a send on the batch's database just returned;
        returns those that joined. A seq the send collapsed into a message that may not
        join (``join``'s rule: producer dedup, a unique key's holder), or a dedup-conflict
        slot (0), adds no child."""
        self._require_open()
        joined = self._join(sorted({s for s in seqs if s and s not in self._children}))
        self._children.update(joined)
        return joined

    def _join(self, seqs: list[int]) -> list[int]:
        joined: list[int] = []
        cursor, _ = databases.ctx(self.alias)
        for chunk in batches.chunks(seqs, 500):
            cursor.execute(_JOIN.format(seqs=batches.placeholders(len(chunk))), [self.id, *chunk])
            joined += [r[0] for r in cursor.fetchall()]
        return sorted(joined)

    def check(self, queue: str, using: str | None) -> None:
        """Refuse (``CrossDatabaseError``) a child on ``queue`` that would not live on
        the batch's database, before it is sent."""
        self._require_open()
        alias = databases.alias_of(using, queue)
        if alias != self.alias:
            raise CrossDatabaseError(
                f"queue {queue!r} lives on database {alias!r}; this batch lives on "
                f"{self.alias!r} (pass mq.batch(using=...) to put it there)"
            )

    def _require_open(self) -> None:
        if self._token is None:
            raise InvalidArgumentError("children are sent inside the batch's with block")
        if threading.get_ident() != self._thread:
            raise InvalidArgumentError(
                "children are sent from the thread that opened the batch's with block "
                "(its transaction is that thread's); nothing was written"
            )

    def _seal(self) -> None:
        cursor, dialect = databases.ctx(self.alias)
        cursor.execute(
            "UPDATE mqlite_batch SET sealed = 1, total = %s WHERE id = %s AND sealed = 0 "
            f"RETURNING {tally.BATCH_COLUMNS}",
            [len(self._children), self.id],
        )
        # Children settled inside the block itself (a drain in the same transaction)
        # were counted already: the seal may be what finishes the batch.
        tally.finish_all(cursor, dialect, [tally.BatchRow(*cursor.fetchone())])


def _alias(using: str | None, callbacks: dict[str, Callback]) -> str:
    aliases = {databases.alias_of(using, cb.queue) for cb in callbacks.values()}
    if len(aliases) > 1:
        raise CrossDatabaseError(
            f"the callbacks' queues live on different databases ({', '.join(sorted(aliases))})"
        )
    return aliases.pop() if aliases else databases.alias_of(using)


def stored(cb: Callback, now: int) -> dict[str, Any]:
    """A callback as stored on the batch: the admitted message (so what cannot be sent
    is refused now, with nothing written), re-sent through admission when it fires."""
    msg = cb.message
    arguments.check_queue_name(cb.queue)
    if msg.scheduled_at is not None:
        raise InvalidArgumentError("a callback takes delay=, not scheduled_at=")
    if msg.unique_key is not None or msg.on_conflict is not None or msg.unique_while is not None:
        raise InvalidArgumentError("a callback takes no unique_key (it is enqueued once)")
    if msg.depends_on is not None:
        raise InvalidArgumentError("a callback takes no depends_on (it is enqueued at the end)")
    row = admit(msg, now)
    return {
        "queue": cb.queue,
        "body": base64.b64encode(row.body).decode("ascii"),
        "content_type": row.content_type,
        "message_id": row.message_id,
        "group_id": row.group_id,
        "subject": row.subject,
        "properties": None if row.properties is None else json.loads(row.properties),
        "correlation_id": row.correlation_id,
        "reply_to": row.reply_to,
        "priority": row.priority,
        "delay_ms": row.visible_at - now if row.visible_at > now else None,
        "ttl_ms": row.ttl_ms,
    }
