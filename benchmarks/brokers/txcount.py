"""The transactions a django-mqlite worker process tree commits, for the ``brokers``
scenario's idle and trickle costs (``BENCH_COUNT_TX=<directory>`` in the worker's
environment; the bench project's app installs it when Django is ready).

A transaction is counted as the idle-cost tests count it (``tests/support/transactions``,
used here as is, so the benchmark's figure and the tests' bound are the same count):
each commit of an ``atomic`` block and each statement in autocommit mode on Django's
connections, a read included on PostgreSQL (what ``pg_stat_database.xact_commit``
counts). ``runworker`` forks its worker processes, so each process counts its own from
zero after the fork and writes its running total to ``<directory>/<pid>`` whenever it
changed (with its count by thread and by statement, for a diagnosis), looked at every
``EVERY_S``; the scenario sums the totals. The looks are a
thread waking four times a second, about as cheap as a thread can be, and the same in
every window measured.
"""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.support.transactions import Transactions

EVERY_S = 0.25
ENV = "BENCH_COUNT_TX"

_stack = ExitStack()
_installed = False


def install() -> None:
    """Count this process's transactions and its forked children's, if ``ENV`` names a
    directory (once per process)."""
    global _installed
    where = os.environ.get(ENV)
    if not where or _installed:
        return
    _installed = True
    from tests.support.transactions import counting

    counted = _stack.enter_context(counting())
    out = Path(where)
    out.mkdir(parents=True, exist_ok=True)

    def start() -> None:
        threading.Thread(
            target=_dump, args=(counted, out), name="bench-txcount", daemon=True
        ).start()

    def after_fork() -> None:
        counted.restart()  # the child counts its own from zero
        start()

    os.register_at_fork(after_in_child=after_fork)
    start()


def _dump(counted: Transactions, out: Path) -> None:
    last = -1
    path = out / str(os.getpid())
    while True:
        now = counted.snapshot()
        if now["total"] != last:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(now))
            tmp.replace(path)
            last = now["total"]
        time.sleep(EVERY_S)


def total(where: Path) -> int:
    """The transactions every process that counted into ``where`` has written so far."""
    return sum(json.loads(p.read_text())["total"] for p in where.iterdir() if p.suffix != ".tmp")
