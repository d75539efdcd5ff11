"""Stopping on a signal: SIGTERM or SIGINT asks a worker, a reaper or the supervisor of
worker processes to stop. Each installs its handler for the length of its ``run()``
with ``stop_on_signals`` and gets back the handlers it found when the run ends.

Python lets only the main thread install signal handlers, and runs them only there: a
worker or reaper run off the main thread (a test, a program embedding one) installs
nothing and is stopped by calling its ``stop()``.

A worker drains on the first signal and leaves at once on the second
(``drain_then_exit``); a reaper stops on any; the supervisor forwards each one to its
children.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import FrameType
from typing import Any

Handler = Callable[[int, FrameType | None], Any]

#: The signals that ask for a stop (``kill``, a service manager, Ctrl-C).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def stop_on_signals(
    handler: Handler, *, extra: Mapping[int, Handler] | None = None, install: bool = True
) -> Iterator[None]:
    """Run the block with ``handler`` for SIGTERM and SIGINT (and ``extra``'s handlers
    for their signals), then put back the handlers that were there before. Off the main
    thread, or when ``install`` is false, the block runs with nothing installed."""
    if not install or threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted: dict[int, Handler] = {sig: handler for sig in STOP_SIGNALS}
    wanted.update(extra or {})
    previous = {sig: signal.signal(sig, h) for sig, h in wanted.items()}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def drain_then_exit(stop: Callable[[str], object]) -> Handler:
    """A handler that calls ``stop("signal SIGTERM")`` (a graceful drain) on the first
    signal and exits the process at once (``os._exit(1)``) on the second, waiting for
    nothing: held leases come back through the reaper's stale-worker pass (or lease
    expiry)."""
    received = 0

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal received
        received += 1
        if received > 1:
            sys.stderr.write("second signal: exiting at once\n")
            sys.stderr.flush()
            os._exit(1)
        stop(f"signal {signal.Signals(signum).name}")

    return on_signal
