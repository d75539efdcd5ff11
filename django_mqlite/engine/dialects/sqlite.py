"""SQLite: one writer at a time (``BEGIN IMMEDIATE``), so claims need no row locks."""

from __future__ import annotations

from .base import Dialect


class SQLiteDialect(Dialect):
    vendor = "sqlite"

    def new_token_sql(self) -> str:
        return "lower(hex(randomblob(16)))"

    def greatest_sql(self, a: str, b: str) -> str:
        return f"max({a}, {b})"
