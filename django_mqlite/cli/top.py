"""``manage.py mqlite top``: a live terminal view of every queue, for operators without
the admin. Each refresh takes a ``Frame`` (the stats of every queue and its last minutes
of history) and ``render`` draws it; ``render`` is a pure function of two frames, so what
the screen shows is tested without a terminal."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from django.core.management.base import OutputWrapper

import django_mqlite as mq

from ..engine.clock import from_ms, now_ms
from ..engine.history import FAILED_TOTALS, history_of
from ..engine.types import TOTAL_NAMES

#: Minutes summed in the "last minutes" columns (the current one included).
RECENT_MINUTES = 5
STATES = ("active", "locked", "scheduled", "deferred", "dead_lettered")
HEADER = (
    "queue", "active", "locked", "sched", "defer", "dead", "oldest",
    "in/s", "done/s", "fail/s", f"in {RECENT_MINUTES}m", f"done {RECENT_MINUTES}m",
    f"fail {RECENT_MINUTES}m",
)  # fmt: skip
CLEAR = "\x1b[H\x1b[2J"


@dataclass(frozen=True)
class Frame:
    """What one refresh saw: when (engine clock, ms), each queue's stats, and each queue's
    counts summed over the last ``RECENT_MINUTES`` minutes."""

    at_ms: int
    stats: dict[str, mq.QueueStats]
    recent: dict[str, dict[str, int]]


def failed(counts: dict[str, int]) -> int:
    return sum(counts[n] for n in FAILED_TOTALS)


def take(using: str | None = None) -> Frame:
    stats = mq.stats(using=using)
    buckets = history_of(None, minutes=RECENT_MINUTES, depth=False, using=using)
    recent = {name: {k: sum(b[k] for b in bs) for k in TOTAL_NAMES} for name, bs in buckets.items()}
    return Frame(at_ms=now_ms(), stats=stats, recent=recent)


def rates(frame: Frame, previous: Frame | None, name: str) -> dict[str, float] | None:
    """Messages per second in, done and failed since ``previous`` (None on the first
    frame, for a queue new since then, or when no time passed)."""
    if previous is None or name not in previous.stats or frame.at_ms <= previous.at_ms:
        return None
    seconds = (frame.at_ms - previous.at_ms) / 1000
    now, before = frame.stats[name].totals, previous.stats[name].totals
    return {
        "in": (now["enqueued"] - before["enqueued"]) / seconds,
        "done": (now["completed"] - before["completed"]) / seconds,
        "failed": (failed(now) - failed(before)) / seconds,
    }


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def render(frame: Frame, previous: Frame | None = None) -> str:
    """The screen for ``frame``: a title line, then one row per queue."""
    rows = []
    for name, s in frame.stats.items():
        r = rates(frame, previous, name)
        recent = frame.recent.get(name) or {}
        rows.append(
            [
                name,
                *(f"{s.counts[st]:,}" for st in STATES),
                _age(s.oldest_active_age),
                *(("-",) * 3 if r is None else (f"{r[k]:.1f}" for k in ("in", "done", "failed"))),
                f"{recent.get('enqueued', 0):,}",
                f"{recent.get('completed', 0):,}",
                f"{failed(recent) if recent else 0:,}",
            ]
        )
    title = (
        f"mqlite top  {from_ms(frame.at_ms):%Y-%m-%d %H:%M:%S} UTC  "
        f"{len(rows)} queue{'' if len(rows) == 1 else 's'}"
    )
    if not rows:
        return f"{title}\n\nno queues"
    cells = [list(HEADER), *rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(HEADER))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in cells
    ]
    return "\n".join([title, "", *lines])


def as_json(frame: Frame, previous: Frame | None = None) -> str:
    """One frame as one line of JSON."""
    return json.dumps(
        {
            "at": from_ms(frame.at_ms).isoformat(),
            "queues": {
                name: {
                    "counts": s.counts,
                    "oldest_active_age": s.oldest_active_age,
                    "per_second": rates(frame, previous, name),
                    f"last_{RECENT_MINUTES}_minutes": frame.recent.get(name, {}),
                }
                for name, s in frame.stats.items()
            },
        },
        sort_keys=True,
    )


def top(out: OutputWrapper, o: dict[str, Any]) -> None:
    """Refresh every ``--interval`` seconds until Ctrl-C, or ``--iterations`` times."""
    previous: Frame | None = None
    shown = 0
    clear = not o["json"] and out.isatty()
    try:
        while True:
            frame = take(o["database"])
            if o["json"]:
                out.write(as_json(frame, previous))
            else:
                out.write((CLEAR if clear else ("\n" if shown else "")) + render(frame, previous))
            out.flush()
            shown += 1
            previous = frame
            if o["iterations"] and shown >= o["iterations"]:
                return
            time.sleep(o["interval"])
    except KeyboardInterrupt:
        return
