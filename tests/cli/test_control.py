"""``manage.py mqlite pause|resume|inspect`` and the limit options of create-queue."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

import django_mqlite as mq
from tests.support.cli_helpers import mqlite, mqlite_json

pytestmark = pytest.mark.django_db(transaction=True)


def test_pause_and_resume() -> None:
    mq.create_queue("work")
    mq.send("work", "x")
    assert "paused queue 'work'" in mqlite("pause", "work")
    assert mq.get_queue("work").paused
    assert mq.receive("work") == []
    assert mqlite_json("pause", "work")["paused"] is True  # idempotent
    assert mqlite_json("resume", "work")["paused"] is False
    assert len(mq.receive("work")) == 1


def test_pause_unknown_or_invalid_queue_is_an_error() -> None:
    with pytest.raises(CommandError, match="does not exist"):
        mqlite("pause", "nope")
    with pytest.raises(CommandError, match="does not exist"):
        mqlite("resume", "nope")
    with pytest.raises(CommandError, match="invalid queue name"):
        mqlite("pause", "a b")


def test_create_queue_sets_and_removes_limits() -> None:
    mqlite("create-queue", "lim", "--rate-limit", "2.5", "--max-in-flight", "3")
    q = mq.get_queue("lim")
    assert (q.rate_limit, q.max_in_flight) == (2.5, 3)
    mq.pause_queue("lim")
    mqlite("create-queue", "lim", "--max-in-flight", "none", "--lock-duration", "7")
    q = mq.get_queue("lim")
    assert (q.rate_limit, q.max_in_flight, q.lock_duration, q.paused) == (2.5, None, 7, True)


@pytest.mark.parametrize(
    "args",
    [
        ("--rate-limit", "0"),
        ("--rate-limit", "-1"),
        ("--rate-limit", "fast"),
        ("--rate-limit", "1e12"),
        ("--max-in-flight", "0"),
        ("--max-in-flight", "1.5"),
        ("--max-in-flight", "lots"),
    ],
)
def test_bad_limits_are_command_errors(args: tuple[str, str]) -> None:
    with pytest.raises(CommandError):
        mqlite("create-queue", "lim", *args)
    assert mq.list_queues() == []


def test_inspect_queues_and_stats_show_pause_and_limits() -> None:
    mq.create_queue("lim", rate_limit=4, max_in_flight=2)
    mq.create_queue("plain")
    mq.pause_queue("lim")
    fields = _fields(mqlite("inspect", "lim"))
    assert (fields["paused"], fields["rate limit"], fields["max in flight"]) == ("yes", "4/s", "2")
    assert _fields(mqlite("inspect", "plain"))["rate limit"] == "unlimited"
    data = mqlite_json("inspect", "lim")
    assert data["queue"]["paused"] is True and data["stats"]["max_in_flight"] == 2
    rows = {line.split()[0]: line.split() for line in mqlite("queues").splitlines()[2:]}
    assert rows["lim"][-3:] == ["yes", "4/s", "2"]
    assert rows["plain"][-3:] == ["no", "-", "-"]
    stats = {line.split()[0]: line.split() for line in mqlite("stats").splitlines()[2:]}
    assert stats["lim"][-1] == "yes" and stats["plain"][-1] == "no"
    assert mqlite_json("stats", "lim")["lim"]["paused"] is True
    with pytest.raises(CommandError, match="does not exist"):
        mqlite("inspect", "nope")


def _fields(text: str) -> dict[str, str]:
    """``key  value`` lines (keys may contain single spaces) as a dict."""
    pairs = (line.rsplit("  ", 1) for line in text.splitlines())
    return {key.strip(): value.strip() for key, value in pairs}


def test_create_queue_sets_max_snoozes() -> None:
    mqlite("create-queue", "nap", "--max-snoozes", "3")
    assert mq.get_queue("nap").max_snoozes == 3
    mqlite("create-queue", "nap", "--max-snoozes", "0")
    assert mq.get_queue("nap").max_snoozes == 0
    with pytest.raises(CommandError, match="max_snoozes"):
        mqlite("create-queue", "nap", "--max-snoozes", "-1")
