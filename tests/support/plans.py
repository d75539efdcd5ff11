"""Query plans of the statements a call makes, for the plan-pinning tests
(``tests/engine/test_plans*.py``): capture what a call runs against the message table,
explain it on the database under test, and find full scans. ``EXPLAIN`` and the text of
a plan are each vendor's own (SQLite's ``EXPLAIN QUERY PLAN`` lines, PostgreSQL's plan
tree), so this module branches on the vendor: no dialect feature says how a plan reads."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from django.db import connection
from django.test.utils import CaptureQueriesContext

#: Messages behind the statements under test: enough that PostgreSQL's planner would
#: prefer a sequential scan where no index serves.
BACKLOG = 20_000


def analyze() -> None:
    """Fresh planner statistics of the message table, for realistic plans."""
    with connection.cursor() as c:
        if connection.vendor == "mysql":
            c.execute("ANALYZE TABLE mqlite_message, mqlite_queue")
            c.fetchall()
        else:
            c.execute("ANALYZE")


def explain(sql: str) -> str:
    """The plan of ``sql`` on the database under test, one line per plan line
    (MariaDB's: one per table read, ``table=... type=... key=... extra=...``)."""
    with connection.cursor() as c:
        if connection.vendor == "sqlite":
            c.execute("EXPLAIN QUERY PLAN " + sql)
            return "\n".join(str(r[-1]) for r in c.fetchall())
        c.execute("EXPLAIN " + sql)
        if connection.vendor == "mysql":
            names = [d[0] for d in c.description]
            return "\n".join(
                " ".join(
                    f"{k}={v}"
                    for k, v in zip(names, r, strict=True)
                    if k in ("table", "type", "key", "rows", "Extra")
                )
                for r in c.fetchall()
                # An INSERT's own target is written, not read.
                if dict(zip(names, r, strict=True)).get("select_type") != "INSERT"
            )
        return "\n".join(str(r[0]) for r in c.fetchall())


def full_scans(plan: str) -> list[str]:
    """Lines of a plan that read the whole message table (MariaDB: a table or a whole
    index read in full, type ALL or index)."""
    if connection.vendor == "sqlite":
        pattern = r"^SCAN (mqlite_message|m)\b(?!.*USING (COVERING )?INDEX)"
    elif connection.vendor == "mysql":
        pattern = r"^table=(mqlite_message|m|w|x|f) type=(ALL|index)\b"
    else:
        pattern = r"Seq Scan on mqlite_message"
    return [line for line in plan.splitlines() if re.search(pattern, line.strip())]


def message_statements(run: Callable[[], object]) -> Iterator[str]:
    """The statements ``run`` makes that read or write the message table."""
    with CaptureQueriesContext(connection) as ctx:
        run()
    for q in ctx.captured_queries:
        sql = q["sql"]
        if sql.startswith("EXECUTE ") and "mqlite_message" in statement_text(sql):
            yield sql  # PostgreSQL explains a prepared statement's EXECUTE
        elif "mqlite_message" in sql and sql.lstrip().upper().startswith(
            # (MariaDB's INSERT IGNORE is its ON CONFLICT ... DO NOTHING)
            (
                "SELECT",
                "UPDATE",
                "DELETE",
                "INSERT INTO MQLITE_MESSAGE",
                "WITH",
                "INSERT IGNORE INTO MQLITE_MESSAGE",
            )
        ):
            yield sql


def statement_text(execute: str) -> str:
    """The text of the statement an ``EXECUTE name(...)`` of ``engine.prepared`` runs
    (with its ``%s`` placeholders); another statement as it is."""
    if not execute.startswith("EXECUTE "):
        return execute
    from django_mqlite.engine import prepared

    name = execute.split()[1].split("(")[0]
    return next((sql for sql, got in prepared._names.items() if got[0] == name), "")


def assert_seeks(run: Callable[[], object], index: str | tuple[str, ...]) -> None:
    """Every statement ``run`` makes seeks an index (no full scan), one of them ``index``
    (or one of several indexes that serve the statement equally well)."""
    statements = list(message_statements(run))
    assert statements, "nothing was captured"
    plans = [explain(sql) for sql in statements]
    for sql, plan in zip(statements, plans, strict=True):
        assert full_scans(plan) == [], f"{sql}\n--- scans:\n{plan}"
    wanted = (index,) if isinstance(index, str) else index
    assert any(i in plan for plan in plans for i in wanted), "\n\n".join(plans)
