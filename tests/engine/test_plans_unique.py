"""A send with a unique key seeks the partial unique index, behind a deep backlog that
holds many keys: the insert's conflict check (PostgreSQL names it as the arbiter) and,
for a held key, the read of the holder's seq."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection

import django_mqlite as mq
from tests.support.plans import BACKLOG, analyze, assert_seeks, explain, message_statements

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def keyed() -> Iterator[None]:
    mq.create_queue("keyed")
    for i in range(0, BACKLOG, 1000):
        mq.send_batch(
            "keyed",
            [mq.OutMessage(b"x", unique_key=f"k{n}") for n in range(i, i + 1000)]
            + [mq.OutMessage(b"y") for _ in range(1000)],
        )
    analyze()
    yield


def test_a_held_key_is_found_by_the_unique_index(keyed: None) -> None:
    held = mq.peek("keyed", limit=1)[0].seq
    assert mq.send("keyed", b"again", unique_key="k0") == held
    assert_seeks(lambda: mq.send("keyed", b"again", unique_key="k0"), "mqlite_msg_unique")


def test_a_free_key_is_one_insert_whose_arbiter_is_the_unique_index(keyed: None) -> None:
    statements = list(message_statements(lambda: mq.send("keyed", b"new", unique_key="free")))
    (insert,) = statements  # no read: the key was free
    if connection.vendor == "mysql":
        # MariaDB has no ON CONFLICT: the unique index of migration 0017 refuses the
        # row and IGNORE makes that "nothing written".
        assert insert.startswith("INSERT IGNORE")
    else:
        assert "ON CONFLICT" in insert
    if connection.vendor == "postgresql":
        assert "Conflict Arbiter Indexes: mqlite_msg_unique" in explain(insert)


@pytest.mark.parametrize("policy", ["replace", "debounce"])
def test_replacing_a_held_key_seeks_the_unique_index(keyed: None, policy: str) -> None:
    """The insert, the guarded UPDATE of the holder, and nothing that scans."""
    held = mq.peek("keyed", limit=1)[0].seq
    assert mq.send("keyed", b"new", unique_key="k0", on_conflict=policy) == held
    assert_seeks(
        lambda: mq.send("keyed", b"newer", unique_key="k0", on_conflict=policy),
        "mqlite_msg_unique",
    )


def test_a_pending_key_is_found_by_its_own_index(keyed: None) -> None:
    """The pending window's index arbitrates the insert and finds the waiting holder."""
    held = mq.send("keyed", b"p", unique_key="k0", unique_while="pending")
    assert mq.send("keyed", b"again", unique_key="k0", unique_while="pending") == held
    assert_seeks(
        lambda: mq.send("keyed", b"again", unique_key="k0", unique_while="pending"),
        "mqlite_msg_pending",
    )
    statements = list(
        message_statements(
            lambda: mq.send("keyed", b"new", unique_key="free", unique_while="pending")
        )
    )
    (insert,) = statements
    if connection.vendor == "postgresql":
        assert "Conflict Arbiter Indexes: mqlite_msg_pending" in explain(insert)
