"""Per-minute history of each queue, sampled by the reaper.

Nothing on the send, claim or settle path writes history. Instead, the first reaper pass
after a minute of the engine's clock ends writes one row per queue into ``mqlite_history``,
keyed by (queue, minute): the queue's lifetime totals and its depth per state at that
moment. Any number of reapers may race to write it; the row is inserted only if absent, so
one sample per queue and minute is kept, whichever reaper wrote it.

``history()`` turns samples into per-minute buckets:

* a minute's counts are the difference between the sample that closes it and the sample
  before (activity is counted in the minute whose closing sample first saw it, so a pass
  that runs ``REAP_INTERVAL`` after the boundary moves that little to the next minute);
* the minute in progress is measured from the last sample to the live totals;
* a minute without a sample (no reaper ran then) has zero counts and no depth (``None``);
  what happened in it is counted in the next minute that has one;
* the starting point is the last sample before the window; without one, a queue younger
  than the retention starts from zero (totals start at zero), and an older queue's first
  sample in the window only serves as the starting point.

Since the totals only grow, the counts of any run of minutes add up exactly to the
change of the lifetime totals between the samples at its ends (the differences telescope).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, transaction
from django.db.backends.utils import CursorWrapper

from ..conf import current
from . import arguments, batches, databases, send_one
from .clock import from_ms, now_ms
from .dialects import Dialect
from .rows import QUEUE_COLUMNS, QueueRow, load_queue
from .types import TOTAL_NAMES, State

MINUTE_MS = 60_000
#: The longest window ``history()`` accepts when the retention is shorter (a week).
MAX_MINUTES = 7 * 24 * 60
#: The totals that count failed deliveries: reported (abandoned, rejected) or noticed
#: (reclaimed: the lease ran out). Charts and ``mqlite top`` show their sum as "failed".
FAILED_TOTALS = ("abandoned", "reclaimed", "rejected")
STATE_NAMES = tuple(s.value for s in State)
DEPTH_COLUMNS = tuple(f"depth_{s}" for s in STATE_NAMES)
_COLUMNS = ("queue_id", "minute", "sampled_at", *TOTAL_NAMES, *DEPTH_COLUMNS)
# Rows per INSERT: few enough parameters for any SQLite build (999).
_INSERT_ROWS = 40
_IN_CHUNK = 500

Bucket = dict[str, Any]
_Sample = tuple[tuple[int, ...], dict[str, int] | None]


def minute_of(ms: int) -> int:
    """The start of the minute holding ``ms`` (epoch milliseconds)."""
    return ms - ms % MINUTE_MS


def retention_ms() -> int:
    return current().history_retention_ms


def max_minutes() -> int:
    """The longest window ``history()`` accepts: the retention, and at least a week."""
    return max(MAX_MINUTES, retention_ms() // MINUTE_MS)


# -- sampling (the reaper) ---------------------------------------------------------------


def sample(alias: str) -> int:
    """Write the sample closing the minute that last ended for every queue that has none
    yet; returns how many rows this call wrote. Off when ``HISTORY_RETENTION`` is 0."""
    if retention_ms() <= 0:
        return 0
    cursor, _ = databases.ctx(alias)
    minute = minute_of(now_ms()) - MINUTE_MS
    # Queues created after the minute ended have nothing to close in it.
    cursor.execute(
        "SELECT q.id FROM mqlite_queue q WHERE q.created_at < %s AND NOT EXISTS ("
        "SELECT 1 FROM mqlite_history h WHERE h.queue_id = q.id AND h.minute = %s) "
        "ORDER BY q.id",
        [minute + MINUTE_MS, minute],
    )
    missing = [r[0] for r in cursor.fetchall()]
    written = 0
    for part in batches.chunks(missing, _INSERT_ROWS):
        # Read outside any transaction: on SQLite a read holds no write lock, so counting
        # a deep queue never blocks producers and consumers.
        sampled_at = now_ms()
        totals = live_totals(cursor, part)
        depth = live_depth(cursor, part)
        params: list[Any] = []
        for queue_id in part:
            params += [queue_id, minute, sampled_at, *totals[queue_id]]
            params += [depth[queue_id][s] for s in STATE_NAMES]
        row = f"({batches.placeholders(len(_COLUMNS))})"
        try:
            with transaction.atomic(using=alias):
                cursor.execute(
                    f"INSERT INTO mqlite_history ({', '.join(_COLUMNS)}) "
                    f"VALUES {', '.join([row] * len(part))} "
                    "ON CONFLICT (queue_id, minute) DO NOTHING",
                    params,
                )
                written += max(0, cursor.rowcount)
        except IntegrityError:
            # A queue deleted since it was listed: its sample has nowhere to go. The
            # others are written on the next pass.
            break
    return written


def trim_due(alias: str) -> bool:
    """Whether any sample is past the retention: a read, so a reaper pass with nothing to
    trim takes no write lock for it."""
    cursor, _ = databases.ctx(alias)
    cursor.execute(
        "SELECT 1 FROM mqlite_history WHERE minute < %s LIMIT 1", [now_ms() - retention_ms()]
    )
    return cursor.fetchone() is not None


def trim_step(cursor: CursorWrapper, dialect: Dialect, now: int) -> int:
    """Delete one chunk of samples older than ``HISTORY_RETENTION`` (a reaper step)."""
    cursor.execute(
        "DELETE FROM mqlite_history WHERE id IN (SELECT id FROM mqlite_history "
        f"WHERE minute < %s ORDER BY minute LIMIT %s {dialect.lock_suffix()})",
        [now - retention_ms(), current().reap_chunk],
    )
    return int(cursor.rowcount)


def live_totals(cursor: CursorWrapper, queue_ids: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """Each queue's lifetime totals now, in ``TOTAL_NAMES`` order (one statement, so one
    consistent reading on every database)."""
    out = {q: (0,) * len(TOTAL_NAMES) for q in queue_ids}
    send_one.flush_deferred_counts(cursor.db.alias)  # this transaction's own sends
    sums = ", ".join(f"SUM({n})" for n in TOTAL_NAMES)
    for part in batches.chunks(list(queue_ids), _IN_CHUNK):
        cursor.execute(
            f"SELECT queue_id, {sums} FROM mqlite_totals "
            f"WHERE queue_id IN ({batches.placeholders(len(part))}) GROUP BY queue_id",
            list(part),
        )
        for queue_id, *values in cursor.fetchall():
            out[queue_id] = tuple(int(v or 0) for v in values)
    return out


def live_depth(cursor: CursorWrapper, queue_ids: Sequence[int]) -> dict[int, dict[str, int]]:
    """Each queue's messages per state now (exact counts, zeros included)."""
    out = {q: dict.fromkeys(STATE_NAMES, 0) for q in queue_ids}
    for part in batches.chunks(list(queue_ids), _IN_CHUNK):
        cursor.execute(
            "SELECT queue_id, state, count(*) FROM mqlite_message "
            f"WHERE queue_id IN ({batches.placeholders(len(part))}) GROUP BY queue_id, state",
            list(part),
        )
        for queue_id, state, n in cursor.fetchall():
            out[queue_id][state] = int(n)
    return out


# -- reading -------------------------------------------------------------------------------


def history(queue: str, *, minutes: int = 60, using: str | None = None) -> list[Bucket]:
    """Per-minute buckets of the last ``minutes`` minutes, oldest first, the last one being
    the minute in progress. Each bucket has ``start`` (an aware UTC datetime), how much each
    lifetime total (``mq.stats(queue).totals``) grew in that minute, and ``depth``: the
    messages per state at the end of the minute (now, for the last bucket), or ``None``
    for a minute no reaper sampled. See the module docstring for how minutes are drawn."""
    return history_of([queue], minutes=minutes, using=databases.alias_of(using, queue))[queue]


def history_of(
    queues: Sequence[str] | None = None,
    *,
    minutes: int = 60,
    depth: bool = True,
    using: str | None = None,
) -> dict[str, list[Bucket]]:
    """``history()`` of several queues (all when ``queues`` is None), by name. With
    ``depth=False`` the minute in progress has no depth, and no message is counted."""
    arguments.check_int(minutes, "minutes", 1, max_minutes())
    cursor, _ = databases.ctx(databases.alias_of(using))
    if queues is None:
        cursor.execute(f"SELECT {QUEUE_COLUMNS} FROM mqlite_queue ORDER BY name")
        rows = [QueueRow(*r) for r in cursor.fetchall()]
    else:
        rows = [load_queue(cursor, name) for name in queues]
    now = now_ms()
    current = minute_of(now)
    first = current - (minutes - 1) * MINUTE_MS
    samples = {q.id: _samples(cursor, q.id, first, current) for q in rows}
    ids = [q.id for q in rows]
    totals = live_totals(cursor, ids)
    counts: dict[int, dict[str, int]] = live_depth(cursor, ids) if depth else {}
    out = {}
    for q in rows:
        start: tuple[int, ...] | None = None
        if q.created_at >= now - retention_ms():
            start = (0,) * len(TOTAL_NAMES)  # nothing of it can have been trimmed yet
        live: _Sample = (totals[q.id], counts.get(q.id))
        out[q.name] = _buckets(samples[q.id], start, first, current, live)
    return out


def _samples(cursor: CursorWrapper, queue_id: int, first: int, current: int) -> list[Any]:
    """The queue's samples in [first, current), preceded by the last one before ``first``
    (the window's starting point), if any."""
    cols = ", ".join(("minute", *TOTAL_NAMES, *DEPTH_COLUMNS))
    cursor.execute(
        f"SELECT {cols} FROM mqlite_history WHERE queue_id = %s AND minute < %s "
        "AND minute >= COALESCE((SELECT max(minute) FROM mqlite_history "
        "WHERE queue_id = %s AND minute < %s), %s) ORDER BY minute",
        [queue_id, current, queue_id, first, first],
    )
    return list(cursor.fetchall())


def _buckets(
    rows: list[Any],
    start: tuple[int, ...] | None,
    first: int,
    current: int,
    live: _Sample,
) -> list[Bucket]:
    n = len(TOTAL_NAMES)
    by_minute: dict[int, _Sample] = {}
    prev = start
    for minute, *values in rows:
        sample = (
            tuple(int(v) for v in values[:n]),
            dict(zip(STATE_NAMES, map(int, values[n:]), strict=True)),
        )
        if minute < first:
            prev = sample[0]
        else:
            by_minute[minute] = sample
    out = []
    zeros = dict.fromkeys(TOTAL_NAMES, 0)
    for minute in range(first, current + MINUTE_MS, MINUTE_MS):
        end = live if minute == current else by_minute.get(minute)
        bucket: Bucket = {"start": from_ms(minute), **zeros, "depth": None}
        if end is not None:
            totals, bucket["depth"] = end
            if prev is not None:
                for name, now, before in zip(TOTAL_NAMES, totals, prev, strict=True):
                    bucket[name] = now - before
            prev = totals
        out.append(bucket)
    return out
