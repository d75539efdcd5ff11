"""In-process wake-ups: a consumer waiting for a queue sleeps on a condition that a
commit of a send in the same process (or a NOTIFY listener) signals. Waiting is always
bounded, so a missed signal costs at most one back-off interval, never a lost message.

Threads wait on the condition (``wait``, ``wait_any``); coroutines wait without blocking
their event loop (``await_signal``): ``notify`` wakes both.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_cond = threading.Condition()
_generation: dict[str, int] = {}
_watchers: set[Callable[[str], None]] = set()


_noting = threading.local()


def notify(queue: str) -> None:
    noted: set[str] | None = getattr(_noting, "keys", None)
    if noted is not None:
        noted.add(queue)
    with _cond:
        _generation[queue] = _generation.get(queue, 0) + 1
        _cond.notify_all()
        watchers = list(_watchers)
    for watch in watchers:
        watch(queue)


@contextmanager
def noted() -> Iterator[set[str]]:
    """The keys this thread notifies while the block runs: what a worker's own commit
    announced (its ``on_commit`` wake-ups run in the committing thread: a group's next
    message, ``lines``), apart from what other threads heard meanwhile (a NOTIFY, the
    SQLite commit watcher, which sees the worker's own commits too)."""
    outer = getattr(_noting, "keys", None)
    keys: set[str] = set()
    _noting.keys = keys
    try:
        yield keys
    finally:
        _noting.keys = outer
        if outer is not None:
            outer |= keys


def announce(key: str) -> None:
    """Tell the watchers (``watch``) of ``key`` without waking any waiter: for news
    that concerns a message, not a queue (a cancel request, ``running.cancel_note``)."""
    with _cond:
        watchers = list(_watchers)
    for watcher in watchers:
        watcher(key)


def watch(watcher: Callable[[str], None]) -> None:
    """Call ``watcher(key)`` on every ``notify`` and ``announce`` of this process (from
    the notifying thread) until ``unwatch``."""
    with _cond:
        _watchers.add(watcher)


def unwatch(watcher: Callable[[str], None]) -> None:
    with _cond:
        _watchers.discard(watcher)


def generation(queue: str) -> int:
    with _cond:
        return _generation.get(queue, 0)


def wait(queue: str, timeout: float, since: int | None = None) -> bool:
    """Sleep up to ``timeout`` seconds or until ``queue`` is signalled after ``since``."""
    with _cond:
        start = _generation.get(queue, 0) if since is None else since
        return _cond.wait_for(lambda: _generation.get(queue, 0) != start, timeout)


def generations(keys: list[str]) -> dict[str, int]:
    with _cond:
        return {k: _generation.get(k, 0) for k in keys}


def wait_any(since: dict[str, int], timeout: float) -> bool:
    """Sleep up to ``timeout`` seconds or until any key of ``since`` (from
    ``generations()``) is signalled. Keys are queue names or any private string."""
    with _cond:
        return _cond.wait_for(
            lambda: any(_generation.get(k, 0) != g for k, g in since.items()), timeout
        )


async def await_signal(queue: str, timeout: float, since: int) -> bool:
    """The coroutine twin of ``wait``: suspend (never block the event loop) up to
    ``timeout`` seconds or until ``queue`` is signalled after generation ``since``."""
    loop = asyncio.get_running_loop()
    signalled = asyncio.Event()

    def watch(name: str) -> None:
        if name == queue:
            try:
                loop.call_soon_threadsafe(signalled.set)
            except RuntimeError:
                pass  # the waiter's loop has closed: nobody is waiting any more

    with _cond:
        if _generation.get(queue, 0) != since:
            return True
        _watchers.add(watch)
    try:
        await asyncio.wait_for(signalled.wait(), timeout)
        return True
    except TimeoutError:
        return False
    finally:
        with _cond:
            _watchers.discard(watch)
