"""The cursor the engine runs its statements on (engine/cursor.py): on SQLite and
PostgreSQL the driver's own cursor while nothing records queries or wraps executes,
keeping what Django's cursor guarantees (driver errors as ``django.db`` exceptions, no
statement in a transaction that must roll back); Django's cursor otherwise, so that
nothing the engine runs is hidden from ``CaptureQueriesContext`` or an execute wrapper."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq
from django_mqlite.engine import cursor as engine_cursor
from django_mqlite.engine.cursor import cursor_for

pytestmark = pytest.mark.django_db(transaction=True)

#: Which cursor class each database's engine statements run on while nothing records.
DIRECT = {
    "sqlite": engine_cursor.SQLiteEngineCursor,
    "postgresql": engine_cursor.DirectEngineCursor,
}


def test_the_driver_cursor_is_used_while_nothing_records() -> None:
    cursor = cursor_for("default")
    if connection.vendor in DIRECT:
        assert type(cursor) is DIRECT[connection.vendor]
    else:  # MariaDB: its engine cursor wraps Django's
        assert type(cursor) not in DIRECT.values()


def test_a_driver_error_is_djangos_exception() -> None:
    mq.create_queue("c")
    cursor = cursor_for("default")
    with pytest.raises(IntegrityError) as caught, transaction.atomic():
        cursor.execute("INSERT INTO mqlite_queue (id, name) SELECT id, name FROM mqlite_queue")
    # The class is django.db's (the driver's error is its cause), as from Django's cursor.
    assert type(caught.value).__module__ == "django.db.utils"
    assert caught.value.__cause__ is not None
    assert [q.name for q in mq.list_queues()] == ["c"]


def test_no_statement_runs_in_a_transaction_that_must_roll_back() -> None:
    mq.create_queue("c")
    with transaction.atomic():
        cursor = cursor_for("default")
        with pytest.raises(DatabaseError):
            with transaction.atomic():  # a savepoint: the error marks it for rollback
                cursor.execute("SELECT no_such_column FROM mqlite_queue")
                pytest.fail("the statement above fails")  # pragma: no cover
        transaction.set_rollback(True)
        with pytest.raises(TransactionManagementError):
            cursor.execute("SELECT 1")


def a_send(sql: str) -> bool:
    """Whether ``sql`` is a send: the statement, or the EXECUTE of it prepared."""
    return "INTO mqlite_message" in sql or sql.startswith("EXECUTE mqlite_send")


def test_recorded_and_wrapped_statements_go_through_djangos_cursor() -> None:
    mq.create_queue("c")
    with CaptureQueriesContext(connection) as ctx:
        assert type(cursor_for("default")) not in DIRECT.values()
        mq.send("c", {"n": 1})
    assert any(a_send(q["sql"]) for q in ctx.captured_queries)

    seen: list[str] = []

    def wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        assert type(cursor_for("default")) not in DIRECT.values()
        mq.send("c", {"n": 2})
    assert any(a_send(s) for s in seen)
    assert [m.json() for m in mq.peek("c")] == [{"n": 1}, {"n": 2}]


@pytest.mark.parametrize("how", ["plain", "functools.wraps"])
def test_a_tracer_that_replaced_cursorwrapper_execute_sees_the_engines_statements(
    monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Sentry's Django integration (and other tracers) replace ``CursorWrapper.execute``
    on the class to see every query; the engine then runs on Django's cursor."""
    mq.create_queue("c")
    real = CursorWrapper.execute
    seen: list[str] = []

    def execute(self: CursorWrapper, sql: Any, params: Any = None) -> Any:
        seen.append(str(sql))
        return real(self, sql, params)

    patched = functools.wraps(real)(execute) if how == "functools.wraps" else execute
    monkeypatch.setattr(CursorWrapper, "execute", patched)
    assert type(cursor_for("default")) not in DIRECT.values()
    mq.send("c", {"n": 1})
    assert any(a_send(s) for s in seen)
    monkeypatch.undo()
    if connection.vendor in DIRECT:  # Django's own again: the direct cursor again
        assert type(cursor_for("default")) is DIRECT[connection.vendor]
