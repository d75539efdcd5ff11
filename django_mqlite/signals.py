"""Django signals for the lifecycle of messages and workers, sent after commit.

Connect receivers as with any Django signal (in an ``AppConfig.ready()``)::

    from django.dispatch import receiver
    from django_mqlite.signals import message_dead_lettered

    @receiver(message_dead_lettered)
    def page_on_call(sender, queue, seq, reason, using, **kwargs):
        if queue == "payments":
            alerts.page(f"payment #{seq} dead-lettered: {reason}")

Each is sent once per event, after the transaction that made it commits on the queue's
database, never for a rolled-back change; the engine function that makes the transition
sends it, whichever surface (Python API, worker, reaper, admin, HTTP, SQS, Tasks) asked.
``sender`` is the string ``"django_mqlite"``. Keyword arguments:

- ``message_sent``: ``queue``, ``seq``, ``using`` (one per new message; a deduplicated
  resend is not a new message);
- ``message_dead_lettered``: ``queue``, ``seq``, ``reason``, ``using``;
- ``message_redriven``: ``queue``, ``seq``, ``to_queue``, ``using`` (a redrive or a DLQ
  forward);
- ``message_expired``: ``queue``, ``seq``, ``dead_lettered``, ``using``;
- ``worker_started`` / ``worker_stopped``: ``worker_id``, ``queues``, ``using``.

See ``django_mqlite.engine.events`` for where each is sent and what it costs.
"""

from __future__ import annotations

from .engine.events import (
    message_dead_lettered,
    message_expired,
    message_redriven,
    message_sent,
    worker_started,
    worker_stopped,
)

__all__ = [
    "message_dead_lettered",
    "message_expired",
    "message_redriven",
    "message_sent",
    "worker_started",
    "worker_stopped",
]
