"""``async def`` consumers of the worker test project (installed when a test sets
``MQLITE_TEST_ASYNC``). They record what they see like the recorder's consumers.

The message body (JSON) steers the handler: ``{"sleep": s}`` awaits ``asyncio.sleep(s)``;
``{"sleep_first": s}`` only on the first delivery; ``{"fail_until": n}`` raises on
deliveries before n; ``{"reject": "why"}`` raises ``mq.Reject``; ``{"forward": q}``
sends the body to queue q through the async API and completes the message itself.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import django_mqlite as mq
from tests.workerproject.recorder.consumers import record


async def _behave(msg: mq.Received) -> None:
    loop = asyncio.get_running_loop()
    where = {"loop": id(loop), "thread": threading.current_thread().name}
    record("start", msg, **where)
    spec: Any = msg.json()
    try:
        if "sleep" in spec:
            await asyncio.sleep(spec["sleep"])
        if "sleep_first" in spec and msg.delivery_count == 1:
            await asyncio.sleep(spec["sleep_first"])
    except asyncio.CancelledError:
        record("cancelled", msg)
        raise
    if msg.delivery_count < spec.get("fail_until", 0):
        raise ValueError(f"async boom on delivery {msg.delivery_count}")
    if "reject" in spec:
        raise mq.Reject(spec["reject"], "rejected by the async consumer")
    if "forward" in spec:
        await mq.asend(spec["forward"], spec)
        await msg.acomplete()
    record("done", msg, **where)


@mq.consumer("awork")
async def awork(msg: mq.Received) -> None:
    await _behave(msg)


@mq.consumer("aslow", timeout=1.0)
async def aslow(msg: mq.Received) -> None:
    await _behave(msg)
