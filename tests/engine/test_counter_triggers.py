"""Migration 0008's triggers keep the ``enqueued`` totals (SQLite: on every insert;
PostgreSQL: the deferred count of later sends in a transaction), and it reverses
cleanly: back at 0007 the triggers are gone and the senders of that code count alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.core.management import call_command
from django.db import connection, transaction

import django_mqlite as mq
from tests.support.features import has
from tests.support.triggers import triggers

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def back_at_0007() -> Iterator[None]:
    call_command("migrate", "django_mqlite", "0007", verbosity=0)
    try:
        yield
    finally:
        call_command("migrate", "django_mqlite", verbosity=0)


def test_the_triggers_are_installed() -> None:
    want = "mqlite_count_enqueued" if has("counting_trigger") else "mqlite_count_deferred"
    assert triggers() == {want}
    if connection.vendor == "mysql":  # MariaDB's updates its totals row first (0024)
        with connection.cursor() as c:
            c.execute(
                "SELECT action_statement FROM information_schema.triggers "
                "WHERE trigger_schema = DATABASE() AND trigger_name = %s",
                [want],
            )
            [(body,)] = c.fetchall()
        assert body.startswith("BEGIN UPDATE mqlite_totals SET enqueued = enqueued + 1"), body
        assert "IF ROW_COUNT() = 0 THEN INSERT INTO mqlite_totals" in body


def test_the_migration_reverses_and_reapplies(back_at_0007: None) -> None:
    assert triggers() == set()
    call_command("migrate", "django_mqlite", verbosity=0)
    assert triggers()
    mq.create_queue("after")
    with transaction.atomic():
        mq.send("after", 1)
        mq.send("after", 2)
    mq.send_batch("after", [mq.OutMessage(3)])
    assert mq.stats("after").totals["enqueued"] == 3


def test_a_send_counts_once_whether_its_totals_row_exists_or_not() -> None:
    """The first send of a writer's shard makes its totals row, later ones add to it
    (MariaDB's trigger updates first and inserts only when it found no row)."""
    mq.create_queue("rows")
    mq.send("rows", 1)
    mq.send("rows", 2)
    assert mq.stats("rows").totals["enqueued"] == 2
    with connection.cursor() as c:
        c.execute(
            "DELETE FROM mqlite_totals WHERE queue_id = "
            "(SELECT id FROM mqlite_queue WHERE name = %s)",
            ["rows"],
        )
    assert mq.stats("rows").totals["enqueued"] == 0
    with transaction.atomic():
        sent = [mq.send("rows", 3), mq.send("rows", 4)]
    sent.append(mq.send("rows", 5))
    assert mq.stats("rows").totals["enqueued"] == 3
    # Each send answers its own seq, not the id of the totals row its count inserted.
    assert [(m.seq, m.body) for m in mq.peek("rows")][2:] == list(
        zip(sent, [b"3", b"4", b"5"], strict=True)
    )
