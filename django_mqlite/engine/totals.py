"""A queue's lifetime counters (``mqlite_totals``): ``bump_totals`` adds to them in the
current transaction, as one upsert into the queue's row for this writer's shard.

SQLite: the row is updated first and the upsert runs only when there is none. The table's
key is ``AUTOINCREMENT``, and SQLite takes the next id for every upsert, even one that
ends as an update, so an upsert also rewrites ``sqlite_sequence``: a page of its own in a
claim, which writes no other row with an ``AUTOINCREMENT`` key (in a send and a
settlement the message or the receipt rewrites that page anyway). PostgreSQL and MariaDB
keep the single upsert: their sequences are not a page per commit."""

from __future__ import annotations

from django.db.backends.utils import CursorWrapper

from .dialects import Dialect
from .types import TOTAL_NAMES

_totals_sql: dict[tuple[str, tuple[str, ...]], str] = {}
_update_sql: dict[tuple[str, ...], str] = {}


def bump_totals(cursor: CursorWrapper, dialect: Dialect, queue_id: int, **counts: int) -> None:
    """Add to a queue's lifetime counters in the current transaction."""
    counts = {k: v for k, v in counts.items() if v}
    if not counts:
        return
    names = tuple(sorted(counts))
    values = [counts[n] for n in names]
    if dialect.upsert_writes_sequence:
        update = _update_sql.get(names)
        if update is None:
            assert set(names) <= set(TOTAL_NAMES)
            sets = ", ".join(f"{n} = {n} + %s" for n in names)
            update = (
                f"UPDATE mqlite_totals SET {sets} "
                f"WHERE queue_id = %s AND shard = {dialect.totals_shard_sql()}"
            )
            _update_sql[names] = update
        cursor.execute(update, [*values, queue_id])
        if cursor.rowcount:
            return
    key = (dialect.vendor, names)
    sql = _totals_sql.get(key)
    if sql is None:
        params = ", ".join(["%s"] * len(names))
        sql = _totals_sql[key] = _upsert(
            dialect, names, f"VALUES (%s, {{shard}}, {params}{{zero}})"
        )
    cursor.execute(sql, [queue_id, *values])


def counted_sql(dialect: Dialect, name: str, queue_sql: str, rows: str) -> str:
    """The upsert adding the number of rows of ``rows`` (a CTE's name) to the counter
    ``name`` of the queue whose id ``queue_sql`` selects, and writing nothing when there
    are none: a part of a statement with data-modifying CTEs (PostgreSQL), so that the
    count is written with the rows it counts."""
    return _upsert(
        dialect,
        (name,),
        f"SELECT ({queue_sql}), {{shard}}, count(*){{zero}} FROM {rows} HAVING count(*) > 0",
    )


def _upsert(dialect: Dialect, names: tuple[str, ...], source: str) -> str:
    """INSERT into a queue's totals row for this writer's shard what ``source`` gives
    (its queue id, ``{shard}``, the values of ``names`` in order, then ``{zero}``: the
    other counters' zeros), adding to the row when there is one."""
    assert set(names) <= set(TOTAL_NAMES)
    cols = ", ".join(names)
    sets = ", ".join(f"{n} = mqlite_totals.{n} + excluded.{n}" for n in names)
    others = [n for n in TOTAL_NAMES if n not in names]
    defaults = "".join(f", {n}" for n in others)
    zero = "".join(", 0" for _ in others)
    rows = source.format(shard=dialect.totals_shard_sql(), zero=zero)
    return (
        f"INSERT INTO mqlite_totals (queue_id, shard, {cols}{defaults}) {rows} "
        f"ON CONFLICT (queue_id, shard) DO UPDATE SET {sets}"
    )
