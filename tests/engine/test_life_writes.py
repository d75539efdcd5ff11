"""What a message's life writes on SQLite, kept to what its guarantees need: a claim or
a settlement updates the queue's totals row without an upsert, which would take a number
from ``sqlite_sequence`` and rewrite that page in every claim (``engine/totals.py``), and
a receipt takes no ``AUTOINCREMENT`` number (migration 0023). The counters stay exact: a
missing totals row is still created by the upsert."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.db import connection

import django_mqlite as mq
from tests.support.features import has

pytestmark = pytest.mark.django_db(transaction=True)


def _totals_sequence() -> int | None:
    if not has("sequence_page"):
        return None
    with connection.cursor() as c:
        c.execute("SELECT seq FROM sqlite_sequence WHERE name = 'mqlite_totals'")
        row = c.fetchone()
    return None if row is None else int(row[0])


def _life(queue: str) -> None:
    mq.send(queue, {"n": 1})
    (m,) = mq.receive(queue, max_messages=1)
    mq.complete(queue, m.seq, m.lock_token or "")


def test_a_claim_and_its_settlement_take_no_sequence_number() -> None:
    mq.create_queue("life")
    _life("life")
    before = _totals_sequence()
    _life("life")
    _life("life")
    # Only the sends' trigger upserts (the message's own number is taken in the same
    # statement, so that page is written anyway): two, not six.
    if before is not None:
        assert _totals_sequence() == before + 2
    totals = mq.stats("life").totals
    assert (totals["enqueued"], totals["delivered"], totals["completed"]) == (3, 3, 3)


def test_a_missing_totals_row_is_created_by_the_claim() -> None:
    mq.create_queue("bare")
    mq.send("bare", {"n": 1})
    with connection.cursor() as c:
        c.execute("DELETE FROM mqlite_totals")
    (m,) = mq.receive("bare", max_messages=1)
    mq.complete("bare", m.seq, m.lock_token or "")
    totals = mq.stats("bare").totals
    assert (totals["enqueued"], totals["delivered"], totals["completed"]) == (0, 1, 1)


def _sequences() -> set[str]:
    with connection.cursor() as c:
        c.execute("SELECT name FROM sqlite_sequence")
        return {name for (name,) in c.fetchall()}


def _receipt_table() -> str:
    with connection.cursor() as c:
        c.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'mqlite_receipt'")
        return str(c.fetchone()[0])


@pytest.fixture
def back_at_0022() -> Iterator[None]:
    call_command("migrate", "django_mqlite", "0022", verbosity=0)
    try:
        yield
    finally:
        call_command("migrate", "django_mqlite", verbosity=0)


def test_a_receipt_takes_no_sequence_number() -> None:
    mq.create_queue("receipts")
    _life("receipts")
    if has("sequence_page"):
        assert "AUTOINCREMENT" not in _receipt_table()
        assert "mqlite_receipt" not in _sequences()
    # The receipt is written and answers the exact retry all the same.
    with connection.cursor() as c:
        c.execute("SELECT count(*) FROM mqlite_receipt")
        assert c.fetchone()[0] == 1


def test_the_receipt_migration_reverses_and_keeps_the_receipts(back_at_0022: None) -> None:
    mq.create_queue("kept")
    _life("kept")
    if has("sequence_page"):
        assert "AUTOINCREMENT" in _receipt_table()
    call_command("migrate", "django_mqlite", verbosity=0)
    if has("sequence_page"):
        assert "AUTOINCREMENT" not in _receipt_table()
        with connection.cursor() as c:
            c.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'mqlite_receipt'")
            names = {name for (name,) in c.fetchall()}
        assert names == {"mqlite_receipt", "mqlite_receipt_key", "mqlite_receipt_exp"}
    with connection.cursor() as c:
        c.execute("SELECT seq, verb FROM mqlite_receipt")
        assert len(c.fetchall()) == 1
    _life("kept")
    totals = mq.stats("kept").totals
    assert totals["completed"] == 2
