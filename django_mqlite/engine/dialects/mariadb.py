"""MariaDB 10.6+: many claimers at once, separated by ``FOR UPDATE SKIP
LOCKED``, as on PostgreSQL, with what MariaDB lacks made up here and nowhere else.

MariaDB has no ``UPDATE ... RETURNING``, no data-modifying CTE, no ``WITH`` before an
``UPDATE``, no ``ON CONFLICT``, no ``LIMIT`` in an ``IN`` subquery (error 1235) and no
subquery as a ``LIMIT``. The engine writes its statements once, in the SQL the other two
databases share; the MariaDB engine cursor (``mariadb_sql``) runs each as what MariaDB
can do, in the same transaction:

- an ``UPDATE ... RETURNING`` (a claim, a settlement) locks its rows first (``SELECT
  ... FOR UPDATE``, ``SKIP LOCKED`` where the engine's pick says so), updates exactly
  those rows with its own WHERE clause re-checked (the guard), and reads them back by
  key (a claim: by the fresh tokens it wrote, drawn in Python, ``secrets``). InnoDB holds
  every row lock to the end of the transaction, so between the lock and the read no
  other transaction can change, claim or settle a locked row: the three statements act
  on one set of rows, as the single statement does elsewhere (docs/how-it-works.md);
- a locking or limited subquery runs first and its rows replace it;
- ``ON CONFLICT`` becomes ``ON DUPLICATE KEY UPDATE`` or ``INSERT IGNORE``, or (with a
  condition on the update) an insert then a guarded update.

Partial indexes do not exist: migration 0017 gives MariaDB indexes that lead with the
state (or a virtual generated column: the claim's order, the live unique key). Wake-ups
are a bounded poll, as on SQLite; a group's lock is a row lock in ``mqlite_lock``
(``GET_LOCK`` lasts for the session, not the transaction).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import Any

from .base import Dialect
from .mariadb_sql import DEADLOCK, TOKEN_MARKER, MariaDBEngineCursor, error_code

#: Rows of ``mqlite_lock`` (migration 0017): a lock key takes row ``crc32(key) % LOCKS``.
LOCKS = 4096


def lock_slot(key: str) -> int:
    """The ``mqlite_lock`` row that stands for lock key ``key`` (MariaDB's ``CRC32``
    of the same UTF-8 text gives the same number)."""
    return zlib.crc32(key.encode()) % LOCKS


class MariaDBDialect(Dialect):
    vendor = "mariadb"
    supports_skip_locked = True
    concurrent_writers = True
    # The mqlite_count_enqueued trigger of migration 0017 adds every insert.
    counts_enqueued = True
    # The OK packet of an INSERT carries the first id it generated (its own, never one
    # a trigger's insert made): a send's seq without a RETURNING result set, which cost
    # 25-35 us of server CPU a send.
    acknowledges_insert_id = True
    # InnoDB's deadlock (1213) rolls back the whole transaction.
    retries_deadlocks = True
    # JSON columns are LONGTEXT checked by json_valid(), which refuses what JSON cannot
    # hold (a lone surrogate's escape, as jsonb does): not the text-keeping kind.
    blob_type = "BINARY"

    def engine_cursor(self, cursor: Any) -> Any:
        return MariaDBEngineCursor(cursor)

    def index_hint(self, index: str) -> str:
        # As SQLite's INDEXED BY: the plan is fixed, whatever the statistics say (the
        # indexes of migration 0017 serve each statement that names one).
        return f"FORCE INDEX ({index})"

    def row_lock_sql(self, *, exclusive: bool) -> str:
        return "FOR UPDATE" if exclusive else "LOCK IN SHARE MODE"

    def new_token_sql(self) -> str:
        return TOKEN_MARKER

    def least_sql(self, *args: str) -> str:
        return f"LEAST({', '.join(args)})"

    def greatest_sql(self, a: str, b: str) -> str:
        return f"GREATEST({a}, {b})"

    def lock_suffix(self) -> str:
        return "FOR UPDATE SKIP LOCKED"

    def json_append_sql(self, column: str) -> str:
        return self.json_append_expr(column, "%s")

    def json_append_expr(self, column: str, value: str) -> str:
        return f"JSON_ARRAY_APPEND(COALESCE({column}, '[]'), '$', JSON_EXTRACT({value}, '$'))"

    def totals_shard_sql(self) -> str:
        return "MOD(CONNECTION_ID(), 8)"

    def lock_group_sql(self) -> str:
        return f"SELECT id FROM mqlite_lock WHERE id = MOD(CRC32(%s), {LOCKS}) FOR UPDATE"

    def lock_keys(self, cursor: Any, keys: Iterable[str]) -> None:
        # One statement, the rows in key order: two writers never wait for each other
        # in opposite orders, whatever order their keys hash to.
        slots = sorted({lock_slot(k) for k in keys})
        if slots:
            cursor.execute(
                f"SELECT id FROM mqlite_lock WHERE id IN ({', '.join(['%s'] * len(slots))}) "
                "ORDER BY id FOR UPDATE",
                slots,
            )
            cursor.fetchall()

    def restarts_transaction(self, exc: BaseException) -> bool:
        # A deadlock rolls back the whole transaction (a lock wait timeout only the
        # statement: the engine cursor tries that one again).
        return error_code(exc) == DEADLOCK

    def clock_ms_sql(self) -> str:
        return "SELECT CAST(UNIX_TIMESTAMP(SYSDATE(3)) * 1000 AS SIGNED)"

    # JSON_TYPE names the stored type (INTEGER, DOUBLE, STRING, BOOLEAN, NULL, ...) and
    # is NULL for a missing key. Text compares as bytes, as on the other two.
    @staticmethod
    def _path(key: str) -> str:
        return '$."' + key + '"'  # filters.py refuses a key holding '"' or '\\'

    def json_exists_sql(self, doc: str, key: str) -> tuple[str, list[Any]]:
        return f"JSON_CONTAINS_PATH({doc}, 'one', %s)", [self._path(key)]

    def json_equals_sql(self, doc: str, key: str, value: Any) -> tuple[str, list[Any]]:
        path = self._path(key)
        typed = f"JSON_TYPE(JSON_EXTRACT({doc}, %s))"
        if value is None:
            return f"{typed} = 'NULL'", [path]
        if isinstance(value, bool):
            return (
                f"({typed} = 'BOOLEAN' AND JSON_EXTRACT({doc}, %s) = %s)",
                [path, path, "true" if value else "false"],
            )
        if isinstance(value, str):
            return (
                f"({typed} = 'STRING' AND "
                f"CAST(JSON_UNQUOTE(JSON_EXTRACT({doc}, %s)) AS BINARY) = CAST(%s AS BINARY))",
                [path, path, value],
            )
        return (
            f"({typed} IN ('INTEGER', 'DOUBLE') AND "
            f"CAST(JSON_EXTRACT({doc}, %s) AS DOUBLE) = CAST(%s AS DOUBLE))",
            [path, path, value],
        )

    def json_compare_sql(self, doc: str, key: str, op: str, number: float) -> tuple[str, list[Any]]:
        path = self._path(key)
        return (
            f"(JSON_TYPE(JSON_EXTRACT({doc}, %s)) IN ('INTEGER', 'DOUBLE') AND "
            f"CAST(JSON_EXTRACT({doc}, %s) AS DOUBLE) {op} CAST(%s AS DOUBLE))",
            [path, path, number],
        )

    def json_prefix_sql(self, doc: str, key: str, prefix: str) -> tuple[str, list[Any]]:
        path = self._path(key)
        return (
            f"(JSON_TYPE(JSON_EXTRACT({doc}, %s)) = 'STRING' AND "
            f"CAST(LEFT(JSON_UNQUOTE(JSON_EXTRACT({doc}, %s)), %s) AS BINARY) "
            "= CAST(%s AS BINARY))",
            [path, path, len(prefix), prefix],
        )

    def text_prefix_sql(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        return f"CAST(LEFT({column}, %s) AS BINARY) = CAST(%s AS BINARY)", [len(prefix), prefix]
