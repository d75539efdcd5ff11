"""Consumers of the reliability suite (``tests/reliability/``).

Each delivery is recorded as one JSON line (one ``write`` on an O_APPEND file, so lines
from threads and processes never interleave; a SIGKILL can at worst cut the last line)
in the file named by ``MQLITE_TEST_LOG``, *before* the handler acts, with the times the
engine gave it: the lease's ``locked_until`` and the lock token.

Message properties steer the handler, per delivery, so a test decides (with a seeded
RNG) what happens and the oracle knows it: ``fail: [d, ...]`` raises on those
deliveries (the worker abandons with backoff), ``sleep: [d, ...]`` sleeps ``sleep_s``
seconds (past the consumer's timeout and the lease), ``hang: [d, ...]`` sleeps until
the process is killed.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Any

from django.db import connection, transaction

import django_mqlite as mq

#: The sweep queue's consumer timeout. Tests keep it above the queue's lock duration, so
#: a timed-out attempt ends its lease no earlier than the lease's first deadline.
SWEEP_TIMEOUT_S = 1.5


def append(line: dict[str, Any], path: str | None = None) -> None:
    """Append one JSON line; fsynced when ``MQLITE_TEST_FSYNC`` is set (the fault suite:
    a line written survives a crash of the machine's page cache too)."""
    fd = os.open(path or os.environ["MQLITE_TEST_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, (json.dumps(line) + "\n").encode())
        if os.environ.get("MQLITE_TEST_FSYNC"):
            os.fsync(fd)
    finally:
        os.close(fd)


def plan(msg: mq.Received) -> list[str]:
    """This delivery's steps, in the order they run (an empty list: just succeed)."""
    props = msg.properties
    return [a for a in ("sleep", "hang", "fail") if msg.delivery_count in props.get(a, ())]


def deliver(msg: mq.Received) -> None:
    start_ms = int(time.time() * 1000)
    props = msg.properties
    steps = plan(msg)
    digest = props.get("sha256")
    append(
        {
            "queue": msg.queue,
            "seq": msg.seq,
            "n": props.get("n"),
            "ok": digest is None or hashlib.sha256(msg.body).hexdigest() == digest,
            "token": msg.lock_token,
            "until_ms": None
            if msg.locked_until is None
            else round(msg.locked_until.timestamp() * 1000),
            "delivery": msg.delivery_count,
            "pid": os.getpid(),
            "start_ms": start_ms,
            "steps": steps,
        }
    )
    if "sleep" in steps:
        time.sleep(float(props.get("sleep_s", 2.0)))
    if "hang" in steps:
        time.sleep(3600)
    if "fail" in steps:
        raise ValueError(f"planned failure on delivery {msg.delivery_count}")


def chaos(msg: mq.Received) -> None:
    """The fault suite's consumer (``tests/faults``): records the delivery, then writes
    its side effect (a row naming the lease) in its own transaction, on this thread's
    connection, and sleeps or fails as the message's plan says."""
    props = msg.properties
    ref = json.loads(msg.body)["ref"]
    append(
        {
            "event": "start",
            "queue": msg.queue,
            "seq": msg.seq,
            "ref": ref,
            "group": msg.group_id,
            "token": msg.lock_token,
            "until_ms": None
            if msg.locked_until is None
            else round(msg.locked_until.timestamp() * 1000),
            "delivery": msg.delivery_count,
            "pid": os.getpid(),
            "start_ms": int(time.time() * 1000),
            # The worker's start-margin check (the checker's SIGSTOP explanation).
            "checked_ms": None
            if msg.start_checked_at is None
            else int(msg.start_checked_at * 1000),
        }
    )
    with connection.cursor() as cursor:  # a read outside any transaction, as handlers do
        cursor.execute("SELECT 1 FROM reliability_order WHERE ref = %s", [ref])
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {EFFECTS} (ref, token, delivery, pid) VALUES (%s, %s, %s, %s)",
            [ref, msg.lock_token, msg.delivery_count, os.getpid()],
        )
    time.sleep(float(props.get("sleep_s", 0)))
    if msg.delivery_count in props.get("fail", ()):
        raise ValueError(f"planned failure on delivery {msg.delivery_count}")


#: The fault suite's side-effect table (created by the test).
EFFECTS = "reliability_effect"

mq.consumer("sweep", timeout=SWEEP_TIMEOUT_S)(deliver)
for _queue in ("chaos", "chaos-groups"):
    mq.consumer(_queue)(chaos)
for _queue in ("crash", "faults", "drain", "flows"):
    mq.consumer(_queue)(deliver)
