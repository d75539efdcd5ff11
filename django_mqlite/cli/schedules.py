"""``manage.py mqlite schedules [list | pause NAME | resume NAME | run NAME | next NAME]``:
periodic schedules, those stored in the database (which these verbs operate, through
``mq.pause_schedule``, ``mq.resume_schedule`` and ``mq.run_schedule``) and those declared
in ``MQLITE["PERIODIC"]`` (listed, read-only). Like the other subcommands, each takes
the parsed options and an output; engine errors become ``CommandError`` in the
command's ``handle``."""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import OutputWrapper

import django_mqlite as mq
from django_mqlite.exceptions import InvalidArgumentError

VERBS = ("list", "pause", "resume", "run", "next")


def add_parsers(add: Any) -> None:
    """Add the ``schedules`` subcommand; ``add(name, help, module)`` is the command's helper."""
    p = add(
        "schedules",
        "periodic schedules: list; pause, resume, run (now) or next (fire times) NAME",
        sys.modules[__name__],
    )
    p.add_argument("verb", nargs="?", choices=VERBS, default="list")
    p.add_argument("name", nargs="?")
    p.add_argument("--count", type=int, default=10, help="with next: how many fire times (10)")


def _row(s: mq.Schedule) -> dict[str, Any]:
    return {
        "name": s.name,
        "source": "database" if s.stored else "settings",
        "cron": s.cron,
        "timezone": s.tz.key,
        "task": s.task,
        "queue": s.queue,
        "paused": s.paused,
        "overlap": s.overlap,
        "jitter_s": s.jitter_s,
    }


def schedules(out: OutputWrapper, o: dict[str, Any]) -> None:
    verb, name, using = o["verb"], o["name"], o["database"]
    if verb == "list":
        if name is not None:
            raise InvalidArgumentError("list takes no NAME")
        _list(out, o)
        return
    if name is None:
        raise InvalidArgumentError(f"{verb} needs the NAME of a schedule")
    if verb == "next":
        times = mq.next_fire_times(name, o["count"], using=using)
        if o["json"]:
            rows = [{"at": t.at.isoformat(), "enqueue_at": t.enqueue_at.isoformat()} for t in times]
            out.write(json.dumps(rows, indent=1))
            return
        for t in times:
            late = (t.enqueue_at - t.at).total_seconds()
            out.write(f"{t.at:%Y-%m-%d %H:%M:%S}Z" + (f"  (+{late:g}s jitter)" if late else ""))
        return
    if verb == "run":
        ran = mq.run_schedule(name, using=using)
        text = "enqueued a run of" if ran else "skipped (the last run is still live):"
        _done(out, o, {"name": name, "enqueued": ran}, f"{text} schedule {name!r}")
        return
    verbs = {"pause": mq.pause_schedule, "resume": mq.resume_schedule}
    s = verbs[verb](name, using=using)
    _done(out, o, _row(s), f"{verb}d schedule {name!r}")


def _done(out: OutputWrapper, o: dict[str, Any], row: dict[str, Any], text: str) -> None:
    out.write(json.dumps(row, indent=1) if o["json"] else text)


def _list(out: OutputWrapper, o: dict[str, Any]) -> None:
    rows = [_row(s) for s in mq.list_schedules(using=o["database"])]
    if o["json"]:
        out.write(json.dumps(rows, indent=1))
        return
    if not rows:
        out.write("no schedules")
    for r in rows:
        target = f"task {r['task']}" if r["task"] else f"queue {r['queue']}"
        state = "paused" if r["paused"] else "active"
        extra = f"  overlap={r['overlap']}" + (
            f"  jitter={r['jitter_s']}s" if r["jitter_s"] else ""
        )
        out.write(
            f"{r['name']}  [{r['source']}]  {state}  {r['cron']} ({r['timezone']})  {target}{extra}"
        )
