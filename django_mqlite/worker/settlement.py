"""What a worker's main thread writes for the messages it holds: lease renewals,
batched completions (the group commit of ``prefetch``) and releases at shutdown.

Each function issues one statement per queue and batch through the engine's settle verbs
(the same ones ``mq.complete`` and ``mq.abandon`` use), and is safe to repeat after a
database error: a renewal is idempotent, a completion or abandon that did commit is an
exact replay (its receipt makes the retry succeed) and a release is fenced on the token.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Iterable

from django.db import Error as DatabaseError

from ..engine import batches, settle
from ..engine.clock import now_ms
from ..engine.types import Outcome
from . import handling, tracing
from .delivery import Delivery, log_fields
from .pool import Pool

logger = logging.getLogger("django_mqlite.worker")


def by_queue(ds: Iterable[Delivery]) -> dict[str, list[Delivery]]:
    out: dict[str, list[Delivery]] = defaultdict(list)
    for d in ds:
        out[d.msg.queue].append(d)
    return out


def clock_s() -> float:
    """The engine's clock in seconds: leases are renewed by it, so a frozen clock in a
    test decides when a renewal is due."""
    return now_ms() / 1000


def renew_due(pool: Pool, using: str, worker_id: int | None = None) -> None:
    """Renew every held lease (waiting, running or finished) past half its life; the
    renewal stamps ``worker_id``'s heartbeat too, writes what handlers reported since
    the last one (``running``: their progress and checkpoints, fenced with the lease)
    and answers whether a cancel was requested, which reaches the handler here. On a
    database error the reports go back to their buffers for the next renewal."""
    now = clock_s()
    due = by_queue(d for d in pool.held() if now >= d.next_renew)
    for queue, ds in due.items():
        for part in batches.chunks(ds, settle.MAX_RENEW_BATCH):
            notes = [d.msg.take_notes() for d in part]
            try:
                got = settle.renew_many(
                    queue,
                    [d.item() for d in part],
                    using=using,
                    worker_id=worker_id,
                    notes=notes,
                )
            except BaseException:
                for d, n in zip(part, notes, strict=True):
                    d.msg.give_back_notes(n)
                raise
            for d, renewed in zip(part, got, strict=True):
                if renewed.ok:
                    d.next_renew = now + d.lease_s / 2
                    d.lease_until = now + d.lease_s
                    if renewed.cancel_requested and not d.msg.cancel_requested:
                        d.msg.cancel_seen()
                        logger.info(
                            "%s #%s: cancel requested", queue, d.msg.seq, extra=log_fields(d.msg)
                        )
                else:
                    d.lost = True
                    logger.warning(
                        "%s #%s: lease lost while held", queue, d.msg.seq, extra=log_fields(d.msg)
                    )


def flush_completions(pool: Pool, using: str) -> Counter[str]:
    """Complete every finished message, one statement per queue and batch; returns the
    outcomes by name. A delivery whose lease is known lost is not presented (another
    delivery may hold the message now). On a database error every delivery not yet
    flushed goes back to the pool, lease and all, and the error propagates: the next
    flush retries them, and a batch that did commit answers as an exact replay."""
    outcomes: Counter[str] = Counter()
    todo = []
    for d in pool.take_done():
        if d.lost:
            outcomes[Outcome.STALE] += 1
            tracing.finish(d.msg, tracing.LOCK_LOST)
            _after_completion(d.msg.queue, d, False)
        else:
            todo.append(d)
    flushed: set[int] = set()
    for queue, ds in by_queue(todo).items():
        for part in batches.chunks(ds, settle.MAX_COMPLETE_BATCH):
            completions = [d.msg.final_completion() for d in part]
            try:
                got = settle.complete_many(
                    queue,
                    [d.item() for d in part],
                    completions=completions if any(completions) else None,
                    using=using,
                )
            except DatabaseError:
                pool.give_back_done([d for d in todo if id(d) not in flushed])
                raise
            flushed.update(id(d) for d in part)
            for d, result in zip(part, got, strict=True):
                outcomes[result.outcome] += 1
                tracing.finish(d.msg, result)
                _after_completion(queue, d, result.ok)
    return outcomes


def flush_failures(pool: Pool, using: str) -> Counter[str]:
    """Abandon every failed attempt through the engine's one abandon verb (retry with
    its backoff, or dead-letter and forward at the last delivery), one statement per
    queue and batch; returns the outcomes by name. Lost deliveries and database errors
    are handled as in ``flush_completions``."""
    outcomes: Counter[str] = Counter()
    todo = []
    for f in pool.take_failed():
        if f[0].lost:
            outcomes[Outcome.STALE] += 1
            tracing.finish(f[0].msg, tracing.LOCK_LOST)
            logger.warning(
                "%s #%s: could not abandon: lease lost",
                f[0].msg.queue,
                f[0].msg.seq,
                extra=log_fields(f[0].msg),
            )
        else:
            todo.append(f)
    by: dict[str, list[tuple[Delivery, float, str]]] = defaultdict(list)
    for f in todo:
        by[f[0].msg.queue].append(f)
    flushed: set[int] = set()
    for queue, fs in by.items():
        for part in batches.chunks(fs, settle.MAX_COMPLETE_BATCH):
            items = [_abandon_item(d, delay, tb) for d, delay, tb in part]
            try:
                # A retry resumes from the last checkpoint: write the reports first.
                handling.write_notes(queue, [d.msg for d, _, _ in part], using)
                got = settle.abandon_many(queue, items, using=using)
            except DatabaseError:
                pool.give_back_failed([f for f in todo if id(f) not in flushed])
                raise
            flushed.update(id(f) for f in part)
            for (d, _delay, _tb), result in zip(part, got, strict=True):
                outcomes[result.outcome] += 1
                tracing.finish(d.msg, result)
                if not result.ok:
                    logger.warning(
                        "%s #%s: could not abandon: lease lost",
                        queue,
                        d.msg.seq,
                        extra=log_fields(d.msg),
                    )
    return outcomes


def _abandon_item(d: Delivery, delay: float, tb: str) -> settle.AbandonItem:
    seq, token = d.item()
    return settle.AbandonItem(seq, token, delay, tb)


def _after_completion(queue: str, d: Delivery, done: bool) -> None:
    c = d.msg.completion
    if done and c is not None and c.on_completed is not None:
        try:
            c.on_completed()
        except Exception:
            logger.exception("after completing %s #%s", queue, d.msg.seq, extra=log_fields(d.msg))
    if not done:
        logger.warning(
            "%s #%s: lease lost before completion; it will be redelivered",
            queue,
            d.msg.seq,
            extra=log_fields(d.msg),
        )


def release(ds: list[Delivery], using: str) -> None:
    """Hand claimed-but-unstarted messages back without burning an attempt. A delivery
    whose lease is known lost is not presented (another delivery holds the message now,
    perhaps this worker's own)."""
    for queue, part in by_queue(d for d in ds if not d.lost).items():
        for chunk in batches.chunks(part, settle.MAX_COMPLETE_BATCH):
            settle.release(queue, [d.item() for d in chunk], using=using)
        logger.info(
            "released %s unstarted message(s) of %s",
            len(part),
            queue,
            extra={"mqlite_queue": queue},
        )
