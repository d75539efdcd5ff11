"""Telling waiters that messages finished: what ``mq.wait`` and a task result's
``wait()`` sleep on, instead of polling the row.

The rule, written once: a settlement that finished at least one message (completed,
dead-lettered or forwarded) announces it for its queue, once per statement batch (one
worker flush of many completions is one announcement, not one per message):

- on PostgreSQL by ``pg_notify('mqlite', '#done <queue>')`` in the settlement's
  transaction, delivered at commit (never for a rollback) to every process's shared
  listener (``listen``), which turns it into the in-process wake-up ``done_key(queue)``;
- in this process, on commit, by the same wake-up (``wakeup.notify``);
- on SQLite, which has no NOTIFY, a waiter watches the database's commit counter
  instead (``listen.ensure_watcher``): any commit wakes it for one read of its row.

Nothing else announces (a plain send or claim runs exactly the statements it ran
before): a message finished another way (a TTL expiry, a purge, a cancel before it ran)
is found by the waiter's slow safety poll (``running.WAIT_SAFETY_POLL_S``).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from . import wakeup
from .dialects import Dialect
from .types import Outcome, Settled

#: The payload prefix of a finished-message notification (queue names cannot hold "#").
DONE_NOTE = "#done "
#: The outcomes after which a message is finished (``mq.wait`` returns).
FINAL = frozenset({Outcome.COMPLETED, Outcome.DEAD_LETTERED, Outcome.FORWARDED})


def done_key(queue: str) -> str:
    """The wake-up key (and NOTIFY payload) a waiter on ``queue``'s messages sleeps on."""
    return f"{DONE_NOTE}{queue}"


def announce(
    cursor: CursorWrapper, dialect: Dialect, queue: str, settled: Iterable[Settled]
) -> bool:
    """When any of ``settled`` finished its message, tell ``queue``'s waiters once this
    transaction commits (the module's rule); True when it did."""
    if not any(s.outcome in FINAL for s in settled):
        return False
    key = done_key(queue)
    notify = dialect.notify_sql()
    if notify is not None:
        cursor.execute(notify, [key])
    transaction.on_commit(lambda: wake_here(key), using=cursor.db.alias)
    return True


def wake_here(key: str) -> None:
    """This process's waiters on ``key``, once the settlement has committed."""
    wakeup.notify(key)
