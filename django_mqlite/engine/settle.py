"""Settling claimed messages: complete, abandon, snooze, reject, defer, renew.

The fence, written once: a settlement acts only on a row that is ``locked`` under the
lock token it presents, with a live lease (``locked_until > now``; equality at the
deadline is already expired, even before the reaper runs). Each verb is one guarded
statement over a batch of (seq, lock token) pairs that says all of this in its WHERE
clause, so the database applies it to each row atomically or not at all. A pair that
matched no row is looked up in the receipts (``receipts``): an exact replay of a
settlement that committed is ``replayed``, anything else is ``stale``.

Batch first: each verb has one implementation, for a batch (``complete_many``,
``abandon_many``, ``snooze_many``, ``reject_many``, ``defer_many``, ``renew_many``), which
returns a ``Settled`` per item saying what happened (completed, retried, snoozed,
scheduled, dead-lettered, forwarded, deferred, renewed, stale, replayed), so no caller
re-reads rows to guess. A single call is the batch of one: ``complete``, ``abandon``,
``snooze``, ``reject``, ``defer`` and ``renew`` raise ``LockLostError`` for a stale item
(``one``);
``complete_batch`` and ``renew_batch`` answer a bool per item. Every dead letter a
settlement makes goes through ``tally.buried`` (counted, forwarded to the queue's
``forward_dead_letters_to``, and counted in its batch).

A lapsed lease (``lapsed=True`` on complete, abandon and renew; what the SQS endpoint
passes, since a receipt handle outlives its visibility timeout there): the settlement
also acts when the lease ran out but no claim has happened since, i.e. the presented
token is still the row's token (a locked row past its deadline, or a row the lease-expiry
rule returned to ``active``, which keeps the token until the next claim). A later claim
writes a new token, so an old handle still never touches what another receive holds.
The Python API and the HTTP API never pass it: for them a lapsed lease is
``LockLostError`` (SPEC §2). A lapsed settlement also tells ``gone`` (``MessageGoneError``
for a single call) from ``stale``: the message is no longer in the queue and no
settlement of this verb of it, by any token, is on record (purged, expired, moved).

Each settlement opens its cursor inside its transaction: a thread whose connection
broke gets a fresh one from Django there, instead of failing on the old cursor.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

from django.db import transaction
from django.db.backends.utils import CursorWrapper

from ..exceptions import (
    InvalidArgumentError,
    LockLostError,
    MessageGoneError,
    SnoozePastExpiryError,
)
from . import (
    arguments,
    batches,
    canonical_json,
    databases,
    finished,
    heartbeat,
    lines,
    receipts,
    retry,
    tally,
    totals,
    tracing,
)
from .clock import from_ms, now_ms
from .dead_letters import Buried
from .dialects import Dialect
from .rows import QueueRow, columns, load_queue
from .running import Notes
from .settle_items import (
    MAX_COMPLETE_BATCH,
    MAX_RENEW_BATCH,
    AbandonItem,
    Pair,
    RejectItem,
    SnoozeItem,
    check_abandons,
    check_pairs,
    check_rejects,
    check_snoozes,
)
from .settle_sql import (
    ABANDON,
    REJECT,
    RENEW_WITH_NOTES,
    SNOOZE,
    KeptJson,
    MovedRow,
    RenewedRow,
    SnoozedRow,
    complete_kept,
    complete_plain,
    encode_completion,
    fence,
    joined_fence,
)
from .types import Completion, Outcome, Settled

#: What a verb's statement did: {seq: Settled} for the rows it changed.
Done = dict[int, Settled]


def _settle(
    queue: str,
    using: str | None,
    verb: str | None,
    requests: Sequence[receipts.Request],
    apply: Callable[[CursorWrapper, Dialect, QueueRow, int], Done],
    lapsed: bool = False,
) -> list[Settled]:
    """Run ``apply(cursor, dialect, queue, now)``, the verb's one statement, then write
    the receipts of what it changed and look up those of what it did not (``verb`` None:
    no receipts, as for renewals). Returns a ``Settled`` per request, in order;
    ``lapsed`` also tells the ``gone`` among the stale (see the module's docstring).

    Every settlement of every surface comes here, so it is traced here, once
    (``tracing``): the messages' properties are read first, for their producers'
    trace context, only while claims and settlements are traced. A settlement the
    database gave up to break a deadlock runs again (``retry``)."""
    if not requests:
        return []
    tracer = tracing.watching()
    started = tracing.now_ns() if tracer is not None else 0
    carried: dict[int, dict[str, Any]] = {}
    alias = databases.alias_of(using, queue)

    def attempt() -> tuple[Done, set[int], set[int]]:
        with transaction.atomic(using=alias):
            cursor, dialect = databases.ctx(alias)
            q = load_queue(cursor, queue)
            now = now_ms()
            if tracer is not None:
                carried.update(
                    tracing.carried_properties(cursor, dialect, q.id, [r[0] for r in requests])
                )
            done = apply(cursor, dialect, q, now)
            finished.announce(cursor, dialect, queue, done.values())
            replayed: set[int] = set()
            missed = [r for r in requests if r[0] not in done]
            if verb is not None:
                receipts.write(cursor, q.id, verb, [r for r in requests if r[0] in done], now)
                replayed = receipts.replayed(cursor, q.id, verb, missed, now)
            missed = [r for r in missed if r[0] not in replayed]
            gone = _gone(cursor, q.id, verb, missed, now) if lapsed and missed else set()
            return done, replayed, gone

    done, replayed, gone = retry.retried(alias, attempt)
    results = [
        done.get(seq)
        or Settled(
            seq,
            Outcome.REPLAYED if seq in replayed else Outcome.GONE if seq in gone else Outcome.STALE,
        )
        for seq, _, _ in requests
    ]
    if tracer is not None:
        tracing.record_safely(
            lambda: tracer.settled(queue, verb or "renew", requests, results, carried, started)
        )
    return results


def _gone(
    cursor: CursorWrapper,
    queue_id: int,
    verb: str | None,
    missed: Sequence[receipts.Request],
    now: int,
) -> set[int]:
    """The seqs of ``missed`` whose message is no longer in the queue and has no live
    receipt of ``verb`` (with the same arguments) by any token."""
    seqs = sorted({seq for seq, _, _ in missed})
    cursor.execute(
        "SELECT seq FROM mqlite_message WHERE queue_id = %s "
        f"AND seq IN ({batches.placeholders(len(seqs))})",
        [queue_id, *seqs],
    )
    absent = set(seqs) - {row[0] for row in cursor.fetchall()}
    if verb is not None and absent:
        absent -= receipts.settled(
            cursor, queue_id, verb, [r for r in missed if r[0] in absent], now
        )
    return absent


def one(queue: str, results: Sequence[Settled]) -> Settled:
    """The single-call contract over a batch of one: a stale item is ``LockLostError``."""
    [result] = results
    if result.outcome is Outcome.GONE:
        raise MessageGoneError(f"message {result.seq} is no longer on {queue!r}")
    if result.outcome is Outcome.STALE:
        raise LockLostError(
            f"message {result.seq} on {queue!r}: lock token is not current or its lease ran out"
        )
    return result


# -- complete ------------------------------------------------------------------------


def complete_many(
    queue: str,
    items: Sequence[Pair],
    *,
    completions: Sequence[Completion | None] | None = None,
    using: str | None = None,
    lapsed: bool = False,
) -> list[Settled]:
    """Complete many in one transaction: each row is removed, or kept as ``completed``
    when the queue keeps results. ``completions`` (parallel to ``items``) gives an item
    a result and an attempt record to keep; a result or attempt JSON cannot hold (NaN,
    a set, dict keys of mixed types) is an ``InvalidArgumentError`` and nothing is
    written. ``lapsed``: see the module's docstring."""
    pairs = check_pairs(items, MAX_COMPLETE_BATCH)
    if completions is not None and len(completions) != len(pairs):
        raise InvalidArgumentError("completions must be parallel to items")
    # Encoded before the transaction, so the write lock is not held for it (on SQLite
    # the worker processes wait for each other there); a value JSON cannot hold is
    # refused inside it, where the queue keeps results, as ever.
    encoded = [_encoded(c) for c in completions or []]

    def apply(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, now: int) -> Done:
        # Completions only matter where results are kept (elsewhere the row goes).
        extra = encoded if q.keep_results_ms is not None else []
        for e in extra:
            if isinstance(e, InvalidArgumentError):
                raise e
        kept = [(pairs[k], c) for k, c in enumerate(extra) if isinstance(c, KeptJson)]
        plain = [pair for k, pair in enumerate(pairs) if not (extra and extra[k])]
        rows = complete_plain(cursor, dialect, q, plain, now, lapsed) if plain else []
        if kept:
            rows += complete_kept(cursor, dialect, q, kept, now, lapsed)
        if rows:
            lines.release_lines(cursor, dialect, q.id, [r.order_key for r in rows])
            totals.bump_totals(cursor, dialect, q.id, completed=len(rows))
            outcomes = [(r.batch_id, tally.COMPLETED) for r in rows]
            tally.count(cursor, dialect, outcomes, _node_results(pairs, completions, rows))
        return {r.seq: Settled(r.seq, Outcome.COMPLETED) for r in rows}

    return _settle(queue, using, "complete", [(s, t, "") for s, t in pairs], apply, lapsed)


def _encoded(c: Completion | None) -> KeptJson | InvalidArgumentError | None:
    if c is None:
        return None
    try:
        return encode_completion(c)
    except InvalidArgumentError as exc:
        return exc


def _node_results(
    pairs: Sequence[Pair], completions: Sequence[Completion | None] | None, rows: Sequence[Any]
) -> dict[int, Any] | None:
    """By batch id, the result each completed child of a node carried (a chain step
    hands it to the next); None when no completion carried one."""
    if not completions:
        return None
    by_seq = {pairs[k][0]: c.result for k, c in enumerate(completions) if c is not None}
    return {r.batch_id: by_seq[r.seq] for r in rows if r.batch_id is not None and r.seq in by_seq}


def complete(
    queue: str, seq: int, lock_token: str, *, using: str | None = None, lapsed: bool = False
) -> None:
    """Remove the message (or keep it as ``completed`` when the queue keeps results)."""
    one(queue, complete_many(queue, [(seq, lock_token)], using=using, lapsed=lapsed))


def complete_with_result(
    queue: str,
    seq: int,
    lock_token: str,
    result: Any,
    *,
    attempt: Any = None,
    using: str | None = None,
) -> None:
    """Complete, keeping ``result`` (JSON) when the queue keeps results. ``attempt`` (JSON,
    not part of the request's identity) is appended to the row's attempt history in the
    same statement."""
    encoded = canonical_json.dumps_arg(result, "result")
    canonical_json.dumps_arg(attempt, "attempt")
    c = Completion(result=result, attempt=attempt, _result_json=encoded)
    one(queue, complete_many(queue, [(seq, lock_token)], completions=[c], using=using))


def complete_batch(
    queue: str,
    items: Sequence[Pair],
    *,
    completions: Sequence[Completion | None] | None = None,
    using: str | None = None,
) -> list[bool]:
    """``complete_many`` answered as a bool per item: a stale item is False (an exact
    replay is True), never an error."""
    if not check_pairs(items, MAX_COMPLETE_BATCH):
        return []
    return [r.ok for r in complete_many(queue, items, completions=completions, using=using)]


# -- abandon and reject ------------------------------------------------------------------


def abandon_many(
    queue: str, items: Sequence[AbandonItem], *, using: str | None = None, lapsed: bool = False
) -> list[Settled]:
    """Give many back in one statement, each with its own delay and error: active again
    (``retried``), parked in ``scheduled`` until its delay ends, or, when this was its
    last allowed delivery, dead-lettered (``MaxDeliveryCountExceeded``) and forwarded
    where the queue says."""
    checked = check_abandons(items)

    def apply(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, now: int) -> Done:
        params: list[Any] = []
        for seq, token, delay_ms, error, attempt in checked:
            params += [seq, token, now + delay_ms, error, attempt]
        values = ", ".join([f"(%s, %s, %s, %s, {dialect.json_param()})"] * len(checked))
        mx = q.max_delivery_count
        append = dialect.json_append_expr("mqlite_message.attempts", "v.attempt")
        pairs = [c[:2] for c in checked]
        hint, where, fence_params = joined_fence(dialect, pairs, q.id, now, lapsed)
        cursor.execute(
            ABANDON.format(values=values, append=append, hint=hint, fence=where),
            [*params, mx, now, mx, mx, now, *fence_params],
        )
        rows = [MovedRow(*r) for r in cursor.fetchall()]
        dead = [
            Buried(q.id, r.seq, r.order_key, r.batch_id) for r in rows if r.state == "dead_lettered"
        ]
        totals.bump_totals(
            cursor, dialect, q.id, abandoned=len(rows), retried=len(rows) - len(dead)
        )
        return _with_burials(cursor, dialect, q, rows, dead, "exhausted")

    requests = [(c[0], c[1], receipts.abandon_args(c[2])) for c in checked]
    return _settle(queue, using, "abandon", requests, apply, lapsed)


def abandon(
    queue: str,
    seq: int,
    lock_token: str,
    *,
    delay: float | dt.timedelta | None = None,
    error: str | None = None,
    attempt: Any = None,
    using: str | None = None,
    lapsed: bool = False,
) -> None:
    """``abandon_many`` of one message (see ``AbandonItem``)."""
    item = AbandonItem(seq, lock_token, delay, error, attempt)
    one(queue, abandon_many(queue, [item], using=using, lapsed=lapsed))


def snooze_many(
    queue: str, items: Sequence[SnoozeItem], *, using: str | None = None
) -> list[Settled]:
    """Give many back for their delays without using up a delivery: each row is parked
    (``scheduled``, or ``active`` for a zero delay) with the claim's count of the
    delivery undone, and answers ``snoozed``. A parked head keeps its group's line, as
    an abandon with a delay does. The queue's ``max_snoozes`` caps it: a message already
    snoozed that many times is abandoned instead, with the same delay (``retried`` or
    ``scheduled``, its delivery counted; dead-lettered and forwarded on its last).

    A snooze that would end at or after a held message's expiry raises
    ``SnoozePastExpiryError`` (an ``InvalidArgumentError``) and the whole call changes
    nothing. Receipted under the verb ``snooze``: an exact replay succeeds, and no
    abandon's receipt answers it (nor the other way round)."""
    checked = check_snoozes(items)

    def apply(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, now: int) -> Done:
        params: list[Any] = [
            v for seq, token, delay_ms in checked for v in (seq, token, now + delay_ms)
        ]
        ms, mx = q.max_snoozes, q.max_delivery_count
        hint, where, fence_params = joined_fence(dialect, [c[:2] for c in checked], q.id, now)
        cursor.execute(
            SNOOZE.format(
                values=", ".join(["(%s, %s, %s)"] * len(checked)), hint=hint, fence=where
            ),
            [*params, ms, mx, now, ms, ms, ms, mx, ms, mx, now, *fence_params],
        )
        rows = [SnoozedRow(*r) for r in cursor.fetchall()]
        if len(rows) < len(checked):
            _refuse_past_expiry(cursor, q, checked, {r.seq for r in rows}, now)
        over = [
            MovedRow(r.seq, r.state, r.order_key, r.batch_id) for r in rows if r.snooze_count > ms
        ]
        dead = [
            Buried(q.id, r.seq, r.order_key, r.batch_id) for r in over if r.state == "dead_lettered"
        ]
        if over:
            totals.bump_totals(
                cursor, dialect, q.id, abandoned=len(over), retried=len(over) - len(dead)
            )
        done = _with_burials(cursor, dialect, q, over, dead, "exhausted")
        done.update({r.seq: Settled(r.seq, Outcome.SNOOZED) for r in rows if r.snooze_count <= ms})
        return done

    requests = [(seq, token, receipts.abandon_args(delay_ms)) for seq, token, delay_ms in checked]
    return _settle(queue, using, "snooze", requests, apply)


def _refuse_past_expiry(
    cursor: CursorWrapper,
    q: QueueRow,
    checked: Sequence[tuple[int, str, int]],
    moved: set[int],
    now: int,
) -> None:
    """Raise ``SnoozePastExpiryError`` when an item the snooze did not move is held under
    its token with a live lease and expires before its snooze would end (the statement
    leaves those alone); the caller's transaction then rolls the whole call back."""
    wanted = {seq: (token, now + delay_ms) for seq, token, delay_ms in checked if seq not in moved}
    seqs = batches.placeholders(len(wanted))
    cursor.execute(
        "SELECT seq, lock_token, expires_at FROM mqlite_message WHERE queue_id = %s "
        f"AND state = 'locked' AND locked_until > %s AND seq IN ({seqs})",
        [q.id, now, *wanted],
    )
    for seq, token, expires_at in cursor.fetchall():
        presented, visible = wanted[seq]
        if token == presented and expires_at is not None and expires_at <= visible:
            raise SnoozePastExpiryError(
                f"message {seq} on {q.name!r} expires before its snooze would end; nothing changed"
            )


def snooze(
    queue: str,
    seq: int,
    lock_token: str,
    delay: float | dt.timedelta,
    *,
    using: str | None = None,
) -> Settled:
    """``snooze_many`` of one message; returns what happened (``snoozed``, or past the
    queue's ``max_snoozes`` what the abandon did)."""
    return one(queue, snooze_many(queue, [SnoozeItem(seq, lock_token, delay)], using=using))


def reject_many(
    queue: str, items: Sequence[RejectItem], *, using: str | None = None
) -> list[Settled]:
    """Dead-letter many at once, each with its reason and description (and forward
    them where the queue says)."""
    checked = check_rejects(items)

    def apply(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, now: int) -> Done:
        params: list[Any] = []
        for item in checked:
            params += list(item)
        placeholders = f"(%s, %s, %s, %s, %s, {dialect.json_param()})"
        append = dialect.json_append_expr("mqlite_message.attempts", "v.attempt")
        hint, where, fence_params = joined_fence(dialect, [c[:2] for c in checked], q.id, now)
        values = ", ".join([placeholders] * len(checked))
        cursor.execute(
            REJECT.format(values=values, append=append, hint=hint, fence=where),
            [*params, now, *fence_params],
        )
        rows = [MovedRow(*r) for r in cursor.fetchall()]
        dead = [Buried(q.id, r.seq, r.order_key, r.batch_id) for r in rows]
        return _with_burials(cursor, dialect, q, rows, dead, "rejected")

    requests = [(c[0], c[1], receipts.reject_args(c[2], c[3])) for c in checked]
    return _settle(queue, using, "reject", requests, apply)


def reject(
    queue: str,
    seq: int,
    lock_token: str,
    reason: str,
    description: str = "",
    *,
    error: str | None = None,
    attempt: Any = None,
    using: str | None = None,
) -> None:
    """Dead-letter the message at once with ``reason`` and ``description``."""
    item = RejectItem(seq, lock_token, reason, description, error, attempt)
    one(queue, reject_many(queue, [item], using=using))


def _with_burials(
    cursor: CursorWrapper,
    dialect: Dialect,
    q: QueueRow,
    rows: Sequence[MovedRow],
    dead: Sequence[Buried],
    cause: str,
) -> Done:
    """The outcome of each row an abandon or reject moved,
    its dead letters buried (released, counted, forwarded) by the one rule."""
    forwarded = tally.buried(cursor, dialect, dead, cause, source=q)
    out: Done = {}
    for r in rows:
        if r.seq in forwarded:
            out[r.seq] = Settled(r.seq, Outcome.FORWARDED, forwarded_to=forwarded[r.seq])
        else:
            out[r.seq] = Settled(r.seq, Outcome(r.state if r.state != "active" else "retried"))
    return out


# -- defer and renew ---------------------------------------------------------------------


def defer_many(queue: str, items: Sequence[Pair], *, using: str | None = None) -> list[Settled]:
    """Set many aside; fetch them later by seq with ``receive_deferred``. A deferred
    message keeps its place at the head of its line."""
    pairs = check_pairs(items, MAX_COMPLETE_BATCH)

    def apply(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, now: int) -> Done:
        cursor.execute(
            "UPDATE mqlite_message SET state = 'deferred', lock_token = NULL, "
            f"locked_until = NULL, locked_by = NULL WHERE {fence(len(pairs))} RETURNING seq",
            [q.id, now, *(v for pair in pairs for v in pair)],
        )
        return {seq: Settled(seq, Outcome.DEFERRED) for (seq,) in cursor.fetchall()}

    return _settle(queue, using, "defer", [(s, t, "") for s, t in pairs], apply)


def defer(queue: str, seq: int, lock_token: str, *, using: str | None = None) -> None:
    """``defer_many`` of one message."""
    one(queue, defer_many(queue, [(seq, lock_token)], using=using))


def renew_many(
    queue: str,
    items: Sequence[Pair],
    *,
    lock_duration: float | dt.timedelta | None = None,
    using: str | None = None,
    worker_id: int | None = None,
    lapsed: bool = False,
    notes: Sequence[Notes | None] | None = None,
) -> list[Settled]:
    """Extend many live leases to now + lock duration (never shortened; an expired one
    is never revived): ``renewed`` with the new ``locked_until`` and whether a cancel
    was requested (``running``), or ``stale``. ``worker_id`` (the worker holding them)
    has its heartbeat stamped in the same transaction. Renewals write no receipts (see
    ``receipts``). ``lapsed`` revives a lapsed lease (see the module's docstring): the
    message is locked again under the same token until now + lock duration, its
    delivery count unchanged.

    ``notes`` (parallel to ``items``) carries what handlers reported since the last
    renewal (``running.Notes``): when any item has some, the same renewal writes them
    (``RENEW_WITH_NOTES``), fenced like the rest, so a stale item writes nothing."""
    pairs = check_pairs(items, MAX_RENEW_BATCH)
    lock_ms = arguments.optional_lock_ms(lock_duration)
    arguments.check_worker_id(worker_id)
    if notes is not None and (len(notes) != len(pairs) or lapsed):
        raise InvalidArgumentError("notes must be parallel to items, and never lapsed")
    noted = notes if notes is not None and any(notes) else None

    def apply(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, now: int) -> Done:
        until = now + (lock_ms if lock_ms is not None else q.lock_duration_ms)
        if noted is not None:
            _renew_with_notes(cursor, dialect, q, pairs, noted, until, now)
        else:
            extend = dialect.greatest_sql("locked_until", "%s")
            # A lapsed lease: a returned row has no deadline (GREATEST with NULL is NULL
            # on SQLite), and one past its deadline takes the new one.
            sets, until_params = (
                (f"state = 'locked', locked_until = COALESCE({extend}, %s)", [until, until])
                if lapsed
                else (f"locked_until = {extend}", [until])
            )
            cursor.execute(
                f"UPDATE mqlite_message SET {sets} "
                f"WHERE {fence(len(pairs), lapsed)} RETURNING {columns(RenewedRow)}",
                [*until_params, q.id, now, *(v for pair in pairs for v in pair)],
            )
        rows = [RenewedRow(*r) for r in cursor.fetchall()]
        if rows and worker_id is not None:
            heartbeat.touch_worker(cursor, worker_id, now)
        return {
            r.seq: Settled(
                r.seq,
                Outcome.RENEWED,
                locked_until=from_ms(r.locked_until),
                cancel_requested=r.cancel_requested_at is not None,
            )
            for r in rows
        }

    return _settle(queue, using, None, [(s, t, "") for s, t in pairs], apply, lapsed)


def _renew_with_notes(
    cursor: CursorWrapper,
    dialect: Dialect,
    q: QueueRow,
    pairs: Sequence[tuple[int, str]],
    notes: Sequence[Notes | None],
    until: int,
    now: int,
) -> None:
    """``RENEW_WITH_NOTES`` of ``pairs``, each with its notes (or none)."""
    json = dialect.json_param()
    values = ", ".join([f"(%s, %s, {json}, {json})"] * len(pairs))
    params: list[Any] = []
    for (seq, token), n in zip(pairs, notes, strict=True):
        params += [seq, token, n.progress if n else None, n.checkpoint if n else None]
    hint, where, fence_params = joined_fence(dialect, pairs, q.id, now)
    extend = dialect.greatest_sql("mqlite_message.locked_until", "%s")
    cursor.execute(
        RENEW_WITH_NOTES.format(values=values, hint=hint, extend=extend, fence=where),
        [*params, until, *fence_params],
    )


def renew(
    queue: str,
    seq: int,
    lock_token: str,
    *,
    lock_duration: float | dt.timedelta | None = None,
    using: str | None = None,
    lapsed: bool = False,
) -> dt.datetime:
    """Extend a live lease (``renew_lease``); returns the new ``locked_until``."""
    got = renew_lease(
        queue, seq, lock_token, lock_duration=lock_duration, using=using, lapsed=lapsed
    )
    assert got.locked_until is not None
    return got.locked_until


def renew_lease(
    queue: str,
    seq: int,
    lock_token: str,
    *,
    lock_duration: float | dt.timedelta | None = None,
    using: str | None = None,
    lapsed: bool = False,
) -> Settled:
    """``renew_many`` of one, answered whole: the new ``locked_until`` and
    ``cancel_requested``, both read from the renewal's own fenced statement (what a
    worker sees; the HTTP renew route answers both). ``LockLostError`` when stale."""
    many = renew_many(
        queue, [(seq, lock_token)], lock_duration=lock_duration, using=using, lapsed=lapsed
    )
    return one(queue, many)


def renew_batch(
    queue: str,
    items: Sequence[Pair],
    *,
    lock_duration: float | dt.timedelta | None = None,
    using: str | None = None,
    worker_id: int | None = None,
) -> list[bool]:
    """``renew_many`` answered as a bool per item (at most 512); a stale item is False."""
    if not check_pairs(items, MAX_RENEW_BATCH):
        arguments.optional_lock_ms(lock_duration)
        arguments.check_worker_id(worker_id)
        return []
    got = renew_many(queue, items, lock_duration=lock_duration, using=using, worker_id=worker_id)
    return [r.ok for r in got]


def release(queue: str, items: Sequence[Pair], *, using: str | None = None) -> list[bool]:
    """Hand claimed-but-unstarted messages back without burning an attempt.

    Each row goes back to ``active`` with its delivery count decremented (the claim that
    is undone had counted one), fenced like every settlement. A stale item is False. A
    worker uses this at shutdown for messages it claimed but never gave to a handler.
    A pending key (``unique``) is not taken back: the claim freed it, and another
    message may hold it by now.
    """
    pairs = check_pairs(items, MAX_COMPLETE_BATCH)
    if not pairs:
        return []
    alias = databases.alias_of(using, queue)

    def attempt() -> set[int]:
        with transaction.atomic(using=alias):
            cursor, _ = databases.ctx(alias)
            q = load_queue(cursor, queue)
            now = now_ms()
            cursor.execute(
                "UPDATE mqlite_message SET state = 'active', lock_token = NULL, "
                "locked_until = NULL, locked_by = NULL, visible_at = %s, pending_key = NULL, "
                "delivery_count = "
                "CASE WHEN delivery_count > 0 THEN delivery_count - 1 ELSE 0 END "
                f"WHERE {fence(len(pairs))} RETURNING seq",
                [now, q.id, now, *(v for pair in pairs for v in pair)],
            )
            return {seq for (seq,) in cursor.fetchall()}

    done = retry.retried(alias, attempt)
    return [seq in done for seq, _ in pairs]
