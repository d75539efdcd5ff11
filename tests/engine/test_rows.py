"""Rows are read by name: each statement's RETURNING (or SELECT) list is exactly the
fields of the row dataclass its caller builds from it, in order (``engine/rows.py``).
A column added to a statement but not to its dataclass, or the other way round, would
shift every value after it; these tests fail first."""

from __future__ import annotations

import re
from dataclasses import fields

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq
from django_mqlite.engine import claim, settle, settle_sql
from django_mqlite.engine.dialects import PostgreSQLDialect, SQLiteDialect
from django_mqlite.engine.rows import MESSAGE_COLUMNS, MessageRow, columns

#: MariaDB has no UPDATE ... RETURNING: its engine cursor reads the updated rows back
#: by key with the statement's RETURNING list (``dialects/mariadb_sql.py``).
READ_BACK = re.compile(r"^SELECT (.+?) FROM mqlite_message WHERE seq IN \((?!.*FOR UPDATE$)")


def returned(sql: str) -> list[str]:
    """The names a statement's RETURNING list gives back (``mqlite_message.``, a ``+ 1``
    and a ``NULL AS`` dropped: the claim-and-delete counts the delivery it hands out and
    grants no lease)."""
    back = READ_BACK.match(sql)
    tail = back.group(1) if back and " RETURNING " not in sql else sql.rsplit(" RETURNING ", 1)[1]
    names = [c.strip().removeprefix("mqlite_message.") for c in tail.split(",")]
    return [re.sub(r"\s*\+\s*1$", "", n).removeprefix("NULL AS ") for n in names]


def names(row_type: type) -> list[str]:
    return [f.name for f in fields(row_type)]


def test_the_column_lists_are_the_dataclasses() -> None:
    assert MESSAGE_COLUMNS == columns(MessageRow) == ", ".join(names(MessageRow))
    assert names(claim.ClaimedRow) == [*names(MessageRow), "order_key", "batch_id"]


@pytest.mark.parametrize("dialect", [PostgreSQLDialect(), SQLiteDialect()], ids=lambda d: d.vendor)
@pytest.mark.parametrize("delete", [False, True], ids=["lock", "delete"])
@pytest.mark.parametrize("budgeted", [False, True], ids=["plain", "byte-budget"])
@pytest.mark.parametrize("groups", [False, True], ids=["", "group-batch"])
def test_the_claim_returns_a_claimed_row(
    dialect: object, delete: bool, budgeted: bool, groups: bool
) -> None:
    sql = claim._claim_statement(dialect, delete, "%s", budgeted, groups)  # type: ignore[arg-type]
    assert returned(sql) == names(claim.ClaimedRow)


@pytest.mark.parametrize("statement", ["ABANDON", "REJECT"])
def test_abandon_and_reject_return_a_moved_row(statement: str) -> None:
    assert returned(getattr(settle_sql, statement)) == names(settle_sql.MovedRow)


def _captured(run: object, start: str) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        run()  # type: ignore[operator]
    found = [
        q["sql"]
        for q in ctx.captured_queries
        if start in q["sql"] or (start == "RETURNING" and READ_BACK.match(q["sql"]))
    ]
    assert found, f"no statement with {start!r} ran"
    return found


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("keep", [None, 3600], ids=["removed", "kept"])
def test_completions_return_a_left_row(keep: int | None) -> None:
    mq.create_queue("rows", keep_results=keep)
    mq.send_batch("rows", [mq.OutMessage(i) for i in range(3)])
    ms = mq.receive("rows", max_messages=3)
    for sql in _captured(lambda: ms[0].complete(), "RETURNING"):
        assert returned(sql) == names(settle_sql.LeftRow)
    c = mq.Completion(result={"ok": 1})
    items = [(m.seq, m.lock_token or "") for m in ms[1:]]
    run = lambda: settle.complete_many("rows", items, completions=[c, c])  # noqa: E731
    for sql in _captured(run, "RETURNING"):
        assert returned(sql) == names(settle_sql.LeftRow)


@pytest.mark.django_db(transaction=True)
def test_a_renewal_returns_a_renewed_row() -> None:
    mq.create_queue("rows")
    mq.send("rows", b"x")
    (m,) = mq.receive("rows")
    (sql,) = _captured(lambda: mq.renew("rows", m.seq, m.lock_token or ""), "RETURNING")
    assert returned(sql) == names(settle_sql.RenewedRow)
