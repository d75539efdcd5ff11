"""PostgreSQL: many claimers at once, separated by ``FOR UPDATE SKIP LOCKED``."""

from __future__ import annotations

import json
from typing import Any

from .base import Dialect


class PostgreSQLDialect(Dialect):
    vendor = "postgresql"
    supports_skip_locked = True
    has_listen_notify = True
    concurrent_writers = True
    defers_counts = True
    writable_cte = True
    supports_prepare = True
    blob_type = "bytea"

    def row_lock_sql(self, *, exclusive: bool) -> str:
        # KEY SHARE: publishers do not block each other; FOR UPDATE waits for them.
        return "FOR UPDATE" if exclusive else "FOR KEY SHARE"

    def new_token_sql(self) -> str:
        return "replace(gen_random_uuid()::text, '-', '')"

    def least_sql(self, *args: str) -> str:
        return f"LEAST({', '.join(args)})"

    def greatest_sql(self, a: str, b: str) -> str:
        return f"GREATEST({a}, {b})"

    def lock_suffix(self) -> str:
        return "FOR UPDATE SKIP LOCKED"

    def stored_size_sql(self) -> str:
        return "octet_length(body) + COALESCE(octet_length(properties::text), 0)"

    def json_param(self) -> str:
        return "%s::jsonb"

    def json_append_sql(self, column: str) -> str:
        return self.json_append_expr(column, "%s::jsonb")

    def json_append_expr(self, column: str, value: str) -> str:
        return f"COALESCE({column}, '[]'::jsonb) || jsonb_build_array({value})"

    def totals_shard_sql(self) -> str:
        return "mod(pg_backend_pid(), 8)"

    def lock_group_sql(self) -> str:
        return "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"

    def clock_ms_sql(self) -> str:
        return "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint"

    def notify_sql(self) -> str:
        return "SELECT pg_notify('mqlite', %s)"

    # jsonb: ``->`` is NULL for a missing key; jsonb equality compares type and value.
    # Casts sit under CASE on the type, since AND does not fix an evaluation order.
    def json_exists_sql(self, doc: str, key: str) -> tuple[str, list[Any]]:
        return f"jsonb_exists({doc}, %s)", [key]

    def json_equals_sql(self, doc: str, key: str, value: Any) -> tuple[str, list[Any]]:
        return f"({doc} -> %s) = CAST(%s AS jsonb)", [key, json.dumps(value)]

    def json_compare_sql(self, doc: str, key: str, op: str, number: float) -> tuple[str, list[Any]]:
        return (
            f"(CASE WHEN jsonb_typeof({doc} -> %s) = 'number' "
            f"THEN CAST({doc} ->> %s AS numeric) END) {op} CAST(%s AS numeric)",
            [key, key, number],
        )

    def json_prefix_sql(self, doc: str, key: str, prefix: str) -> tuple[str, list[Any]]:
        return (
            f"(CASE WHEN jsonb_typeof({doc} -> %s) = 'string' THEN left({doc} ->> %s, %s) END)"
            " = %s",
            [key, key, len(prefix), prefix],
        )

    def text_prefix_sql(self, column: str, prefix: str) -> tuple[str, list[Any]]:
        return f"left({column}, %s) = %s", [len(prefix), prefix]
