"""Operator limits on claiming: pause, ``rate_limit`` and ``max_in_flight``.

A queue with neither limit is claimed by the plain claim statement and pays nothing
here; only a limited queue's claim carries a budget. The budget is a scalar subquery in
the claim's ``LIMIT``, so it is computed by the claim statement itself, against the
queue row and the clock time the engine passes in:

- ``rate_limit``: a token bucket on the queue row. It holds at most one second's worth
  of claims (and never less than one claim), refills continuously at the rate, and each
  claimed message takes one token. Tokens are kept in millionths of a claim and the rate
  in claims per 1000 seconds, so the arithmetic is exact integer math on every database.
- ``max_in_flight``: the queue's locked messages are counted (a seek on the state index,
  over at most the limit plus expired leases not yet reaped) and the rest is the budget.

Claims that spend a budget must not interleave. SQLite runs one writer at a time. On
PostgreSQL a limited claim first locks the queue row, so claimers of one limited queue
take turns and each one's claim statement starts from a snapshot that already holds the
previous claims and the tokens they spent. The spend (tokens taken off the queue row)
runs in the claim's transaction, right after the claim statement: a statement cannot
update two tables on SQLite.
"""

from __future__ import annotations

import math

from django.db.backends.utils import CursorWrapper

from ..exceptions import InvalidArgumentError
from .dialects import Dialect
from .rows import QueueRow

MICRO = 1_000_000  # tokens per claim
MIN_RATE, MAX_RATE = 0.001, 1_000_000.0  # claims per second
MAX_IN_FLIGHT = 1_000_000
# A refill longer than this fills any bucket (the slowest rate, 0.001/s, earns one claim
# in 1000 s); clamping it keeps the arithmetic far inside 64 bits after a long idle.
REFILL_CAP_MS = 1_000_000


def rate_limit_milli(value: object) -> int | None:
    """``rate_limit`` (claims per second, or None) as the stored claims per 1000 s."""
    if value is None:
        return None
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or not MIN_RATE <= value <= MAX_RATE
    ):
        raise InvalidArgumentError(
            f"rate_limit must be claims per second in [{MIN_RATE}, {MAX_RATE:.0f}] "
            f"or null, not {value!r}"
        )
    return round(float(value) * 1000)


def max_in_flight(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_IN_FLIGHT:
        raise InvalidArgumentError(
            f"max_in_flight must be an integer in [1, {MAX_IN_FLIGHT}] or null, not {value!r}"
        )
    return value


def _tokens_sql(dialect: Dialect) -> str:
    """The bucket's content now (one %s: now in ms), from the queue row's columns."""
    g, least = dialect.greatest_sql, dialect.least_sql
    elapsed = least(g("%s - rate_refill_at", "0"), str(REFILL_CAP_MS))
    capacity = g(str(MICRO), f"rate_limit_milli * {MICRO // 1000}")
    return least(capacity, f"rate_tokens + {elapsed} * rate_limit_milli")


def budget(
    cursor: CursorWrapper, dialect: Dialect, q: QueueRow, now: int, wanted: int
) -> tuple[str, list[int]]:
    """How many messages a claim of ``q`` may take: SQL for its ``LIMIT`` and the
    parameters of that SQL. Locks the queue row first where claimers run concurrently."""
    if dialect.concurrent_writers:
        cursor.execute("SELECT 1 FROM mqlite_queue WHERE id = %s FOR UPDATE", [q.id])
    terms: list[str] = ["%s"]
    params: list[int] = [wanted]
    if q.rate_limit_milli is not None:
        terms.append(f"{_tokens_sql(dialect)} / {MICRO}")
        params.append(now)
    if q.max_in_flight is not None:
        terms.append(
            "max_in_flight - (SELECT count(*) FROM mqlite_message"
            " WHERE queue_id = mqlite_queue.id AND state = 'locked')"
        )
    n = dialect.greatest_sql("0", dialect.least_sql(*terms))
    return f"(SELECT {n} FROM mqlite_queue WHERE id = %s)", [*params, q.id]


def spend(cursor: CursorWrapper, dialect: Dialect, q: QueueRow, now: int, claimed: int) -> None:
    """Take ``claimed`` tokens from ``q``'s bucket (in the claim's transaction)."""
    if q.rate_limit_milli is None or not claimed:
        return
    # The refill time never moves back: a claimer whose clock reading is older than the
    # last refill (it read the clock, then waited for the queue row's lock) earned
    # nothing (elapsed is never negative), and setting its reading would let the next
    # claim earn that interval again.
    refill = dialect.greatest_sql("rate_refill_at", "%s")
    cursor.execute(
        f"UPDATE mqlite_queue SET rate_tokens = {_tokens_sql(dialect)} - %s, "
        f"rate_refill_at = {refill} WHERE id = %s",
        [now, claimed * MICRO, now, q.id],
    )
