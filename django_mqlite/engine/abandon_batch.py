"""``abandon_batch``: give many claimed messages back in one statement, each with its
own retry delay and error (a worker's failed handlers, written like its completions:
one statement and one commit per batch).

Each item follows ``settle.abandon``'s rule exactly: fenced on its token and a live
lease; retried (now, or parked in ``scheduled`` for its delay) or dead-lettered when
this was its last allowed delivery; a receipt per item keyed by its delay, so an exact
replay of an abandon that committed is True. A stale item is False, never an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from ..exceptions import InvalidArgumentError
from . import core
from .clock import now_ms
from .settle import DEAD_LETTER_EXHAUSTED, MAX_COMPLETE_BATCH, MAX_ERROR, _receipt_ttl_ms

# -- name: abandon_batch -----------------------------------------------------------------
# Parameters: the VALUES rows (seq, token, visible_at, error), then max, now, max, max,
# now, queue id, now.
_ABANDON = (
    "WITH v (seq, token, visible, error) AS (VALUES {values}) "
    "UPDATE mqlite_message SET "
    "state = CASE WHEN delivery_count >= %s THEN 'dead_lettered' "
    "WHEN v.visible > %s THEN 'scheduled' ELSE 'active' END, "
    "visible_at = v.visible, lock_token = NULL, locked_until = NULL, locked_by = NULL, "
    "dead_letter_reason = CASE WHEN delivery_count >= %s "
    f"THEN '{DEAD_LETTER_EXHAUSTED}' ELSE dead_letter_reason END, "
    "dead_lettered_at = CASE WHEN delivery_count >= %s THEN %s ELSE dead_lettered_at END, "
    "last_error = COALESCE(v.error, last_error) "
    "FROM v WHERE mqlite_message.seq = v.seq AND mqlite_message.lock_token = v.token "
    "AND mqlite_message.queue_id = %s AND mqlite_message.state = 'locked' "
    "AND mqlite_message.locked_until > %s "
    "RETURNING mqlite_message.seq, mqlite_message.state, mqlite_message.order_key"
)


def abandon_batch(
    queue: str,
    items: Sequence[tuple[int, str, float, str | None]],
    *,
    using: str | None = None,
) -> list[bool]:
    """Abandon many ``(seq, lock_token, delay_s, error)`` in one transaction."""
    if not isinstance(items, list | tuple) or len(items) > MAX_COMPLETE_BATCH:
        raise InvalidArgumentError(f"items must be a list of at most {MAX_COMPLETE_BATCH}")
    checked: list[tuple[int, str, int, str | None]] = []
    for seq, token, delay, error in items:
        if error is not None and not isinstance(error, str):
            raise InvalidArgumentError("error must be a string")
        checked.append(
            (
                core.check_seq(seq),
                core.check_token(token),
                core.duration_ms(delay, "delay"),
                None if error is None else error[:MAX_ERROR],
            )
        )
    if len({c[0] for c in checked}) != len(checked):
        raise InvalidArgumentError("a seq appears twice")
    if not checked:
        return []
    alias = core.alias_of(using, queue)
    cursor, dialect = core.ctx(alias)
    with transaction.atomic(using=alias):
        q = core.load_queue(cursor, queue)
        now = now_ms()
        mx = q.max_delivery_count
        params: list[Any] = []
        for seq, token, delay_ms, error in checked:
            params += [seq, token, now + delay_ms, error]
        values = ", ".join(["(%s, %s, %s, %s)"] * len(checked))
        cursor.execute(_ABANDON.format(values=values), [*params, mx, now, mx, mx, now, q.id, now])
        rows = cursor.fetchall()
        done = {r[0] for r in rows}
        dead = [r for r in rows if r[1] == "dead_lettered"]
        core.release_lines(cursor, dialect, q.id, [r[2] for r in dead])
        core.bump_totals(
            cursor,
            dialect,
            q.id,
            abandoned=len(rows),
            retried=len(rows) - len(dead),
            exhausted=len(dead),
            dead_lettered=len(dead),
        )
        out = []
        receipts: list[Any] = []
        expires = now + _receipt_ttl_ms()
        for seq, token, delay_ms, _error in checked:
            args = f"delay_ms={delay_ms}"
            if seq in done:
                receipts += [seq, token, "abandon", args, expires]
                out.append(True)
            else:
                out.append(_replayed(cursor, seq, token, args, now))
        if receipts:
            cursor.execute(
                "INSERT INTO mqlite_receipt (seq, lock_token, verb, args, expires_at) VALUES "
                + ", ".join(["(%s, %s, %s, %s, %s)"] * (len(receipts) // 5)),
                receipts,
            )
        return out


def _replayed(cursor: Any, seq: int, token: str, args: str, now: int) -> bool:
    cursor.execute(
        "SELECT 1 FROM mqlite_receipt WHERE seq = %s AND lock_token = %s AND verb = 'abandon' "
        "AND args = %s AND expires_at > %s",
        [seq, token, args, now],
    )
    return cursor.fetchone() is not None
