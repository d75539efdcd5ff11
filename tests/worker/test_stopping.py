"""``worker/stopping.py``: the stop handlers are installed for a run and put back after
it, only on the main thread and when asked; a worker drains on the first signal and
exits on the second. Real processes getting real signals are ``test_signals.py``."""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

import pytest

from django_mqlite.worker import stopping


def _handler(signum: int, frame: FrameType | None) -> None:
    """A stand-in handler, never called."""


def _current() -> dict[int, Any]:
    return {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD)}


def test_installs_for_the_block_and_puts_back_what_was_there() -> None:
    before = _current()
    with stopping.stop_on_signals(_handler, extra={signal.SIGCHLD: _handler}):
        assert set(_current().values()) == {_handler}
    assert _current() == before


def test_puts_back_when_the_block_raises() -> None:
    before = _current()
    with pytest.raises(RuntimeError), stopping.stop_on_signals(_handler):
        raise RuntimeError
    assert _current() == before


def test_installs_nothing_when_not_asked() -> None:
    before = _current()
    with stopping.stop_on_signals(_handler, install=False):
        assert _current() == before


def test_installs_nothing_off_the_main_thread() -> None:
    before = _current()
    seen: list[dict[int, Any]] = []

    def run() -> None:
        with stopping.stop_on_signals(_handler):
            seen.append(_current())

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [before]


def test_the_first_signal_drains_and_the_second_exits(monkeypatch: pytest.MonkeyPatch) -> None:
    stops: list[str] = []
    exits: list[int] = []
    monkeypatch.setattr(stopping.os, "_exit", exits.append)
    on_signal = stopping.drain_then_exit(stops.append)
    on_signal(signal.SIGTERM, None)
    assert (stops, exits) == (["signal SIGTERM"], [])
    on_signal(signal.SIGINT, None)
    assert exits == [1]
