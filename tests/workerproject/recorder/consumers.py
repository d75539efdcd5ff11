"""Consumers of the worker test project. Each records what it sees as JSON lines in
the file named by ``MQLITE_TEST_LOG`` (one ``write`` per line on an O_APPEND file, so
lines from threads and processes never interleave).

The message body (JSON) steers the handler:
``{"sleep": s}`` sleeps s seconds; ``{"sleep_first": s}`` only on the first delivery;
``{"fail": true}`` raises ValueError on every delivery; ``{"reject": "why"}`` rejects.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import django_mqlite as mq


def record(event: str, msg: mq.Received, **extra: Any) -> None:
    line = {
        "event": event,
        "queue": msg.queue,
        "seq": msg.seq,
        "delivery": msg.delivery_count,
        "pid": os.getpid(),
        "t": time.time(),
        # When the worker checked the start margin (None outside a worker's pool).
        "checked": msg.start_checked_at,
        **extra,
    }
    fd = os.open(os.environ["MQLITE_TEST_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
    finally:
        os.close(fd)


def _behave(msg: mq.Received) -> None:
    record("start", msg)
    spec = msg.json() if msg.content_type == "application/json" else {}
    if not isinstance(spec, dict):
        spec = {}
    if spec.get("query"):  # the handler itself uses the database (its thread's connection)
        mq.get_queue(msg.queue)
    if "sleep" in spec:
        time.sleep(spec["sleep"])
    if "sleep_first" in spec and msg.delivery_count == 1:
        time.sleep(spec["sleep_first"])
    if spec.get("fail"):
        raise ValueError(f"boom on delivery {msg.delivery_count}")
    if "reject" in spec:
        raise mq.Reject(spec["reject"], "rejected by the test consumer")
    record("done", msg)


@mq.consumer("work")
def work(msg: mq.Received) -> None:
    _behave(msg)


@mq.consumer("slow", timeout=1.0)
def slow(msg: mq.Received) -> None:
    _behave(msg)
