"""``mqlite send --unique-key/--on-conflict/--unique-while``: the engine's unique keys from
the command line; what admission refuses is a CommandError with nothing written."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

import django_mqlite as mq
from tests.support.cli_helpers import mqlite, mqlite_json

pytestmark = pytest.mark.django_db


def test_a_held_key_prints_the_holders_seq(q: str) -> None:
    first = mqlite_json("send", q, "one", "--unique-key", "k")["seq"]
    assert mqlite_json("send", q, "two", "--unique-key", "k")["seq"] == first
    assert "sent seq" in mqlite("send", q, "three", "--unique-key", "k")
    replaced = mqlite_json("send", q, "four", "--unique-key", "k", "--on-conflict", "replace")
    assert replaced["seq"] == first
    [only] = mq.peek(q)
    assert only.text() == "four"


def test_a_pending_key_frees_at_the_claim(q: str) -> None:
    args = ("--unique-key", "k", "--unique-while", "pending")
    first = mqlite_json("send", q, "one", *args)["seq"]
    mq.receive(q)
    assert mqlite_json("send", q, "two", *args)["seq"] != first


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--unique-key", "k" * 201], "unique_key"),
        (["--unique-key", "k", "--on-conflict", "overwrite"], "on_conflict must be one of"),
        (["--on-conflict", "skip"], "on_conflict needs a unique_key"),
        (["--unique-key", "k", "--unique-while", "running"], "unique_while must be one of"),
        (["--unique-while", "pending"], "unique_while needs a unique_key"),
    ],
)
def test_bad_unique_options_are_a_command_error_with_nothing_written(
    q: str, args: list[str], says: str
) -> None:
    with pytest.raises(CommandError, match=says):
        mqlite("send", q, "x", *args)
    assert mq.peek(q) == []


def test_replacing_a_holder_a_worker_has_is_a_command_error(q: str) -> None:
    mqlite("send", q, "one", "--unique-key", "k")
    mq.receive(q)
    with pytest.raises(CommandError, match="a consumer holds"):
        mqlite("send", q, "two", "--unique-key", "k", "--on-conflict", "replace")
    assert [p.text() for p in mq.peek(q)] == ["one"]
