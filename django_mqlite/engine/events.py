"""Lifecycle signals: what the engine tells a project after a transition committed.

``django_mqlite.signals`` re-exports these; they are defined here because the engine
functions that make each transition send them (one place per transition, below every
surface: Python API, worker, reaper, admin, HTTP, SQS, Tasks):

=========================  ==========================================================
signal                     sent by
=========================  ==========================================================
``message_sent``           ``send`` / ``send_batch`` (both paths) and topic ``publish``
``message_dead_lettered``  ``dead_letters.buried`` (reject, last abandon, lease expiry,
                           dead worker, TTL, cancelled task)
``message_redriven``       ``dead_letters.move_rows`` (redrive and DLQ forwarding)
``message_expired``        ``maintenance.expire_ttl`` (dead-lettered or removed)
``worker_started``         the worker's registration (``worker.background``)
``worker_stopped``         the worker's clean stop (``worker.background``)
=========================  ==========================================================

Every message signal is sent once per message, with ``queue`` (name), ``seq`` and
``using`` (the database alias), after the transaction that made the change commits on
that database (``transaction.on_commit(using=alias)``), so a rolled-back send or
settlement sends nothing. Set-based statements (the reaper's) register one callback for
the rows their ``RETURNING`` gave, which then sends one signal per message.

Cost: with no receiver connected a transition does not build its arguments nor register
anything (``listening``): the hot path is what it was. Receivers run through
``send_robust``: one that raises is logged (``django_mqlite.signals``), never undoes the
committed change nor stops the caller.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import transaction
from django.db.backends.utils import CursorWrapper
from django.dispatch import Signal

from . import batches

logger = logging.getLogger("django_mqlite.signals")

#: A message was written to a queue: ``queue``, ``seq``, ``using``.
message_sent = Signal()
#: A message became a dead letter: ``queue``, ``seq``, ``reason``, ``using``.
message_dead_lettered = Signal()
#: A dead letter was moved back to active: ``queue`` (where it was), ``seq``,
#: ``to_queue`` (where it is now), ``using``.
message_redriven = Signal()
#: A message's time to live ran out: ``queue``, ``seq``, ``dead_lettered`` (False when
#: the queue drops expired messages), ``using``.
message_expired = Signal()
#: A worker registered: ``worker_id``, ``queues``, ``using``.
worker_started = Signal()
#: A worker stopped cleanly: ``worker_id``, ``queues``, ``using``.
worker_stopped = Signal()

SENDER = "django_mqlite"


def listening(signal: Signal) -> bool:
    """Whether anything is connected to ``signal`` (the cheap test first)."""
    return bool(signal.receivers) and signal.has_listeners()


class Deliver:
    """An on-commit callback sending ``signal`` once for each of ``events``."""

    def __init__(self, signal: Signal, events: list[dict[str, Any]]) -> None:
        self.signal = signal
        self.events = events

    def __call__(self) -> None:
        for kwargs in self.events:
            for receiver, result in self.signal.send_robust(SENDER, **kwargs):
                if isinstance(result, Exception):
                    logger.error(
                        "signal receiver %r failed", receiver, exc_info=result, extra=kwargs
                    )


def after_commit(alias: str, signal: Signal, events: list[dict[str, Any]]) -> None:
    """Send ``signal`` for each of ``events`` once the transaction on ``alias`` commits
    (at once outside a transaction: what was written is committed)."""
    if events:
        transaction.on_commit(Deliver(signal, events), using=alias)


def sent(alias: str, queue: str, seqs: Iterable[int]) -> None:
    """``message_sent`` for the rows a send wrote (call only when ``listening``)."""
    after_commit(alias, message_sent, [{"queue": queue, "seq": s, "using": alias} for s in seqs])


def queue_names(cursor: CursorWrapper, ids: Iterable[int]) -> dict[int, str]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    cursor.execute(
        f"SELECT id, name FROM mqlite_queue WHERE id IN ({batches.placeholders(len(wanted))})",
        wanted,
    )
    return {int(i): str(n) for i, n in cursor.fetchall()}


def dead_lettered(cursor: CursorWrapper, seqs: Sequence[int]) -> None:
    """``message_dead_lettered`` for rows just buried, read back (before any forwarding
    clears it) with their queue and reason (call only when ``listening``)."""
    cursor.execute(
        "SELECT m.seq, q.name, m.dead_letter_reason FROM mqlite_message m "
        "JOIN mqlite_queue q ON q.id = m.queue_id "
        f"WHERE m.seq IN ({batches.placeholders(len(seqs))}) ORDER BY m.seq",
        list(seqs),
    )
    alias = cursor.db.alias
    events = [
        {"queue": name, "seq": int(seq), "reason": reason or "", "using": alias}
        for seq, name, reason in cursor.fetchall()
    ]
    after_commit(alias, message_dead_lettered, events)
