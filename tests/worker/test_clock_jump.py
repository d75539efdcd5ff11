"""The worker notices its own clock jumping (wall clock against ``time.monotonic()``)
and claims nothing until it has measured the skew against the database again and found
it within the bound (``django_mqlite/worker/clockskew.py``, ``ClockGuard``)."""

from __future__ import annotations

import logging
import re
import threading
import time
from typing import Any

import pytest

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.worker import Worker, clockskew
from tests.support.procs import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


class Clocks:
    """A wall clock (ms) and a monotonic clock (s) the test moves by hand."""

    def __init__(self) -> None:
        self.wall_ms = 1_800_000_000_000
        self.mono = 1000.0

    def tick(self, seconds: float, wall_jump_s: float = 0.0) -> None:
        self.mono += seconds
        self.wall_ms += round((seconds + wall_jump_s) * 1000)


def test_a_jump_holds_claims_until_the_skew_is_measured_within_the_bound(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    skew = {"ms": 0}
    measured: list[int] = []

    def measure(using: str) -> int:
        measured.append(skew["ms"])
        return skew["ms"]

    monkeypatch.setattr(clockskew, "measure_ms", measure)
    c = Clocks()
    guard = clockskew.ClockGuard(
        "default", bound_s=7.5, wall_ms=lambda: c.wall_ms, monotonic=lambda: c.mono
    )
    c.tick(5.0, wall_jump_s=0.2)  # NTP-sized drift: no jump, nothing measured
    assert guard.may_claim() and measured == []
    skew["ms"] = 20_000
    with caplog.at_level(logging.WARNING, "django_mqlite.worker"):
        c.tick(0.5, wall_jump_s=-20)  # the host's clock stepped back 20 s
        assert not guard.may_claim()
    assert guard.jumps == 1 and measured == [20_000]
    assert "jumped -20.000s" in caplog.text and "not claiming" in caplog.text
    c.tick(0.5)
    assert not guard.may_claim() and len(measured) == 1  # re-measured once a second
    c.tick(0.6)
    assert not guard.may_claim() and len(measured) == 2
    skew["ms"] = 300  # fixed
    c.tick(1.1)
    assert guard.may_claim() and len(measured) == 3
    c.tick(1.0)
    assert guard.may_claim() and len(measured) == 3  # no jump: no more measurements


def test_a_running_worker_stops_claiming_after_its_clock_jumps(
    clock: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """On the engine's frozen clock: moved 20 s at once, the worker measures the skew
    before its next claim; while the measurement is beyond the bound it claims nothing,
    and it claims again once the skew is back within it."""
    mq.create_queue("cj", lock_duration=30)
    seen: list[int] = []
    skew = {"ms": 0}
    real_measure = clockskew.measure_ms
    monkeypatch.setattr(clockskew, "measure_ms", lambda using: skew["ms"] or real_measure(using))
    registry = Registry()
    registry.register("cj", lambda msg: seen.append(msg.seq))
    worker = Worker(["cj"], reaper=False, install_signals=False, registry=registry)
    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        first = mq.send("cj", 1)
        wait_for(lambda: seen == [first], what="the first message handled")
        skew["ms"] = 20_000
        with caplog.at_level(logging.WARNING, "django_mqlite.worker"):
            clock.advance(20)
            worker._wake()
            # A claim already past its check when the clock moved may finish; what must
            # not happen is a claim after the jump was seen, so send only then.
            wait_for(lambda: "not claiming" in caplog.text, what="the jump noticed")
            second = mq.send("cj", 2)
            worker._wake()
            time.sleep(1.5)
        assert seen == [first], "claimed while its clock was not checked"
        skew["ms"] = 0
        wait_for(lambda: seen == [first, second], timeout=10, what="claiming again")
    finally:
        worker.stop()
        thread.join(30)
    assert re.search(r"jumped \+(19|20)\.\d+s", caplog.text), caplog.text
