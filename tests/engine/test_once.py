"""``mq.once(key)``: recorded in the work's transaction; exactly one winner under races."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction

import django_mqlite as mq
from tests.support.concurrency import run_threads


@pytest.mark.django_db
def test_first_then_not_first() -> None:
    with transaction.atomic(), mq.once("order-1") as first:
        assert first is True
    with transaction.atomic(), mq.once("order-1") as first:
        assert first is False
    with transaction.atomic(), mq.once("order-2") as first:
        assert first is True


@pytest.mark.django_db
def test_a_rolled_back_key_is_free_again() -> None:
    with pytest.raises(RuntimeError), transaction.atomic(), mq.once("k") as first:
        assert first
        raise RuntimeError("the work failed")
    with transaction.atomic(), mq.once("k") as first:
        assert first is True


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_is_refused() -> None:
    with pytest.raises(mq.InvalidArgumentError, match="atomic"), mq.once("k"):
        pass


@pytest.mark.django_db
def test_bad_keys_are_refused() -> None:
    for key in ["", "   ", None, "x" * 256, 5]:
        with pytest.raises(mq.InvalidArgumentError), transaction.atomic(), mq.once(key):  # type: ignore[arg-type]
            pass


@pytest.mark.django_db(transaction=True)
def test_racing_threads_exactly_one_wins() -> None:
    threads_n, rounds = 6, 5
    for r in range(rounds):
        key = f"race-{r}"
        barrier = threading.Barrier(threads_n)
        results: list[bool] = []
        lock = threading.Lock()

        def contend(
            _: int,
            key: str = key,
            barrier: threading.Barrier = barrier,
            results: list[bool] = results,
            lock: threading.Lock = lock,
        ) -> None:
            barrier.wait()
            with transaction.atomic(), mq.once(key) as first:
                with lock:
                    results.append(first)

        run_threads(threads_n, contend)
        assert sorted(results) == [False] * (threads_n - 1) + [True]


@pytest.mark.django_db
def test_prune_once_forgets_only_old_keys(clock: Any) -> None:
    with transaction.atomic(), mq.once("old") as first:
        assert first
    clock.advance(3600)
    with transaction.atomic(), mq.once("new") as first:
        assert first
    assert mq.prune_once(1800) == 1  # "old" is an hour old, "new" is fresh
    with transaction.atomic(), mq.once("old") as first:
        assert first is True  # forgotten: the work would run again
    with transaction.atomic(), mq.once("new") as first:
        assert first is False
    assert mq.prune_once(timedelta(hours=2)) == 0


@pytest.mark.django_db
@pytest.mark.parametrize("bad", [0, -1, None, True, "60"])
def test_prune_once_refuses_a_bad_duration(bad: Any) -> None:
    with pytest.raises(mq.InvalidArgumentError):
        mq.prune_once(bad)
