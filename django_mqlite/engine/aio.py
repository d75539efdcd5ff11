"""The async API: ``asend``, ``asend_batch``, ``areceive``, ``apeek``, ``astats``,
``arequest_cancel``.

Each is its sync twin run through ``asgiref``'s ``sync_to_async`` with
``thread_sensitive=True``, Django's documented way to use the ORM from async code: the
statement runs on the caller's thread-sensitive thread and its database connection, so
a send made while that connection is inside ``transaction.atomic()`` commits or rolls
back with it. Same arguments, results and errors; never a second copy of a statement.

Only waiting is natively async: ``areceive(wait=...)`` claims with ``wait=0`` and, between
claims, suspends on ``wakeup.await_signal`` (an in-process send's commit, or a PostgreSQL
NOTIFY through the process's shared listener, wakes it), so the event loop keeps running
other coroutines while it waits.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async

from . import listen, wakeup
from .claim import check_receive, claim
from .inspect import peek, stats
from .received import Received
from .running import request_cancel
from .send import send, send_batch

P = ParamSpec("P")
R = TypeVar("R")

#: Polls back off from the first to the largest delay while nothing is claimable (as the
#: sync long-poll does); a wake-up cuts a delay short.
POLL_FIRST_S = 0.01
POLL_MAX_S = 0.5


def twin(func: Callable[P, R]) -> Callable[P, Coroutine[Any, Any, R]]:
    """The ``a``-prefixed twin of ``func``: same signature, awaited."""

    @functools.wraps(func)
    async def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return await sync_to_async(func, thread_sensitive=True)(*args, **kwargs)

    run.__name__ = run.__qualname__ = f"a{func.__name__}"
    run.__doc__ = f"The async twin of ``{func.__name__}`` (same arguments and result)."
    return run


asend = twin(send)
asend_batch = twin(send_batch)
apeek = twin(peek)
astats = twin(stats)
arequest_cancel = twin(request_cancel)


async def areceive(
    queue: str,
    *,
    max_messages: int = 1,
    wait: float | dt.timedelta = 0,
    lock_duration: float | dt.timedelta | None = None,
    mode: str = "peek_lock",
    attempt_id: str | None = None,
    attempt_scope: str | None = None,
    max_bytes: int | None = None,
    using: str | None = None,
    group_batch: bool = False,
) -> list[Received]:
    """The async twin of ``receive``. ``wait`` long-polls without blocking the event loop."""
    args = check_receive(
        queue,
        max_messages=max_messages,
        wait=wait,
        lock_duration=lock_duration,
        mode=mode,
        attempt_id=attempt_id,
        attempt_scope=attempt_scope,
        max_bytes=max_bytes,
        using=using,
        group_batch=group_batch,
    )
    wait_s = args.wait_ms / 1000
    claim_once = sync_to_async(functools.partial(claim, args), thread_sensitive=True)
    deadline = time.monotonic() + wait_s
    delay = POLL_FIRST_S
    listening = False
    while True:
        # Read the generation before claiming: a send committed between this claim and
        # the wait below still wakes the wait.
        since = wakeup.generation(queue)
        got = await claim_once()
        remaining = deadline - time.monotonic()
        if got or remaining <= 0:
            return got
        if not listening:  # about to wait for the first time (no query: reads the vendor)
            listen.ensure_listener(args.alias)
            listening = True
        await wakeup.await_signal(queue, min(delay, remaining), since)
        delay = min(delay * 2, POLL_MAX_S)
