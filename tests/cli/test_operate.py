"""``manage.py mqlite`` subcommands that change things: create-queue, send, redrive, purge."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError

import django_mqlite as mq
from tests.support.cli_helpers import mqlite, mqlite_json

pytestmark = pytest.mark.django_db


def test_create_queue_and_change_one_setting() -> None:
    assert "created queue 'orders'" in mqlite(
        "create-queue",
        "orders",
        "--ordering",
        "group_fifo",
        "--lock-duration",
        "45",
        "--max-delivery-count",
        "3",
        "--content-dedup",
    )
    assert "updated queue 'orders'" in mqlite("create-queue", "orders", "--lock-duration", "60")
    q = mq.get_queue("orders")
    # Settings not given keep their current values.
    assert (q.ordering, q.lock_duration, q.max_delivery_count, q.content_dedup) == (
        "group_fifo",
        60,
        3,
        True,
    )
    data = mqlite_json("create-queue", "orders", "--no-content-dedup")
    assert data["content_dedup"] is False and data["lock_duration"] == 60


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["create-queue", "bad name"], "invalid queue name"),
        (["create-queue", "x", "--ordering", "sideways"], "ordering must be one of"),
        (["create-queue", "x", "--lock-duration", "0"], "lock_duration must be > 0"),
        (["create-queue", "x", "--max-delivery-count", "many"], "invalid int value"),
    ],
)
def test_create_queue_bad_input(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        mqlite(*args)


def test_send_text_json_and_options(q: str) -> None:
    out = mqlite("send", q, "hello", "--subject", "greeting", "--priority", "3")
    seq = int(out.split()[2])
    data = mqlite_json("send", q, '{"n": 1}', "--json-body", "--group", "g1")
    [a, b] = mq.peek(q)
    assert (a.seq, a.text(), a.subject, a.priority) == (seq, "hello", "greeting", 3)
    assert (b.seq, b.json(), b.group_id) == (data["seq"], {"n": 1}, "g1")


def test_send_bad_input(q: str) -> None:
    with pytest.raises(CommandError, match="does not exist"):
        mqlite("send", "nope", "x")
    with pytest.raises(CommandError, match="not valid JSON"):
        mqlite("send", q, "{oops", "--json-body")
    with pytest.raises(CommandError, match="invalid int value"):
        mqlite("send", q, "x", "--priority", "high")
    with pytest.raises(CommandError, match="priority"):
        mqlite("send", q, "x", "--priority", "99999")


def bury(q: str, n: int) -> list[int]:
    seqs = mq.send_batch(q, [mq.OutMessage(str(i)) for i in range(n)])
    for m in mq.receive(q, max_messages=n):
        assert m.lock_token
        mq.reject(q, m.seq, m.lock_token, "test")
    return seqs


def test_redrive_all_with_progress(make_queue: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from django_mqlite.cli import subcommands as cli

    monkeypatch.setattr(cli, "CHUNK", 2)
    q = mq.create_queue("dlq").name
    bury(q, 5)
    out = mqlite("redrive", q)
    assert "redriven 2 of ~5..." in out and "redriven 4 of ~5..." in out
    assert "redrove 5 message(s)" in out
    assert mq.stats(q).counts["active"] == 5


def test_redrive_some_to_another_queue(q: str) -> None:
    other = mq.create_queue("other").name
    seqs = bury(q, 3)
    assert mqlite_json("redrive", q, "--to", other, "--seq", str(seqs[0]), str(seqs[2])) == {
        "count": 2
    }
    assert [p.seq for p in mq.peek(other)] == [seqs[0], seqs[2]]


def test_redrive_bad_input(q: str) -> None:
    with pytest.raises(CommandError, match="'nope' does not exist"):
        mqlite("redrive", "nope")
    with pytest.raises(CommandError, match="'nope' does not exist"):
        mqlite("redrive", q, "--to", "nope")
    with pytest.raises(CommandError, match="invalid int value"):
        mqlite("redrive", q, "--seq", "one")
    with pytest.raises(CommandError, match="seq must be"):
        mqlite("redrive", q, "--seq", "0")


def test_purge_needs_confirmation_then_purges(q: str) -> None:
    bury(q, 3)
    mq.send(q, "live")
    with pytest.raises(CommandError, match="pass --yes"):
        mqlite("purge", q, "--noinput")
    assert "purged 3 dead_lettered message(s)" in mqlite("purge", q, "--yes")
    assert [p.state for p in mq.peek(q)] == ["active"]
    assert mqlite_json("purge", q, "--state", "active", "--yes") == {"count": 1}


def test_purge_older_than(q: str, clock: object) -> None:
    bury(q, 2)
    clock.advance(100)  # type: ignore[attr-defined]
    bury(q, 1)
    assert mqlite_json("purge", q, "--older-than", "50", "--yes") == {"count": 2}
    assert len(mq.peek(q)) == 1


def test_purge_bad_input(q: str) -> None:
    with pytest.raises(CommandError, match="--state must be one of"):
        mqlite("purge", q, "--state", "locked", "--yes")
    with pytest.raises(CommandError, match="--state must be one of"):
        mqlite("purge", q, "--state", "weird", "--yes")
    with pytest.raises(CommandError, match="invalid float value"):
        mqlite("purge", q, "--older-than", "soon", "--yes")
    with pytest.raises(CommandError, match="does not exist"):
        mqlite("purge", "nope", "--yes")


def test_unknown_subcommand() -> None:
    with pytest.raises(CommandError, match="invalid choice"):
        mqlite("explode")
