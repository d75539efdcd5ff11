"""The MariaDB engine cursor's rewrites of statement text (``dialects/mariadb_sql.py``),
which need no server: they run with every database's suite. What the rewritten
statements do is tested by the whole suite under ``MQLITE_TEST_DB=mariadb``."""

from __future__ import annotations

from typing import Any

import pytest

from django_mqlite.engine import claim, settle_sql
from django_mqlite.engine.dialects.mariadb import LOCKS, MariaDBDialect, lock_slot
from django_mqlite.engine.dialects.mariadb_sql import (
    TOKEN_MARKER,
    Piece,
    _pick_guard,
    find_top,
    placeholders,
    shape,
    split_top,
    takes_nothing,
)


def test_values_lists_become_tables_and_in_lists() -> None:
    s = shape("SELECT 1 FROM t WHERE (seq, lock_token) IN (VALUES (%s, %s), (%s, %s))")
    assert s.sql == "SELECT 1 FROM t WHERE (seq, lock_token) IN ((%s, %s), (%s, %s))"
    s = shape("SELECT v.column1 FROM q, (VALUES (0, 1, 0), (%s, 0, 1)) AS v")
    assert s.sql == (
        "SELECT v.column1 FROM q, (SELECT 0 AS column1, 1 AS column2, 0 AS column3 "
        "UNION ALL SELECT %s, 0, 1) AS v"
    )


def test_a_values_cte_before_an_update_becomes_a_joined_table() -> None:
    sql = settle_sql.REJECT.format(
        values="(%s, %s, %s, %s, %s, %s)", hint="", fence="mqlite_message.seq = v.seq", append="x"
    )
    s = shape(sql)
    assert s.cte is not None
    name, table = s.cte
    assert name == "v"
    assert table == (
        "SELECT %s AS seq, %s AS token, %s AS reason, %s AS description, %s AS error, %s AS attempt"
    )
    assert s.sql.startswith("UPDATE mqlite_message")
    assert placeholders(table) + placeholders(s.sql) == placeholders(sql)


def test_on_conflict_becomes_duplicate_key_update_or_ignore() -> None:
    upsert = shape(
        "INSERT INTO mqlite_totals (queue_id, shard, enqueued) VALUES (%s, 0, %s) "
        "ON CONFLICT (queue_id, shard) DO UPDATE SET "
        "enqueued = mqlite_totals.enqueued + excluded.enqueued"
    )
    assert upsert.sql.endswith(
        "ON DUPLICATE KEY UPDATE enqueued = mqlite_totals.enqueued + VALUES(enqueued)"
    )
    ignore = shape(
        "INSERT INTO mqlite_topic (name) VALUES (%s) ON CONFLICT (name) DO NOTHING RETURNING id"
    )
    assert ignore.sql == "INSERT IGNORE INTO mqlite_topic (name) VALUES (%s) RETURNING id"
    guarded = shape(
        "INSERT INTO mqlite_dedup (queue_id, dedup_key, seq) VALUES (%s, %s, 0) "
        "ON CONFLICT (queue_id, dedup_key) DO UPDATE SET seq = 0, "
        "expires_at = excluded.expires_at WHERE mqlite_dedup.expires_at <= %s RETURNING id"
    )
    assert guarded.upsert is not None  # an insert, then the guarded update
    assert guarded.sql.endswith("VALUES (%s, %s, 0) RETURNING id")


def test_double_quoted_names_are_backquoted_but_strings_are_not() -> None:
    s = shape('INSERT INTO t ("key", v) VALUES (\'say "hi"\', %s)')
    assert s.sql == "INSERT INTO t (`key`, v) VALUES ('say \"hi\"', %s)"


def test_casts_take_mariadb_types() -> None:
    s = shape("SELECT CAST(%s AS varchar), CAST(%s AS bigint), CAST(%s AS smallint)")
    assert s.sql == "SELECT CAST(%s AS CHAR), CAST(%s AS SIGNED), CAST(%s AS SIGNED)"


def test_the_claim_pick_gives_its_condition_as_the_guard() -> None:
    """The UPDATE that takes the picked rows re-checks the pick's condition."""
    pick = claim.PICK["mariadb"].format(limit="%s")
    assert "FOR UPDATE SKIP LOCKED" in pick and "claim_rank" in pick
    guard = _pick_guard(Piece(pick, [7, 100, 5]))
    assert guard is not None
    assert guard.sql == (
        "queue_id = %s AND state = 'active' AND blocked = 0 "
        "AND (expires_at IS NULL OR expires_at > %s)"
    )
    assert guard.params == [7, 100]
    assert _pick_guard(Piece("SELECT seq FROM mqlite_message WHERE a = 1", [])) is None
    assert TOKEN_MARKER in claim.CLAIM["mariadb"]


def test_scanning_keeps_to_the_top_level() -> None:
    sql = "UPDATE t SET a = (SELECT b FROM u WHERE c) WHERE d IN (SELECT e FROM f LIMIT 1)"
    assert find_top(sql, "WHERE") == sql.index("WHERE d")
    assert find_top(sql, "LIMIT") == -1
    assert split_top("a, f(b, c), 'd,e'") == ["a", " f(b, c)", " 'd,e'"]


def test_lock_keys_map_to_rows_in_one_order() -> None:
    assert 0 <= lock_slot("mqlite:1:g") < LOCKS
    ran: list[tuple[str, list[int]]] = []

    class Cursor:
        def execute(self, sql: str, params: list[int]) -> None:
            ran.append((sql, params))

        def fetchall(self) -> list[object]:
            return []

    MariaDBDialect().lock_keys(Cursor(), ["b", "a", "b"])
    [(sql, params)] = ran
    assert params == sorted({lock_slot("a"), lock_slot("b")})
    assert sql.endswith("ORDER BY id FOR UPDATE")


def test_a_statement_text_is_searched_for_subqueries_once(monkeypatch: Any) -> None:
    """The search for subqueries to run first is a parse of the whole text in Python;
    a send's INSERT has none, and searching it again at every send cost about 230 µs a
    send (a third of a Tasks enqueue on MariaDB)."""
    from django_mqlite.engine.dialects import mariadb_sql

    calls: list[str] = []
    real = mariadb_sql._find_hoist

    def counted(sql: str) -> Any:
        calls.append(sql)
        return real(sql)

    monkeypatch.setattr(mariadb_sql, "_find_hoist", counted)
    monkeypatch.setattr(mariadb_sql, "_hoists", {})
    cursor = mariadb_sql.MariaDBEngineCursor.__new__(mariadb_sql.MariaDBEngineCursor)
    insert = "INSERT INTO t (a, b) VALUES (%s, (SELECT max(x) FROM u))"
    picked = "UPDATE t SET a = 1 WHERE seq IN (SELECT seq FROM t LIMIT 5 FOR UPDATE)"
    for _ in range(3):
        assert cursor._next_hoist(insert) is None
        assert cursor._next_hoist(picked) == real(picked) != None  # noqa: E711
    assert calls == [insert, picked]


def test_a_write_whose_pick_found_nothing_is_recognised() -> None:
    """The MariaDB cursor does not send a write whose locking pick found no row (its
    WHERE is then ``(seq IN (NULL) AND (...))``, which matches nothing); anything else
    is sent."""
    empty = "(seq IN (NULL) AND (queue_id = %s AND state = 'active'))"
    assert takes_nothing(f"UPDATE mqlite_message SET state = 'locked' WHERE {empty}")
    assert takes_nothing(f"DELETE FROM mqlite_message WHERE {empty} RETURNING seq, queue_id")
    assert takes_nothing(
        "UPDATE mqlite_message SET state = CASE WHEN delivery_count >= (SELECT q.x FROM "
        f"mqlite_queue q WHERE q.id = mqlite_message.queue_id) THEN 'a' END WHERE {empty}"
    )
    # Another condition beside it, a pick that found rows, a read, no WHERE: sent.
    assert not takes_nothing(f"UPDATE mqlite_message SET blocked = 0 WHERE {empty} OR seq = 1")
    assert not takes_nothing(f"UPDATE mqlite_message SET blocked = 0 WHERE seq = 1 AND {empty}")
    assert not takes_nothing("UPDATE mqlite_message SET x = 1 WHERE (seq IN (%s) AND (a = 1))")
    assert not takes_nothing(f"SELECT seq FROM mqlite_message WHERE {empty}")
    assert not takes_nothing("UPDATE mqlite_message SET x = 1")


@pytest.mark.django_db
def test_a_claim_of_an_empty_queue_sends_no_write() -> None:
    """A receive on an empty queue, and a promotion with nothing due, send no write that
    its own pick already emptied (only MariaDB's cursor builds such a statement: the
    other databases pick and write in one statement)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    import django_mqlite as mq

    mq.create_queue("empty-claim")
    with CaptureQueriesContext(connection) as ctx:
        assert mq.receive("empty-claim", max_messages=8) == []
    sent = [q["sql"] for q in ctx.captured_queries]
    assert sent and not [s for s in sent if "IN (NULL) AND" in s], sent
