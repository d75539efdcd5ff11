"""``manage.py mqlite cancel QUEUE SEQ...``: ``mq.request_cancel`` for each seq; a
finished or unknown one is a CommandError after the others were cancelled."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

import django_mqlite as mq
from tests.support.cli_helpers import mqlite, mqlite_json

pytestmark = pytest.mark.django_db


def test_cancel_running_and_waiting_messages() -> None:
    mq.create_queue("c", keep_results=60)
    running = mq.send("c", 1)
    (held,) = mq.receive("c")
    waiting = mq.send("c", 2)
    out = mqlite("cancel", "c", str(running), str(waiting))
    assert f"seq {running}: cancelled (running: asked to stop)" in out
    assert mqlite_json("cancel", "c", str(running)) == {str(running): False}
    held.renew()
    assert held.cancel_requested
    assert [p.seq for p in mq.peek("c", state="dead_lettered")] == [waiting]


def test_finished_or_unknown_is_an_error_and_the_rest_still_happens() -> None:
    mq.create_queue("c", keep_results=60)
    done = mq.send("c", 1)
    (held,) = mq.receive("c")
    held.complete()
    waiting = mq.send("c", 2)
    with pytest.raises(CommandError, match="has finished") as exc:
        mqlite("cancel", "c", str(done), str(waiting), "999999")
    assert "has no message 999999" in str(exc.value)
    assert [p.seq for p in mq.peek("c", state="dead_lettered")] == [waiting]
    with pytest.raises(CommandError, match="does not exist"):
        mqlite("cancel", "nowhere", "1")
