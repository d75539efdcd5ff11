"""What a worker's main thread writes for the messages it holds: lease renewals,
batched completions (the group commit of ``prefetch``) and releases at shutdown.

Each function issues one statement per queue and batch, and is safe to repeat after a
database error: a renewal is idempotent, a completion that did commit is an exact
replay (its receipt makes the retry succeed) and a release is fenced on the token.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable

from django.db import Error as DatabaseError

from ..engine import core, settle
from ..engine.abandon_batch import abandon_batch
from ..engine.clock import now_ms
from .delivery import Delivery
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
    renewal stamps ``worker_id``'s heartbeat too."""
    now = clock_s()
    due = by_queue(d for d in pool.held() if now >= d.next_renew)
    for queue, ds in due.items():
        for part in core.chunks(ds, settle.MAX_RENEW_BATCH):
            ok = settle.renew_batch(
                queue, [d.item() for d in part], using=using, worker_id=worker_id
            )
            for d, renewed in zip(part, ok, strict=True):
                if renewed:
                    d.next_renew = now + d.lease_s / 2
                else:
                    d.lost = True
                    logger.warning("%s #%s: lease lost while held", queue, d.msg.seq)


def flush_completions(pool: Pool, using: str) -> None:
    """Complete every finished message, one statement per queue and batch."""
    todo = []
    for d in pool.take_done():
        if d.lost:  # its lease ran out while held: another delivery may have it now
            _after_completion(d.msg.queue, d, False)
        else:
            todo.append(d)
    flushed: set[int] = set()
    for queue, ds in by_queue(todo).items():
        for part in core.chunks(ds, settle.MAX_COMPLETE_BATCH):
            completions = [d.msg.completion for d in part]
            try:
                ok = settle.complete_batch(
                    queue,
                    [d.item() for d in part],
                    completions=completions if any(completions) else None,
                    using=using,
                )
            except DatabaseError:
                # Keep them (and their leases) for the next tick: a retry of a batch
                # that did commit is an exact replay and succeeds.
                pool.give_back_done([d for d in todo if id(d) not in flushed])
                raise
            flushed.update(id(d) for d in part)
            for d, done in zip(part, ok, strict=True):
                _after_completion(queue, d, done)


def flush_failures(pool: Pool, using: str) -> None:
    """Abandon every failed attempt (retry with its backoff, or dead-letter at the last
    delivery), one statement per queue and batch."""
    todo = [f for f in pool.take_failed() if not f[0].lost]
    by: dict[str, list[tuple[Delivery, float, str]]] = defaultdict(list)
    for f in todo:
        by[f[0].msg.queue].append(f)
    flushed: set[int] = set()
    for queue, fs in by.items():
        for part in core.chunks(fs, settle.MAX_COMPLETE_BATCH):
            items = [(*d.item(), delay, tb) for d, delay, tb in part]
            try:
                ok = abandon_batch(queue, items, using=using)
            except DatabaseError:
                pool.give_back_failed([f for f in todo if id(f) not in flushed])
                raise
            flushed.update(id(f) for f in part)
            for (d, _delay, _tb), done in zip(part, ok, strict=True):
                if not done:
                    logger.warning("%s #%s: could not abandon: lease lost", queue, d.msg.seq)


def _after_completion(queue: str, d: Delivery, done: bool) -> None:
    c = d.msg.completion
    if done and c is not None and c.on_completed is not None:
        try:
            c.on_completed()
        except Exception:
            logger.exception("after completing %s #%s", queue, d.msg.seq)
    if not done:
        logger.warning(
            "%s #%s: lease lost before completion; it will be redelivered", queue, d.msg.seq
        )


def release(ds: list[Delivery], using: str) -> None:
    """Hand claimed-but-unstarted messages back without burning an attempt."""
    for queue, part in by_queue(ds).items():
        for chunk in core.chunks(part, settle.MAX_COMPLETE_BATCH):
            settle.release(queue, [d.item() for d in chunk], using=using)
        logger.info("released %s unstarted message(s) of %s", len(part), queue)
