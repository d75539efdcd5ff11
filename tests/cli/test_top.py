"""``manage.py mqlite top``: frames rendered as a pure function, rates between frames,
the last minutes from the history, and the command's refresh loop."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.core.management.base import CommandError

import django_mqlite as mq
from django_mqlite.cli import top
from django_mqlite.engine.types import TOTAL_NAMES
from tests.support.cli_helpers import mqlite

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)


def stats(
    name: str, *, active: int = 0, enqueued: int = 0, completed: int = 0, abandoned: int = 0
) -> mq.QueueStats:
    counts = dict.fromkeys(
        ("active", "locked", "deferred", "scheduled", "completed", "dead_lettered"), 0
    )
    totals = dict.fromkeys(TOTAL_NAMES, 0)
    counts["active"] = active
    totals.update(enqueued=enqueued, completed=completed, abandoned=abandoned)
    return mq.QueueStats(
        queue=name, counts=counts, oldest_active_age=75.0 if active else None, totals=totals
    )


def test_render_first_frame_has_no_rates() -> None:
    frame = top.Frame(
        at_ms=int(T0.timestamp() * 1000),
        stats={"orders": stats("orders", active=1234, enqueued=50)},
        recent={
            "orders": {
                **dict.fromkeys(TOTAL_NAMES, 0),
                "enqueued": 7,
                "rejected": 2,
            }
        },
    )
    lines = top.render(frame).splitlines()
    assert lines[0] == "mqlite top  2026-03-02 12:00:00 UTC  1 queue"
    assert lines[2].split() == " ".join(top.HEADER).split()
    assert lines[3].split() == [
        "orders",
        "1,234",
        "0",
        "0",
        "0",
        "0",
        "75s",
        "-",
        "-",
        "-",
        "7",
        "0",
        "2",
    ]


def test_render_rates_since_the_previous_frame() -> None:
    t = int(T0.timestamp() * 1000)
    before = top.Frame(t, {"a": stats("a", enqueued=10, completed=5)}, {})
    after = top.Frame(
        t + 4000,
        {"a": stats("a", enqueued=30, completed=13, abandoned=2), "b": stats("b")},
        {},
    )
    rows = {line.split()[0]: line.split() for line in top.render(after, before).splitlines()[3:]}
    assert rows["a"][7:10] == ["5.0", "2.0", "0.5"]
    assert rows["b"][7:10] == ["-", "-", "-"]  # new since the previous frame
    assert json.loads(top.as_json(after, before))["queues"]["a"]["per_second"] == {
        "in": 5.0,
        "done": 2.0,
        "failed": 0.5,
    }


def test_render_without_queues() -> None:
    assert top.render(top.Frame(0, {}, {})).endswith("no queues")


def test_the_last_minutes_come_from_the_history() -> None:
    with mq.clock.frozen(T0) as clock:
        mq.create_queue("h")
        for i in range(7):
            mq.send_batch("h", [mq.OutMessage(b"x")] * (i + 1))
            for m in mq.receive("h", max_messages=i + 1):
                m.complete()
            clock.advance(60)
            mq.reap()
        frame = top.take()
    # The last five minutes: the current one (nothing yet) and minutes 4-7 (4+5+6+7).
    assert frame.recent["h"]["enqueued"] == 22 and frame.recent["h"]["completed"] == 22
    assert frame.stats["h"].totals["enqueued"] == 28


def test_command_refreshes_n_times(q: str) -> None:
    mq.send(q, "a")
    out = mqlite("top", "--iterations", "2", "--interval", "0.01")
    assert out.count("mqlite top") == 2 and out.count(f"\n{q} ") == 2
    assert "\x1b[" not in out  # not a terminal: no screen clearing


def test_command_json_lines(q: str) -> None:
    mq.send(q, "a")
    lines = mqlite("top", "--json", "--iterations", "3", "--interval", "0.01").splitlines()
    frames = [json.loads(line) for line in lines]
    assert len(frames) == 3
    assert frames[0]["queues"][q]["per_second"] is None
    assert frames[2]["queues"][q]["per_second"] == {"in": 0.0, "done": 0.0, "failed": 0.0}
    assert frames[0]["queues"][q]["last_5_minutes"]["enqueued"] == 1


@pytest.mark.parametrize("args", [["--interval", "0"], ["--interval", "x"], ["--iterations", "-1"]])
def test_command_bad_flags(args: list[str]) -> None:
    with pytest.raises(CommandError):
        mqlite("top", *args)
