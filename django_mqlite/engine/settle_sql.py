"""The settle verbs' statements (see ``settle`` for the rule they follow).

Each is fenced the same way: the row is ``locked`` under the presented token and its
lease is live (``locked_until > now``). Pairs are matched with ``seq = %s AND
lock_token = %s`` for one item and ``(seq, lock_token) IN (VALUES ...)`` for more, or,
where each item carries its own arguments (abandon, reject, completions with results),
by joining a ``VALUES`` list ``v``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.backends.utils import CursorWrapper

from . import canonical_json
from .dead_letters import EXHAUSTED_REASON
from .dialects import Dialect
from .rows import QueueRow
from .types import Completion

# The rows the statements return, read by name (``rows``): each dataclass is the
# statement's RETURNING list (tests/engine/test_rows.py holds them to it).


@dataclass(slots=True)
class LeftRow:
    """A row a completion took: its seq, the line it left and its batch (``RETURNING
    seq, order_key, batch_id``)."""

    seq: int
    order_key: str | None
    batch_id: int | None


@dataclass(slots=True)
class MovedRow:
    """A row an abandon or a reject moved: its seq, its new state, its line and its
    batch."""

    seq: int
    state: str
    order_key: str | None
    batch_id: int | None


@dataclass(slots=True)
class SnoozedRow:
    """A row a snooze moved: as ``MovedRow``, with the snoozes asked of it so far (one
    past the queue's ``max_snoozes`` or more: this one was an ordinary abandon)."""

    seq: int
    state: str
    order_key: str | None
    batch_id: int | None
    snooze_count: int


@dataclass(slots=True)
class RenewedRow:
    """A row a renewal extended, with its new lease deadline (ms) and when a cancel of
    it was requested (``running``; None: not asked)."""

    seq: int
    locked_until: int
    cancel_requested_at: int | None


#: A lapsed lease (``lapsed=True``, SQS's rule for a receipt handle): the row is still
#: under the presented token, locked with a lease that ran out, or returned to ``active``
#: by the lease-expiry rule (which keeps the token) with no claim since. ``now`` is not
#: needed then; the clause still takes it, so both fences take the same parameters.
LAPSED = "state IN ('locked', 'active') AND %s >= 0"
LIVE = "state = 'locked' AND locked_until > %s"


def fence(n: int, lapsed: bool = False) -> str:
    """The WHERE clause of a settlement of ``n`` (seq, lock_token) pairs. Parameters:
    the queue id, now, then the pairs flattened."""
    live = f"queue_id = %s AND {LAPSED if lapsed else LIVE}"
    if n == 1:
        return f"{live} AND seq = %s AND lock_token = %s"
    return f"{live} AND (seq, lock_token) IN (VALUES {', '.join(['(%s, %s)'] * n)})"


def joined_fence(
    dialect: Dialect,
    pairs: Sequence[tuple[int, str]],
    queue_id: int,
    now: int,
    lapsed: bool = False,
) -> tuple[str, str, list[Any]]:
    """For a statement joined to its items ``v`` (seq, token, ...): the hint placed after
    ``UPDATE mqlite_message``, the WHERE clause, and its parameters (which come last).
    For one item the pair is also given as constants and the row is found by its primary
    key, as a single settlement always was; for more the join matches them."""
    rule = (LAPSED if lapsed else LIVE).replace("state", "mqlite_message.state")
    live = "mqlite_message.queue_id = %s AND " + rule.replace(
        "locked_until", "mqlite_message.locked_until"
    )
    if len(pairs) == 1:
        [(seq, token)] = pairs
        where = f"mqlite_message.seq = %s AND mqlite_message.lock_token = %s AND {live}"
        return dialect.key_hint(), where, [seq, token, queue_id, now]
    where = f"mqlite_message.seq = v.seq AND mqlite_message.lock_token = v.token AND {live}"
    return "", where, [queue_id, now]


#: Keep the attempt record of ``v`` (JSON or NULL) in the row's history.
_ATTEMPTS = "attempts = CASE WHEN v.attempt IS NULL THEN mqlite_message.attempts ELSE {append} END"

# -- name: abandon ---------------------------------------------------------------------
# Retry (now, or parked in scheduled until the item's visible time) or, when this was
# the last allowed delivery, dead-letter. Parameters: the VALUES rows (seq, token,
# visible_at, error, attempt), then max, now, max, max, now, then ``joined_fence``'s.
ABANDON = (
    "WITH v (seq, token, visible, error, attempt) AS (VALUES {values}) "
    "UPDATE mqlite_message {hint} SET "
    "state = CASE WHEN delivery_count >= %s THEN 'dead_lettered' "
    "WHEN v.visible > %s THEN 'scheduled' ELSE 'active' END, "
    "visible_at = v.visible, lock_token = NULL, locked_until = NULL, locked_by = NULL, "
    "dead_letter_reason = CASE WHEN delivery_count >= %s "
    f"THEN '{EXHAUSTED_REASON}' ELSE dead_letter_reason END, "
    "dead_lettered_at = CASE WHEN delivery_count >= %s THEN %s ELSE dead_lettered_at END, "
    f"last_error = COALESCE(v.error, mqlite_message.last_error), {_ATTEMPTS} "
    "FROM v WHERE {fence} "
    "RETURNING mqlite_message.seq, mqlite_message.state, mqlite_message.order_key, "
    "mqlite_message.batch_id"
)

# -- name: snooze ----------------------------------------------------------------------
# Give back until the item's visible time, undoing the claim's count of the delivery,
# while the row has been snoozed fewer than ``max_snoozes`` times; past that, the
# abandon's rule (dead-letter on the last allowed delivery). Each snooze is counted, up to
# max_snoozes + 1 (so the returned count says which rule applied). A snooze that would
# end at or after the row's expiry matches nothing (``snooze_many`` tells it from a stale
# token). Parameters: the VALUES rows (seq, token, visible_at), then max_snoozes, max,
# now, max_snoozes, max_snoozes, max_snoozes, max, max_snoozes, max, now, then
# ``joined_fence``'s.
_OVER = "snooze_count >= %s AND delivery_count >= %s"
SNOOZE = (
    "WITH v (seq, token, visible) AS (VALUES {values}) "
    "UPDATE mqlite_message {hint} SET "
    f"state = CASE WHEN {_OVER} THEN 'dead_lettered' "
    "WHEN v.visible > %s THEN 'scheduled' ELSE 'active' END, "
    "delivery_count = CASE WHEN snooze_count < %s AND delivery_count > 0 "
    "THEN delivery_count - 1 ELSE delivery_count END, "
    "snooze_count = CASE WHEN snooze_count <= %s THEN snooze_count + 1 ELSE snooze_count END, "
    "visible_at = v.visible, lock_token = NULL, locked_until = NULL, locked_by = NULL, "
    f"dead_letter_reason = CASE WHEN {_OVER} "
    f"THEN '{EXHAUSTED_REASON}' ELSE dead_letter_reason END, "
    f"dead_lettered_at = CASE WHEN {_OVER} THEN %s ELSE dead_lettered_at END "
    "FROM v WHERE {fence} "
    "AND (mqlite_message.expires_at IS NULL OR mqlite_message.expires_at > v.visible) "
    "RETURNING mqlite_message.seq, mqlite_message.state, mqlite_message.order_key, "
    "mqlite_message.batch_id, mqlite_message.snooze_count"
)

# -- name: renew_with_notes ---------------------------------------------------------------
# A renewal that also writes what handlers reported since the last one (``running``):
# each item's progress and checkpoint (JSON, or NULL to keep the stored one). Parameters:
# the VALUES rows (seq, token, progress, checkpoint), then the new deadline, then
# ``joined_fence``'s. Returns a ``RenewedRow``.
RENEW_WITH_NOTES = (
    "WITH v (seq, token, progress, checkpoint) AS (VALUES {values}) "
    "UPDATE mqlite_message {hint} SET locked_until = {extend}, "
    "progress = COALESCE(v.progress, mqlite_message.progress), "
    "checkpoint = COALESCE(v.checkpoint, mqlite_message.checkpoint) "
    "FROM v WHERE {fence} "
    "RETURNING mqlite_message.seq, mqlite_message.locked_until, "
    "mqlite_message.cancel_requested_at"
)

# -- name: reject ----------------------------------------------------------------------
# Parameters: the VALUES rows (seq, token, reason, description, error, attempt), then
# now, then ``joined_fence``'s.
REJECT = (
    "WITH v (seq, token, reason, description, error, attempt) AS (VALUES {values}) "
    "UPDATE mqlite_message {hint} SET state = 'dead_lettered', lock_token = NULL, "
    "locked_until = NULL, locked_by = NULL, dead_letter_reason = v.reason, "
    "dead_letter_description = v.description, dead_lettered_at = %s, "
    f"last_error = COALESCE(v.error, mqlite_message.last_error), {_ATTEMPTS} "
    "FROM v WHERE {fence} "
    "RETURNING mqlite_message.seq, mqlite_message.state, mqlite_message.order_key, "
    "mqlite_message.batch_id"
)


def complete_plain(
    cursor: CursorWrapper,
    dialect: Dialect,
    q: QueueRow,
    pairs: Sequence[tuple[int, str]],
    now: int,
    lapsed: bool = False,
) -> list[LeftRow]:
    """Complete these pairs (no result or attempt to keep); each row completed."""
    flat = [v for pair in pairs for v in pair]
    where = fence(len(pairs), lapsed)
    if q.keep_results_ms is not None:
        cursor.execute(
            "UPDATE mqlite_message SET state = 'completed', completed_at = %s, lock_token = NULL, "
            f"locked_until = NULL, locked_by = NULL, result = NULL WHERE {where} "
            "RETURNING seq, order_key, batch_id",
            [now, q.id, now, *flat],
        )
    else:
        cursor.execute(
            f"DELETE FROM mqlite_message WHERE {where} RETURNING seq, order_key, batch_id",
            [q.id, now, *flat],
        )
    return [LeftRow(*r) for r in cursor.fetchall()]


@dataclass(frozen=True)
class KeptJson:
    """A completion as ``complete_kept`` stores it: its result and attempt record as
    JSON text (None for none), and the handler's last progress report (JSON text)."""

    result: str | None
    attempt: str | None
    progress: str | None


def encode_completion(c: Completion) -> KeptJson:
    """``c`` as JSON text; a value JSON cannot hold is an ``InvalidArgumentError``. The
    caller encodes before its transaction, so the write lock is not held for it."""
    result = (
        c._result_json
        if c._result_json is not None
        else canonical_json.dumps_arg(c.result, "result")
    )
    return KeptJson(result, canonical_json.dumps_arg(c.attempt, "attempt"), c.progress)


def complete_kept(
    cursor: CursorWrapper,
    dialect: Dialect,
    q: QueueRow,
    kept: Sequence[tuple[tuple[int, str], KeptJson]],
    now: int,
    lapsed: bool = False,
) -> list[LeftRow]:
    """Complete rows of a queue that keeps results, each with its own result and
    attempt record (and the handler's last progress report, where one has any), in one
    statement (an UPDATE joined to a VALUES list)."""
    # The handlers' last progress reports ride along where any has one (``running``);
    # otherwise the statement is the one it always was.
    noted = any(c.progress is not None for _, c in kept)
    json = dialect.json_param()
    rows = [
        [seq, token, c.result, c.attempt, *([c.progress] if noted else [])]
        for (seq, token), c in kept
    ]
    params: list[Any]
    if len(kept) > 1 and cursor.db.vendor == "postgresql":
        # One array a column: one statement text whatever the batch's size, which
        # psycopg converts (and caches) in a fraction of the time a VALUES row per item
        # takes (over 50 parameters it converts anew every time).
        arrays = "%s::bigint[], %s::text[], %s::jsonb[], %s::jsonb[]"
        values = f"SELECT * FROM unnest({arrays}{', %s::jsonb[]' if noted else ''})"
        params = [list(column) for column in zip(*rows, strict=True)]
    else:
        row = f"(%s, %s, {json}, {json}, {json})" if noted else f"(%s, %s, {json}, {json})"
        values = "VALUES " + ", ".join([row] * len(kept))
        params = [value for r in rows for value in r]
    append = dialect.json_append_expr("mqlite_message.attempts", "v.attempt")
    hint, where, fence_params = joined_fence(dialect, [pair for pair, _ in kept], q.id, now, lapsed)
    columns, progress = (
        (
            "seq, token, result, attempt, progress",
            "progress = COALESCE(v.progress, mqlite_message.progress), ",
        )
        if noted
        else ("seq, token, result, attempt", "")
    )
    cursor.execute(
        f"WITH v ({columns}) AS ({values}) "
        f"UPDATE mqlite_message {hint} SET state = 'completed', completed_at = %s, "
        f"lock_token = NULL, locked_until = NULL, locked_by = NULL, result = v.result, {progress}"
        f"{_ATTEMPTS.format(append=append)} FROM v WHERE {where} "
        "RETURNING mqlite_message.seq, mqlite_message.order_key, mqlite_message.batch_id",
        [*params, now, *fence_params],
    )
    return [LeftRow(*r) for r in cursor.fetchall()]
