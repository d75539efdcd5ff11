"""The reaper's pace (``worker.reaper.Pace``): every ``REAP_INTERVAL`` while it finds
work, stretching to ``IDLE_FACTOR`` intervals while it finds none, and never sleeping past
a minute boundary (each minute's history sample stays on time)."""

from __future__ import annotations

from typing import Any

import pytest

from django_mqlite.worker import background
from django_mqlite.worker.reaper import IDLE_FACTOR, Pace


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_idle_passes_stretch_the_wait_and_work_resets_it() -> None:
    clock = Clock(1_000_040.0)  # 20 s into a minute (1_000_020 is one's start)
    pace = Pace(1.0, clock)
    waits = [pace.after(False) for _ in range(5)]
    assert waits == [2.0, 4.0, 8.0, 8.0, 8.0]
    assert IDLE_FACTOR == 8
    assert pace.after(True) == 1.0
    assert pace.after(False) == 2.0


def test_an_idle_reaper_wakes_for_the_next_minute_s_sample() -> None:
    clock = Clock(1_000_075.0)  # 5 s before a minute boundary
    pace = Pace(1.0, clock)
    for _ in range(4):
        pace.after(False)
    assert pace.after(False) == pytest.approx(5.0 + 1.0)  # the boundary, plus an interval
    clock.t = 1_000_079.9
    assert pace.after(False) == pytest.approx(0.1 + 1.0)


def test_the_worker_s_reaper_thread_waits_as_its_pace_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The loop really sleeps what the pace answers: passes that reap nothing wait 2, 4,
    8, 8 s; a pass that reaps something waits one interval again. A pass after one that
    found nothing runs quiet (one transaction)."""
    found = iter([{}, {}, {}, {}, {"expired_locks": 3}, {}])
    quiet: list[bool] = []

    def reap(using: str, quiet: bool) -> dict[str, int]:
        quiets.append(quiet)
        return next(found)

    quiets = quiet
    monkeypatch.setattr(background, "reap", reap)
    monkeypatch.setattr(background.db_health, "refresh", lambda: None)
    monkeypatch.setattr(background, "Pace", lambda s: Pace(s, Clock(1_000_040.0)))
    loop = background.reaper_loop(1.0, "default")
    waits: list[float] = []

    def wait(timeout: Any = None) -> bool:
        waits.append(timeout)
        if len(waits) == 6:
            loop.stopping.set()
        return loop.stopping.is_set()

    monkeypatch.setattr(loop.stopping, "wait", wait)
    loop.run()
    assert [min(w, 8.0) for w in waits] == [2.0, 4.0, 8.0, 8.0, 1.0, 2.0]
    assert quiets == [False, True, True, True, True, False]
