"""``mqlite send --depends-on SEQ… --depends-on-batch ID…``: the engine's dependencies
from the command line; what it refuses is a CommandError with nothing written."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management.base import CommandError

import django_mqlite as mq
from tests.support.cli_helpers import mqlite_json

pytestmark = pytest.mark.django_db


def test_a_message_waits_for_seqs_and_batches(q: str, make_queue: Any) -> None:
    make_queue("up")
    a = mq.send("up", "a")
    with mq.batch() as b:
        b.send("up", "x")
    seq = mqlite_json("send", q, "d", "--depends-on", str(a), "--depends-on-batch", str(b.id))[
        "seq"
    ]
    assert [p.state for p in mq.peek(q)] == ["waiting"]
    for m in mq.receive("up", max_messages=2):
        m.complete()
    (p,) = mq.peek(q)
    assert (p.seq, p.state) == (seq, "active")


@pytest.mark.parametrize(
    "args",
    [["--depends-on", "999999999"], ["--depends-on-batch", "999999999"], ["--depends-on", "0"]],
)
def test_a_bad_dependency_is_a_command_error(q: str, args: list[str]) -> None:
    with pytest.raises(CommandError):
        mqlite_json("send", q, "d", *args)
    assert mq.peek(q) == []
