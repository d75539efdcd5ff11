"""``areceive(wait=...)`` waits without blocking the event loop and wakes early on a send
in this process and, on PostgreSQL, on a NOTIFY from another process."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.db import connection

import django_mqlite as mq
from django_mqlite.engine import aio
from tests.support.features import has, requires
from tests.support.procs import wait_for


def run(coro_fn: Any, *args: Any, **kwargs: Any) -> Any:
    return async_to_sync(coro_fn)(*args, **kwargs)


@pytest.mark.django_db
def test_the_event_loop_keeps_running_while_areceive_waits(q: str) -> None:
    async def scenario() -> tuple[list[mq.Received], int, float]:
        ticks = 0
        waiting = True

        async def ticker() -> None:
            nonlocal ticks
            while waiting:
                ticks += 1
                await asyncio.sleep(0.01)

        tick_task = asyncio.create_task(ticker())
        started = time.monotonic()
        got = await mq.areceive(q, wait=1.0)
        elapsed = time.monotonic() - started
        waiting = False
        await tick_task
        return got, ticks, elapsed

    got, ticks, elapsed = run(scenario)
    assert got == [] and elapsed >= 0.99
    # 10 ms ticks over a one-second wait: ~100 when the loop is free. A wait that blocked
    # the loop would leave the ticker at one or two.
    assert ticks >= 30, ticks


@pytest.mark.django_db(transaction=True)
def test_areceive_wakes_on_a_send_in_this_process(q: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without a wake-up, the first empty claim would be followed by a 30 s sleep.
    monkeypatch.setattr(aio, "POLL_FIRST_S", 30.0)
    monkeypatch.setattr(aio, "POLL_MAX_S", 30.0)

    async def scenario() -> tuple[list[mq.Received], float]:
        async def producer() -> int:
            await asyncio.sleep(0.3)
            return await mq.asend(q, {"hello": "world"})

        started = time.monotonic()
        got, _seq = await asyncio.gather(mq.areceive(q, wait=15), producer())
        return got, time.monotonic() - started

    got, elapsed = run(scenario)
    assert [m.json() for m in got] == [{"hello": "world"}]
    assert elapsed < 5, elapsed


@pytest.mark.django_db(transaction=True)
def test_areceive_wakes_on_notify_from_another_process(
    q: str, workers: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not has("listen_notify"):
        pytest.skip("the database has no LISTEN/NOTIFY")
    monkeypatch.setattr(aio, "POLL_FIRST_S", 30.0)
    monkeypatch.setattr(aio, "POLL_MAX_S", 30.0)

    async def scenario() -> tuple[list[mq.Received], float]:
        async def producer() -> None:
            await asyncio.sleep(0.2)  # areceive has claimed nothing and is waiting
            proc = workers.start("send", q, "from afar", command="mqlite")
            code, _out, err = await asyncio.to_thread(workers.finish, proc)
            assert code == 0, err

        started = time.monotonic()
        got, _ = await asyncio.gather(mq.areceive(q, wait=15), producer())
        return got, time.monotonic() - started

    got, elapsed = run(scenario)
    assert [m.text() for m in got] == ["from afar"]
    assert elapsed < 12, elapsed  # not the 15 s of a wait nothing woke


@pytest.mark.django_db(transaction=True)
@requires("listen_notify")
def test_the_shared_listener_turns_notify_into_a_wakeup(q: str) -> None:
    from django_mqlite.engine import listen, wakeup

    assert listen.ensure_listener("default")
    before = wakeup.generation(q)
    wait_for(lambda: listen._shared["default"].listening.is_set(), what="LISTEN")
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_notify('mqlite', %s)", [q])
    wait_for(lambda: wakeup.generation(q) > before, what="the NOTIFY wake-up")
