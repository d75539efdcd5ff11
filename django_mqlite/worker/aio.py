"""How a worker invokes a handler, sync or ``async def``.

A sync handler is called in its handler thread. A coroutine handler runs on the
process's one event loop (a daemon thread started on first use) while its handler
thread waits for the result, so the worker holds at most ``--concurrency`` messages and
runs up to that many coroutines at once on the loop. Everything else — leases, renewal,
timeouts, retries, ``mq.Reject``, settlement and signals — is the handler thread's usual
path: this module only turns "call the handler" into "run the coroutine and wait".

Cancelling: a cancel request (``mq.request_cancel``) that reaches the delivery cancels
its coroutine the same way (``Received.on_cancel``); the worker dead-letters it as
cancelled.

Timeouts: unlike a thread, a coroutine can be stopped. Past the consumer's ``timeout``
the handler thread cancels it (``CancelledError`` at its next ``await``) and the attempt
fails with ``TimeoutError``, retried or dead-lettered like any failure. A coroutine that
blocks the loop (``time.sleep``, sync I/O) cannot be cancelled and stalls every other
coroutine: use ``asyncio.sleep``, async clients, or ``sync_to_async`` for blocking work.

Database work in a coroutine handler goes through ``sync_to_async`` (thread-sensitive,
as Django documents), which runs on asgiref's one thread-sensitive thread of the process;
its connection is checked after each handler by the worker's rule (``db_health``: kept
across messages, discarded when unusable or past a positive ``CONN_MAX_AGE``), not
closed after every message as ``close_old_connections`` would with ``CONN_MAX_AGE = 0``.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, sync_to_async

from . import db_health, middleware
from .delivery import Delivery

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_loop_pid = 0


def event_loop() -> asyncio.AbstractEventLoop:
    """The process's handler event loop, started on first use (and again in a forked
    child, whose parent's loop thread did not come along)."""
    global _loop, _loop_pid
    with _lock:
        if _loop is None or _loop_pid != os.getpid() or _loop.is_closed():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def main() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=main, name="mqlite-event-loop", daemon=True).start()
            ready.wait()
            _loop, _loop_pid = loop, os.getpid()
        return _loop


async def _run(func: Callable[[Any], Awaitable[Any]], msg: Any) -> Any:
    try:
        return await func(msg)
    finally:
        await sync_to_async(db_health.refresh, thread_sensitive=True)()


def call_handler(d: Delivery) -> Any:
    """Run ``d``'s handler on ``d.msg`` in this (handler) thread and return its result
    or raise its exception; a coroutine handler runs on the event loop. The handler is
    the consumer's function wrapped by ``MQLITE["MIDDLEWARE"]`` (``middleware``)."""
    func = middleware.handler_of(d.consumer)
    if not iscoroutinefunction(func):
        return func(d.msg)
    future = asyncio.run_coroutine_threadsafe(_run(func, d.msg), event_loop())
    # A cancel request (``running``) cancels the coroutine: CancelledError at its next
    # await, which the worker settles as cancelled.
    d.msg.on_cancel(future.cancel)
    try:
        if d.timeout is None:
            return future.result()
        started = d.started if d.started is not None else time.monotonic()
        try:
            return future.result(max(0.0, started + d.timeout - time.monotonic()))
        except TimeoutError:
            if not future.cancel() and future.done():
                return future.result()  # it finished just as the wait ran out
            raise TimeoutError(f"handler ran longer than its timeout of {d.timeout}s") from None
    finally:
        d.msg.on_cancel(None)
