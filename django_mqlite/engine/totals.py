"""A queue's lifetime counters (``mqlite_totals``): ``bump_totals`` adds to them in the
current transaction, as one upsert into the queue's row for this writer's shard."""

from __future__ import annotations

from django.db.backends.utils import CursorWrapper

from .dialects import Dialect
from .types import TOTAL_NAMES

_totals_sql: dict[tuple[str, tuple[str, ...]], str] = {}


def bump_totals(cursor: CursorWrapper, dialect: Dialect, queue_id: int, **counts: int) -> None:
    """Add to a queue's lifetime counters in the current transaction."""
    counts = {k: v for k, v in counts.items() if v}
    if not counts:
        return
    names = tuple(sorted(counts))
    key = (dialect.vendor, names)
    sql = _totals_sql.get(key)
    if sql is None:
        assert set(names) <= set(TOTAL_NAMES)
        cols = ", ".join(names)
        params = ", ".join(["%s"] * len(names))
        sets = ", ".join(f"{n} = mqlite_totals.{n} + excluded.{n}" for n in names)
        defaults = ", ".join(f"{n}" for n in TOTAL_NAMES if n not in names)
        zero = ", ".join("0" for n in TOTAL_NAMES if n not in names)
        sql = (
            f"INSERT INTO mqlite_totals (queue_id, shard, {cols}"
            f"{', ' + defaults if defaults else ''}) "
            f"VALUES (%s, {dialect.totals_shard_sql()}, {params}{', ' + zero if zero else ''}) "
            f"ON CONFLICT (queue_id, shard) DO UPDATE SET {sets}"
        )
        _totals_sql[key] = sql
    cursor.execute(sql, [queue_id, *(counts[n] for n in names)])
