"""Operator controls in the engine: pause/resume, rate_limit, max_in_flight, and their
bad input. Time is the frozen clock; nothing here sleeps to wait for a refill."""

from __future__ import annotations

import threading
import time

import pytest

import django_mqlite as mq

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    "options",
    [
        {"rate_limit": 0},
        {"rate_limit": -1},
        {"rate_limit": "5"},
        {"rate_limit": True},
        {"rate_limit": float("nan")},
        {"rate_limit": float("inf")},
        {"rate_limit": 1e12},
        {"rate_limit": 0.0001},
        {"max_in_flight": 0},
        {"max_in_flight": -3},
        {"max_in_flight": 1.5},
        {"max_in_flight": "3"},
        {"max_in_flight": True},
        {"max_in_flight": 10**12},
    ],
)
def test_bad_limits_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        mq.create_queue("bad", **options)  # type: ignore[arg-type]


def test_limits_round_trip_and_appear_in_stats() -> None:
    q = mq.create_queue("lim", rate_limit=2.5, max_in_flight=7)
    assert (q.rate_limit, q.max_in_flight, q.paused) == (2.5, 7, False)
    s = mq.stats("lim")
    assert (s.rate_limit, s.max_in_flight, s.paused) == (2.5, 7, False)
    assert mq.create_queue("plain").rate_limit is None
    assert mq.get_queue("plain").max_in_flight is None


def test_pausing_an_unknown_queue_is_not_found() -> None:
    with pytest.raises(mq.QueueNotFoundError):
        mq.pause_queue("nope")
    with pytest.raises(mq.QueueNotFoundError):
        mq.resume_queue("nope")
    with pytest.raises(mq.InvalidArgumentError):
        mq.pause_queue("bad name")


def test_a_paused_queue_takes_sends_and_hands_out_nothing() -> None:
    mq.create_queue("p")
    held = mq.receive("p") or None
    assert held is None
    mq.send("p", b"first")
    (lease,) = mq.receive("p")
    assert mq.pause_queue("p").paused is True
    assert mq.pause_queue("p").paused is True  # idempotent
    assert mq.get_queue("p").paused and mq.stats("p").paused
    mq.send_batch("p", [mq.OutMessage(b"a"), mq.OutMessage(b"b")])
    assert mq.receive("p", max_messages=10) == []
    assert mq.receive("p", mode="receive_and_delete") == []
    # The lease held before the pause runs to its end: renewable, settleable.
    lease.renew()
    lease.defer()
    assert mq.receive_deferred("p", [lease.seq]) == []
    # Changing other settings leaves the pause alone.
    mq.update_queue("p", lock_duration=45)
    assert mq.get_queue("p").paused
    assert mq.stats("p").counts["active"] == 2
    assert mq.resume_queue("p").paused is False
    assert len(mq.receive("p", max_messages=10)) == 2
    assert len(mq.receive_deferred("p", [lease.seq])) == 1


def test_a_long_poll_waits_out_a_pause_and_returns_on_resume() -> None:
    mq.create_queue("lp")
    mq.pause_queue("lp")
    mq.send("lp", b"x")
    resumed_at: list[float] = []

    def resume_later() -> None:
        time.sleep(0.4)
        resumed_at.append(time.monotonic())
        mq.resume_queue("lp")

    t = threading.Thread(target=resume_later)
    t.start()
    got = mq.receive("lp", wait=10)
    returned_at = time.monotonic()
    t.join()
    assert [m.body for m in got] == [b"x"]
    # The claim came after the resume, not before it (a receive that ignored the pause
    # returns at once, while the resuming thread is still asleep).
    assert resumed_at and returned_at >= resumed_at[0]


def test_rate_limit_bursts_one_second_then_refills_at_the_rate() -> None:
    mq.create_queue("r", rate_limit=5)
    mq.send_batch("r", [mq.OutMessage(str(i)) for i in range(40)])
    with mq.clock.frozen() as clock:
        assert len(mq.receive("r", max_messages=100)) == 5  # the burst: one second's worth
        assert mq.receive("r", max_messages=100) == []
        clock.advance(0.199)
        assert mq.receive("r", max_messages=100) == []  # 0.995 of a token
        clock.advance(0.001)
        assert len(mq.receive("r", max_messages=100)) == 1
        clock.advance(0.6)
        assert len(mq.receive("r", max_messages=2)) == 2  # asked for 2 of the 3 earned
        assert len(mq.receive("r", max_messages=100)) == 1  # the third was kept
        clock.advance(3600)  # a long idle refills to the burst, no more
        assert len(mq.receive("r", max_messages=100)) == 5
        clock.advance(1)
        assert len(mq.receive("r", mode="receive_and_delete", max_messages=100)) == 5


def test_a_claim_with_an_earlier_clock_reading_never_moves_the_refill_back() -> None:
    """A claimer reads the clock, then waits for the queue row's lock while another
    claims at a later time; its refill then counts nothing (elapsed is never negative)
    and must not set the bucket's refill time back, or the next claim earns that
    interval a second time (seen across processes under load)."""
    mq.create_queue("late", rate_limit=5)
    mq.send_batch("late", [mq.OutMessage(str(i)) for i in range(40)])
    with mq.clock.frozen() as clock:
        t = clock.now()
        assert len(mq.receive("late", max_messages=100)) == 5  # the burst, at t
        clock.advance(0.4)
        assert len(mq.receive("late", max_messages=1)) == 1  # t + 0.4: 1 of the 2 earned
        later = clock.now()
        clock.set(t)  # the late claimer's reading, taken before it waited for the lock
        assert len(mq.receive("late", max_messages=100)) == 1  # the token left
        clock.set(later)  # t + 0.4 again: nothing earned since the last claim
        assert mq.receive("late", max_messages=100) == []
        clock.advance(0.2)
        assert len(mq.receive("late", max_messages=100)) == 1


def test_a_slow_rate_still_allows_one_claim() -> None:
    mq.create_queue("slow", rate_limit=0.5)
    mq.send_batch("slow", [mq.OutMessage(b"x") for _ in range(5)])
    with mq.clock.frozen() as clock:
        assert len(mq.receive("slow", max_messages=5)) == 1
        clock.advance(1.9)
        assert mq.receive("slow") == []
        clock.advance(0.1)
        assert len(mq.receive("slow", max_messages=5)) == 1


def test_tokens_are_not_spent_when_there_is_nothing_to_claim() -> None:
    mq.create_queue("idle", rate_limit=3)
    with mq.clock.frozen():
        assert mq.receive("idle", max_messages=10) == []
        mq.send_batch("idle", [mq.OutMessage(b"x") for _ in range(5)])
        assert len(mq.receive("idle", max_messages=10)) == 3


def test_max_in_flight_caps_locked_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    from django_mqlite.engine import maintenance

    # Receives return their queue's expired leases (``expire_queue_locks``); here none
    # is due yet, as between two of its runs.
    monkeypatch.setattr(maintenance, "QUEUE_LEASES_EVERY_MS", 10**9)
    mq.create_queue("f", max_in_flight=3, lock_duration=10)
    mq.send_batch("f", [mq.OutMessage(str(i)) for i in range(10)])
    with mq.clock.frozen() as clock:
        held = mq.receive("f", max_messages=10)
        assert len(held) == 3
        assert mq.receive("f", max_messages=10) == []
        held[0].complete()
        held[1].abandon()
        again = mq.receive("f", max_messages=10)
        assert len(again) == 2
        # An expired lease not yet reaped still counts; the reaper frees its slot.
        clock.advance(11)
        assert mq.receive("f") == []
        mq.reap()
        assert len(mq.receive("f", max_messages=10)) == 3


def test_both_limits_take_the_smaller_budget_and_can_be_lifted() -> None:
    mq.create_queue("both", rate_limit=10, max_in_flight=4)
    mq.send_batch("both", [mq.OutMessage(b"x") for _ in range(30)])
    with mq.clock.frozen() as clock:
        assert len(mq.receive("both", max_messages=30)) == 4
        mq.update_queue("both", max_in_flight=None)
        assert len(mq.receive("both", max_messages=30)) == 6
        clock.advance(0.1)
        assert len(mq.receive("both", max_messages=30)) == 1
        mq.update_queue("both", rate_limit=None)
        assert len(mq.receive("both", max_messages=30)) == 19


def test_deferred_fetches_count_against_max_in_flight() -> None:
    mq.create_queue("d", max_in_flight=2)
    mq.send_batch("d", [mq.OutMessage(b"x") for _ in range(3)])
    seqs = []
    for _ in range(3):
        (m,) = mq.receive("d")
        m.defer()
        seqs.append(m.seq)
    assert len(mq.receive_deferred("d", seqs)) == 2
