"""SQLite: one writer at a time (``BEGIN IMMEDIATE``), so claims need no row locks."""

from __future__ import annotations

from typing import Any

from .base import Dialect


class SQLiteDialect(Dialect):
    vendor = "sqlite"
    counts_enqueued = True
    has_commit_counter = True
    json_is_text = True
    upsert_writes_sequence = True

    def new_token_sql(self) -> str:
        return "lower(hex(randomblob(16)))"

    def index_hint(self, index: str) -> str:
        # SQLite weighs partial indexes by statistics and can pick a worse plan after
        # ANALYZE; INDEXED BY makes the plan fixed (and fails loudly if it cannot be).
        return f"INDEXED BY {index}"

    def key_hint(self) -> str:
        # NOT INDEXED still allows the rowid (primary key) lookup.
        return "NOT INDEXED"

    def json_append_sql(self, column: str) -> str:
        return self.json_append_expr(column, "%s")

    def json_append_expr(self, column: str, value: str) -> str:
        return f"json_insert(COALESCE({column}, '[]'), '$[#]', json({value}))"

    def least_sql(self, *args: str) -> str:
        return f"min({', '.join(args)})"

    def greatest_sql(self, a: str, b: str) -> str:
        return f"max({a}, {b})"

    def clock_ms_sql(self) -> str:
        # SQLite runs in this process: its clock is this host's (the skew is ~0).
        return "SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"

    # JSON1: json_type() is NULL for a missing key and names the stored type otherwise.
    @staticmethod
    def _path(key: str) -> str:
        return '$."' + key + '"'  # filters.py refuses a key holding '"' or '\\'

    def json_exists_sql(self, doc: str, key: str) -> tuple[str, list[Any]]:
        return f"json_type({doc}, %s) IS NOT NULL", [self._path(key)]

    def json_equals_sql(self, doc: str, key: str, value: Any) -> tuple[str, list[Any]]:
        path = self._path(key)
        if value is None or isinstance(value, bool):
            name = "null" if value is None else ("true" if value else "false")
            return f"json_type({doc}, %s) = '{name}'", [path]
        kind = "'text'" if isinstance(value, str) else "'integer', 'real'"
        return (
            f"(json_type({doc}, %s) IN ({kind}) AND json_extract({doc}, %s) = %s)",
            [path, path, value],
        )

    def json_compare_sql(self, doc: str, key: str, op: str, number: float) -> tuple[str, list[Any]]:
        path = self._path(key)
        return (
            f"(json_type({doc}, %s) IN ('integer', 'real') AND json_extract({doc}, %s) {op} %s)",
            [path, path, number],
        )

    def json_prefix_sql(self, doc: str, key: str, prefix: str) -> tuple[str, list[Any]]:
        path = self._path(key)
        return (
            f"(json_type({doc}, %s) = 'text' AND substr(json_extract({doc}, %s), 1, %s) = %s)",
            [path, path, len(prefix), prefix],
        )
