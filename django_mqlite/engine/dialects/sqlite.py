"""SQLite: one writer at a time (``BEGIN IMMEDIATE``), so claims need no row locks."""

from __future__ import annotations

from .base import Dialect


class SQLiteDialect(Dialect):
    vendor = "sqlite"
    counts_enqueued = True

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
