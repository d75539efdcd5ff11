"""Per-minute history: buckets from the reaper's samples, gaps, starting points, bounds,
retention in chunks, and that nothing on the send/claim/settle path writes it."""

from __future__ import annotations

import datetime as dt
import itertools

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

import django_mqlite as mq

pytestmark = pytest.mark.django_db

T0 = dt.datetime(2026, 3, 2, 12, 0, tzinfo=dt.UTC)  # on a minute boundary


def minute(clock: mq.clock.FrozenClock, *, reap: bool = True) -> None:
    """Move into the next minute and let the reaper close the one that ended."""
    clock.advance(60)
    if reap:
        mq.reap()


def rows(table: str = "mqlite_history") -> int:
    with connection.cursor() as c:
        c.execute(f"SELECT count(*) FROM {table}")
        return int(c.fetchone()[0])


def test_buckets_are_minutes_oldest_first_ending_with_the_current_one() -> None:
    with mq.clock.frozen(T0 + dt.timedelta(seconds=30)):
        mq.create_queue("h")
        buckets = mq.history("h")
    assert len(buckets) == 60
    starts = [b["start"] for b in buckets]
    assert starts[-1] == T0 and starts[0] == T0 - dt.timedelta(minutes=59)
    assert all(b - a == dt.timedelta(minutes=1) for a, b in itertools.pairwise(starts))
    assert all(s.tzinfo is not None and s.utcoffset() == dt.timedelta(0) for s in starts)
    assert set(buckets[-1]) == {"start", "depth", *mq.stats("h").totals}


def test_a_new_queue_counts_from_zero_and_the_current_minute_is_live() -> None:
    with mq.clock.frozen(T0):
        mq.create_queue("h")
        mq.send_batch("h", [mq.OutMessage(b"x"), mq.OutMessage(b"y")])
        [now] = mq.history("h", minutes=1)
    assert now["enqueued"] == 2 and now["delivered"] == 0
    assert now["depth"] == mq.stats("h").counts


def test_each_minute_counts_what_changed_in_it() -> None:
    with mq.clock.frozen(T0) as clock:
        mq.create_queue("h")
        mq.send_batch("h", [mq.OutMessage(str(i)) for i in range(3)])
        minute(clock)
        for m in mq.receive("h", max_messages=2):
            m.complete()
        minute(clock)
        first, second, now = mq.history("h", minutes=3)
    assert (first["start"], first["enqueued"], first["delivered"]) == (T0, 3, 0)
    assert first["depth"] == {**dict.fromkeys(first["depth"], 0), "active": 3}
    assert (second["enqueued"], second["delivered"], second["completed"]) == (0, 2, 2)
    assert second["depth"]["active"] == 1
    assert now["completed"] == 0 and now["depth"]["active"] == 1


def test_a_minute_without_a_sample_is_counted_in_the_next_sampled_one() -> None:
    with mq.clock.frozen(T0) as clock:
        mq.create_queue("h")
        mq.send("h", b"1")
        minute(clock)
        mq.send_batch("h", [mq.OutMessage(b"2"), mq.OutMessage(b"3")])
        minute(clock, reap=False)  # no reaper ran in this minute
        mq.send_batch("h", [mq.OutMessage(b"4")] * 4)
        minute(clock)
        mq.send("h", b"5")
        b = mq.history("h", minutes=4)
    assert [x["enqueued"] for x in b] == [1, 0, 6, 1]
    assert b[1]["depth"] is None
    assert [x["depth"]["active"] for x in (b[0], b[2], b[3])] == [1, 7, 8]
    assert sum(x["enqueued"] for x in b) == mq.stats("h").totals["enqueued"]


def test_a_window_starts_from_the_last_sample_before_it() -> None:
    with mq.clock.frozen(T0) as clock:
        mq.create_queue("h")
        for i in range(5):
            mq.send_batch("h", [mq.OutMessage(b"x")] * (i + 1))
            minute(clock)
        b = mq.history("h", minutes=3)
    # Minutes 3 and 4 of the five (4 and 5 messages), then the current one.
    assert [x["enqueued"] for x in b] == [4, 5, 0]


@override_settings(MQLITE={"HISTORY_RETENTION": 600})
def test_an_old_queue_without_earlier_samples_starts_at_its_first_sample() -> None:
    with mq.clock.frozen(T0) as clock:
        mq.create_queue("h")
        mq.send("h", b"x")
        clock.advance(1200)
        mq.reap()
        mq.send("h", b"y")
        before, now = mq.history("h", minutes=2)
    # Older samples could have been trimmed: the first one kept is only a starting point.
    assert (before["enqueued"], before["depth"]["active"]) == (0, 1)
    assert now["enqueued"] == 1


@pytest.mark.parametrize("bad", [0, -1, 10081, "5", 2.0, True, None])
def test_minutes_must_be_a_whole_number_in_range(q: str, bad: object) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        mq.history(q, minutes=bad)  # type: ignore[arg-type]


@override_settings(MQLITE={"HISTORY_RETENTION": 30 * 86400})
def test_a_longer_retention_allows_a_longer_window(q: str) -> None:
    assert len(mq.history(q, minutes=30 * 1440)) == 30 * 1440


def test_unknown_queue() -> None:
    with pytest.raises(mq.QueueNotFoundError):
        mq.history("nope")


def test_one_sample_per_queue_and_minute_however_often_the_reaper_runs() -> None:
    with mq.clock.frozen(T0) as clock:
        mq.create_queue("a")
        mq.create_queue("b")
        assert mq.reap()["history_sampled"] == 0  # created in this minute: nothing to close
        clock.advance(60)
        assert mq.reap()["history_sampled"] == 2
        clock.advance(30)
        assert mq.reap()["history_sampled"] == 0
        assert rows() == 2


def test_deleting_a_queue_deletes_its_history() -> None:
    with mq.clock.frozen(T0) as clock:
        mq.create_queue("h")
        minute(clock)
        minute(clock)
        assert rows() == 2
        mq.delete_queue("h")
        assert rows() == 0


def test_retention_trims_in_chunks() -> None:
    with mq.clock.frozen(T0) as clock:
        mq.create_queue("a")
        mq.create_queue("b")
        for _ in range(10):
            minute(clock)
        assert rows() == 20
        # Keep 5 minutes: samples of minutes 0-4 of both queues go, in chunks of 3 rows.
        with override_settings(MQLITE={"HISTORY_RETENTION": 300, "REAP_CHUNK": 3}):
            with CaptureQueriesContext(connection) as ctx:
                counts = mq.reap()
        deletes = [
            c["sql"]
            for c in ctx.captured_queries
            if c["sql"].startswith("DELETE FROM mqlite_history")
        ]
        assert counts["history_trimmed"] == 10
        assert len(deletes) == 4  # 3 + 3 + 3 + 1
        assert rows() == 10
        kept = mq.history("a", minutes=4)
        assert kept[0]["depth"] is not None and kept[-1]["enqueued"] == 0


def test_retention_zero_turns_history_off() -> None:
    with mq.clock.frozen(T0) as clock:
        mq.create_queue("h")
        minute(clock)
        assert rows() == 1
        with override_settings(MQLITE={"HISTORY_RETENTION": 0}):
            minute(clock)
            assert rows() == 0
            assert mq.reap()["history_sampled"] == 0


def test_send_claim_and_settle_never_touch_history(q: str) -> None:
    with CaptureQueriesContext(connection) as ctx:
        mq.send(q, b"x")
        mq.send_batch(q, [mq.OutMessage(b"y"), mq.OutMessage(b"z")])
        a, b, c = mq.receive(q, max_messages=3)
        a.complete()
        b.abandon()
        c.reject("Bad")
        [d] = mq.receive(q)
        mq.complete_batch(q, [(d.seq, d.lock_token or "")])
    sqls = [x["sql"] for x in ctx.captured_queries]
    assert sqls and not [s for s in sqls if "mqlite_history" in s]


def test_the_history_table_has_a_column_per_total_and_state() -> None:
    """A new lifetime total or state needs a history column (and a migration) too."""
    from django_mqlite.engine import history
    from django_mqlite.models import QueueHistory

    columns = {f.column for f in QueueHistory._meta.fields}
    assert {*history.DEPTH_COLUMNS, *history.TOTAL_NAMES} <= columns
    assert len(history.DEPTH_COLUMNS) == len(mq.State)
