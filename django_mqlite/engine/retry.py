"""Whole-transaction retry: when the database gives up a transaction to break a cycle of
waits (MariaDB's deadlock, error 1213), the engine runs the transaction again, but only a
transaction it opened itself.

The rule, in full (docs/how-it-works.md, "Deadlocks and lock waits"):

- A deadlock rolls back the whole transaction. When the engine opened that transaction
  (the connection was not in ``transaction.atomic()`` when the verb was called), nothing
  of it is left and nothing outside the database saw it (``on_commit`` callbacks are
  dropped with the rollback; a verb returns only after its commit), so the verb runs
  again from the start, reading the database afresh: up to ``ATTEMPTS`` times in all,
  with a short random pause between tries, as the database's own advice goes.
- Inside the caller's transaction the caller's earlier writes were rolled back too: the
  engine cannot redo them, so the error goes to the caller, whose transaction it is.
- A lock wait timeout (MariaDB 1205) rolls back only the statement that waited
  (``innodb_rollback_on_timeout`` is off by default), so that statement alone is tried
  again, in the transaction, by the MariaDB engine cursor (``dialects.mariadb_sql``).

Which errors qualify is the dialect's to say (``Dialect.restarts_transaction``); on
SQLite (one writer) and PostgreSQL (the engine takes its locks in one order) none does.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

from django.db import OperationalError, connections

from .dialects import dialect_for

T = TypeVar("T")

#: Tries in all, the first included.
ATTEMPTS = 5
#: The longest pause before a retry, in seconds (each is random up to it, doubling).
PAUSE_S = 0.05


def retried(alias: str, verb: Callable[[], T]) -> T:
    """``verb()``, which runs one transaction of its own on ``alias`` (and nothing else
    with effects outside it), run again when the database gave that transaction up (see
    the module's docstring). Inside the caller's transaction it runs once."""
    if connections[alias].in_atomic_block:
        return verb()
    dialect = dialect_for(alias)
    pause = PAUSE_S / 4
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return verb()
        except OperationalError as exc:
            if attempt == ATTEMPTS or not dialect.restarts_transaction(exc):
                raise
        time.sleep(random.uniform(0, pause))  # noqa: S311 - jitter, not a secret
        pause = min(pause * 2, PAUSE_S)
    raise AssertionError("unreachable")  # pragma: no cover
