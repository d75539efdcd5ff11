"""``manage.py mqlite batches [ID]``: the batches made with ``mq.batch`` and their
progress (``mq.list_batches``), or one batch (``mq.get_batch``). Like the other
subcommands, each takes the parsed options and an output; engine errors become
``CommandError`` in the command's ``handle``."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Any

from django.core.management.base import OutputWrapper

import django_mqlite as mq


def add_parsers(add: Any) -> None:
    """Add the ``batches`` subcommand; ``add(name, help, module)`` is the command's helper."""
    p = add("batches", "batches and their progress, or one batch's", sys.modules[__name__])
    p.add_argument("id", nargs="?", type=int, help="show this batch")
    p.add_argument("--state", choices=["running", "finished"], help="only these")
    p.add_argument("--limit", type=int, default=50, help="at most this many, newest first (50)")


def _line(b: mq.BatchInfo) -> str:
    settled = b.completed + b.failed + b.cancelled
    return (
        f"batch {b.id}  {b.state}  {settled} of {b.total} settled "
        f"({b.completed} completed, {b.failed} failed, {b.cancelled} cancelled)"
    )


def batches(out: OutputWrapper, o: dict[str, Any]) -> None:
    if o["id"] is not None:
        one = mq.get_batch(o["id"], using=o["database"])
        if o["json"]:
            out.write(json.dumps(asdict(one), default=str, indent=1))
            return
        out.write(_line(one))
        for name, seq in sorted(one.callbacks.items()):
            out.write(f"  {name}: enqueued as seq {seq}")
        if one.callback_error:
            out.write(f"  callback error: {one.callback_error}")
        return
    found = mq.list_batches(state=o["state"], limit=o["limit"], using=o["database"])
    if o["json"]:
        out.write(json.dumps([asdict(b) for b in found], default=str, indent=1))
        return
    if not found:
        out.write("no batches")
    for b in found:
        out.write(_line(b))
