"""The prefetch policy's rules one by one, at their boundaries, with no worker: the start
margin, the running average of handler times, the claim target, how many to claim now,
and when a group commit is due. (tests/worker/test_prefetch.py runs them in a worker.)"""

from __future__ import annotations

import pytest

from django_mqlite.worker.prefetch import (
    GROUP_COMMIT_S,
    MAX_BATCH,
    Prefetch,
    flush_due,
    start_margin_s,
)


@pytest.mark.parametrize(
    ("lease_s", "margin_s"),
    [
        (60.0, 6.0),  # a tenth of the lease
        (20.0, 2.0),
        (10.0, 1.0),  # a tenth, and the floor
        (5.0, 1.0),  # the floor: at least a second
        (4.0, 1.0),  # the floor, and a quarter
        (2.0, 0.5),  # never more than a quarter of the lease
        (0.0, 0.0),
    ],
)
def test_the_start_margin_is_a_tenth_of_the_lease_at_least_1s_at_most_a_quarter(
    lease_s: float, margin_s: float
) -> None:
    assert start_margin_s(lease_s) == pytest.approx(margin_s)


def test_the_first_handler_time_is_the_average_then_each_weighs_a_fifth() -> None:
    p = Prefetch(threads=2)
    assert p.threads == 2 and p.avg_s is None
    p.observe(1.0)
    assert p.avg_s == pytest.approx(1.0)
    p.observe(3.0)  # 1 + 0.2 * (3 - 1)
    assert p.avg_s == pytest.approx(1.4)
    p.observe(0.4)  # 1.4 + 0.2 * (0.4 - 1.4)
    assert p.avg_s == pytest.approx(1.2)


def test_a_negative_handler_time_counts_as_zero() -> None:
    p = Prefetch(threads=1)
    p.observe(-1.0)
    assert p.avg_s == 0.0
    p.observe(-1.0)
    assert p.avg_s == 0.0


@pytest.mark.parametrize(
    ("threads", "avg_s", "target"),
    [
        (3, None, 3),  # no measurement yet: one per thread
        (1, 0.0, MAX_BATCH),  # instant handlers: a full batch, no division by zero
        (2, 0.03, 6),  # 0.1 s / 0.03 s = 3.3 handlers a thread in the horizon: 3 each
        (2, 0.05, 4),  # exactly 2 each
        (2, 0.06, 2),  # 1.7 a thread: 1 each
        (2, 0.5, 2),  # slow handlers: never under one per thread
        (4, 0.001, MAX_BATCH),  # 100 a thread, capped at a batch
        (100, 0.001, 100),  # more threads than a batch: one per thread
    ],
)
def test_the_target_is_what_the_threads_finish_within_the_horizon(
    threads: int, avg_s: float | None, target: int
) -> None:
    p = Prefetch(threads=threads)
    p.avg_s = avg_s
    assert p.target() == target


def fast(threads: int) -> Prefetch:
    """A policy whose target is a full batch (1 ms handlers)."""
    p = Prefetch(threads=threads)
    p.avg_s = 0.001
    assert p.target() == MAX_BATCH
    return p


def test_nothing_is_claimed_when_the_target_is_held() -> None:
    p = Prefetch(threads=4)
    assert p.want(pending=4, running=0) == 0
    assert p.want(pending=0, running=4) == 0
    assert p.want(pending=3, running=3) == 0  # over the target
    assert fast(4).want(pending=MAX_BATCH - 4, running=4) == 0


def test_an_idle_thread_always_gets_a_claim_even_of_one() -> None:
    p = Prefetch(threads=4)
    assert p.want(pending=0, running=0) == 4
    assert p.want(pending=0, running=3) == 1  # 1 of 4 is under half, but a thread is idle
    # 48 threads all running, 16 of 64 left: under half and no thread idle.
    p = Prefetch(threads=48)
    p.avg_s = 0.05
    assert p.target() == MAX_BATCH
    assert p.want(pending=0, running=48) == 0
    assert p.want(pending=0, running=47) == 17


def test_a_busy_worker_tops_up_only_when_half_its_target_is_free() -> None:
    p = fast(4)
    half = MAX_BATCH // 2
    assert p.want(pending=half - 4, running=4) == half  # exactly half free
    assert p.want(pending=half - 3, running=4) == 0  # one less than half
    assert p.want(pending=half + 6, running=4) == 0  # a third free: not yet
    assert p.want(pending=1, running=0) == MAX_BATCH - 1  # more than half free
    assert p.want(pending=40, running=0) == 0  # waiting work for every thread


def test_a_target_of_two_or_three_tops_up_one_at_a_time() -> None:
    # target // 2 is 1 (not 1.5, and at least 1): one free slot is worth a claim.
    assert Prefetch(threads=2).want(pending=1, running=0) == 1
    assert Prefetch(threads=3).want(pending=1, running=1) == 1
    assert Prefetch(threads=3).want(pending=2, running=1) == 0


def test_a_claim_is_never_more_than_a_batch() -> None:
    assert Prefetch(threads=100).want(pending=0, running=0) == MAX_BATCH
    assert Prefetch(threads=100).want(pending=0, running=99) == 1


@pytest.mark.parametrize(
    ("waiting", "oldest_age_s", "unfinished", "due"),
    [
        (0, 1.0, 0, False),  # nothing to write
        (0, 0.0, 5, False),
        (1, 0.0, 0, True),  # nothing else pending or running: write now
        (1, 0.0, 1, False),
        (3, GROUP_COMMIT_S / 2, 5, False),
        (3, GROUP_COMMIT_S, 5, True),  # the oldest waited the group commit out
        (MAX_BATCH - 1, 0.0, 5, False),
        (MAX_BATCH, 0.0, 5, True),  # a full batch
        (MAX_BATCH + 1, 0.0, 5, True),
    ],
)
def test_a_group_commit_is_due_when_full_idle_or_old(
    waiting: int, oldest_age_s: float, unfinished: int, due: bool
) -> None:
    assert flush_due(waiting, oldest_age_s, unfinished) is due
