"""``manage.py mqlite batches [ID]``: the batches and their progress, or one batch; a
message's own batch of one (a chain step, a message others wait for) is not listed."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

import django_mqlite as mq
from tests.support.cli_helpers import mqlite, mqlite_json

pytestmark = pytest.mark.django_db


def test_batches_and_their_progress() -> None:
    mq.create_queue("kids")
    assert "no batches" in mqlite("batches")
    with mq.batch(on_complete=mq.Callback("kids", "done")) as b:
        b.send("kids", "a")
        b.send("kids", "b")
    first = mq.Step("kids", "x").then(mq.Step("kids", "y")).send()
    mq.send("kids", "z", depends_on=[first])
    assert f"batch {b.id}  running  0 of 2 settled" in mqlite("batches")
    got = {m.text(): m for m in mq.receive("kids", max_messages=5)}
    got["a"].complete()
    got["b"].reject("Bad")
    listed = mqlite_json("batches")
    assert [x["id"] for x in listed] == [b.id]
    assert (listed[0]["state"], listed[0]["completed"], listed[0]["failed"]) == ("finished", 1, 1)
    assert mqlite_json("batches", "--state", "running") == []
    shown = mqlite("batches", str(b.id))
    assert "1 completed, 1 failed" in shown and "on_complete: enqueued as seq" in shown


@pytest.mark.parametrize(
    ("args", "match"),
    [(["batches", "999999"], "does not exist"), (["batches", "--limit", "0"], "limit")],
)
def test_bad_arguments_are_command_errors(args: list[str], match: str) -> None:
    with pytest.raises(CommandError, match=match):
        mqlite(*args)
