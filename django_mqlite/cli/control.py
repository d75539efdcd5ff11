"""``manage.py mqlite pause|resume|inspect``: the operator controls of one queue.

Like ``cli``, each function takes the parsed options and an ``Out``; engine errors
become ``CommandError`` in the command's ``handle``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from django.core.management.base import OutputWrapper

import django_mqlite as mq

#: What ``--rate-limit`` / ``--max-in-flight`` take to remove a limit.
NO_LIMIT = "none"


def limit_type(kind: Callable[[str], float]) -> Callable[[str], Any]:
    """An argparse type for a limit: a number, or ``none`` to remove the limit."""

    def parse(value: str) -> Any:
        if value.strip().lower() == NO_LIMIT:
            return NO_LIMIT
        try:
            return kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be a number or '{NO_LIMIT}', not {value!r}"
            ) from None

    return parse


def limits_of(given: dict[str, Any]) -> dict[str, Any]:
    """``given`` options with ``none`` limits as None (no limit)."""
    return {k: None if v == NO_LIMIT else v for k, v in given.items()}


def describe_limits(q: mq.Queue | mq.QueueStats) -> tuple[str, str, str]:
    """(paused, rate limit, max in flight) as table cells."""
    return (
        "yes" if q.paused else "no",
        "-" if q.rate_limit is None else f"{q.rate_limit:g}/s",
        "-" if q.max_in_flight is None else str(q.max_in_flight),
    )


def pause(out: OutputWrapper, o: dict[str, Any]) -> None:
    _report(out, o, mq.pause_queue(o["name"], using=o["database"]), "paused")


def resume(out: OutputWrapper, o: dict[str, Any]) -> None:
    _report(out, o, mq.resume_queue(o["name"], using=o["database"]), "resumed")


def _report(out: OutputWrapper, o: dict[str, Any], q: mq.Queue, verb: str) -> None:
    if o["json"]:
        out.write(_json(asdict(q)))
    else:
        out.write(f"{verb} queue {q.name!r}")


def inspect(out: OutputWrapper, o: dict[str, Any]) -> None:
    """One queue: its settings, whether it is paused, its limits and its numbers."""
    q = mq.get_queue(o["name"], using=o["database"])
    s = mq.stats(o["name"], using=o["database"])
    if o["json"]:
        out.write(_json({"queue": asdict(q), "stats": asdict(s)}))
        return
    paused, rate, in_flight = describe_limits(q)
    lines = [
        ("queue", q.name),
        ("paused", paused),
        ("rate limit", "unlimited" if rate == "-" else rate),
        ("max in flight", "unlimited" if in_flight == "-" else in_flight),
        ("in flight now", str(s.counts["locked"])),
        ("ordering", q.ordering.value),
        ("lock duration", f"{q.lock_duration:g}s"),
        ("max delivery count", str(q.max_delivery_count)),
        *((state, str(n)) for state, n in s.counts.items()),
        ("oldest active", "-" if s.oldest_active_age is None else f"{s.oldest_active_age:.1f}s"),
    ]
    width = max(len(k) for k, _ in lines)
    for key, value in lines:
        out.write(f"{key.ljust(width)}  {value}")


def _json(value: Any) -> str:
    import json

    return json.dumps(value, indent=2, sort_keys=True, default=str)
