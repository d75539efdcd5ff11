"""The operator's CLI (``manage.py mqlite ...``): one function per subcommand.

Each takes the parsed options and an ``Out`` to write to, and returns nothing; bad input
raises ``CommandError``. Engine errors (``MQLiteError``) are turned into
``CommandError`` in one place, the command's ``handle``.
"""

from __future__ import annotations

import base64
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from django.core.management.base import CommandError, OutputWrapper
from django.db import connections

import django_mqlite as mq

from ..conf import current
from ..engine import databases
from ..engine.redrive import PURGEABLE
from . import control as cli_control

CHUNK = 500
QUEUE_OPTIONS: dict[str, tuple[Callable[[str], Any], str]] = {
    # option: (argparse type name, help)
    "ordering": (str, "standard, group_fifo or strict_fifo"),
    "lock_duration": (float, "seconds a claim's lease lasts"),
    "max_delivery_count": (int, "deliveries before a message is dead-lettered"),
    "default_ttl": (float, "seconds a message lives unless sent with a ttl"),
    "dedup_window": (float, "seconds a message_id is remembered (0 disables)"),
    "dlq_max_age": (float, "seconds dead letters are kept"),
    "dlq_max_count": (int, "dead letters kept at most"),
    "dlq_max_bytes": (int, "bytes of dead letters kept at most"),
    "keep_results": (float, "seconds completed messages are kept"),
    "rate_limit": (cli_control.limit_type(float), "claims per second ('none': no limit)"),
    "max_in_flight": (cli_control.limit_type(int), "messages locked at once ('none': no limit)"),
    "max_snoozes": (int, "snoozes of a message that use up no delivery (0: every one counts)"),
}
STATE_COLUMNS = ("active", "locked", "scheduled", "deferred", "dead_lettered")
STATS_HEADER: tuple[str, ...] = ("queue", *STATE_COLUMNS, "completed", "oldest", "enqueued")
STATS_HEADER += ("done", "retried", "dead", "paused")


def table(out: OutputWrapper, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Left-aligned columns, padded to the widest cell."""
    cells = [[str(h) for h in header], *[["" if c is None else str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for n, r in enumerate(cells):
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        if n == 0:
            out.write("  ".join("-" * w for w in widths))


def dump(out: OutputWrapper, value: Any) -> None:
    out.write(json.dumps(value, indent=2, sort_keys=True, default=str))


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


# -- subcommands -----------------------------------------------------------------------


def queues(out: OutputWrapper, o: dict[str, Any]) -> None:
    found = mq.list_queues(using=o["database"])
    stats = mq.stats(using=o["database"])
    if o["json"]:
        dump(out, [{**asdict(q), "counts": stats[q.name].counts} for q in found])
        return
    rows = [
        [
            q.name,
            q.ordering.value,
            f"{q.lock_duration:g}s",
            q.max_delivery_count,
            *(stats[q.name].counts[s] for s in STATE_COLUMNS),
            *cli_control.describe_limits(q),
        ]
        for q in found
    ]
    if not rows:
        out.write("no queues (create one with: manage.py mqlite create-queue NAME)")
        return
    header = ["queue", "ordering", "lock", "max_dlv", *STATE_COLUMNS, "paused", "rate", "max_fl"]
    table(out, header, rows)


def create_queue(out: OutputWrapper, o: dict[str, Any]) -> None:
    name, using = o["name"], o["database"]
    given = cli_control.limits_of(
        {
            k: o[k]
            for k in (*QUEUE_OPTIONS, "content_dedup", "dead_letter_on_expire")
            if o.get(k) is not None
        }
    )
    try:
        mq.get_queue(name, using=using)
        created = False
    except mq.QueueNotFoundError:
        created = True
    # An existing queue gets the settings given; the others keep their values.
    q = (
        mq.create_queue(name, using=using, **given)
        if created
        else mq.update_queue(name, using=using, **given)
    )
    if o["json"]:
        dump(out, asdict(q))
    else:
        out.write(f"{'created' if created else 'updated'} queue {q.name!r}")


def stats(out: OutputWrapper, o: dict[str, Any]) -> None:
    shown = 0
    while True:
        _stats_once(out, o)
        shown += 1
        if not o["watch"] or (o["iterations"] and shown >= o["iterations"]):
            return
        time.sleep(o["interval"])
        if not o["json"]:
            out.write("")


def _stats_once(out: OutputWrapper, o: dict[str, Any]) -> None:
    if o["queue"]:
        by_name = {o["queue"]: mq.stats(o["queue"], using=o["database"])}
    else:
        by_name = mq.stats(using=o["database"])
    if o["json"]:
        dump(out, {n: asdict(s) for n, s in by_name.items()})
        return
    rows = [
        [
            n,
            *(s.counts[c] for c in (*STATE_COLUMNS, "completed")),
            _age(s.oldest_active_age),
            s.totals["enqueued"],
            s.totals["completed"],
            s.totals["retried"],
            s.totals["dead_lettered"],
            "yes" if s.paused else "no",
        ]
        for n, s in by_name.items()
    ]
    table(out, STATS_HEADER, rows)


def peek(out: OutputWrapper, o: dict[str, Any]) -> None:
    msgs = mq.peek(
        o["queue"],
        state=o["state"],
        limit=o["limit"],
        after_seq=o["after_seq"],
        using=o["database"],
    )
    if o["json"]:
        dump(out, [{**asdict(m), **_body_fields(m.body, m.content_type)} for m in msgs])
        return
    if not msgs:
        out.write("no messages")
        return
    rows = [
        [
            m.seq,
            m.state.value,
            m.delivery_count,
            _cell(m.group_id or ""),
            m.enqueued_at.isoformat(timespec="seconds"),
            _cell(m.dead_letter_reason or ""),
            _cell("" if m.progress is None else _limit(json.dumps(m.progress), 30)),
            _cell(_preview(m.body, m.content_type, 60)),
        ]
        for m in msgs
    ]
    header = ["seq", "state", "dlv", "group", "enqueued", "reason", "progress", "body"]
    table(out, header, rows)


def _limit(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _body_fields(body: bytes, content_type: str | None) -> dict[str, Any]:
    """``body`` (the JSON value, or the text) or ``body_base64``, by the rule every
    reader shares (``mq.admission.body_view``), as the HTTP API shows it."""
    view = mq.admission.body_view(body, content_type)
    if view.kind == "binary":
        return {"body": None, "body_base64": base64.b64encode(body).decode("ascii")}
    return {"body": view.value}


def _preview(body: bytes, content_type: str | None, limit: int) -> str:
    view = mq.admission.body_view(body, content_type)
    if view.kind == "json":
        text = json.dumps(view.value, ensure_ascii=False)
    else:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return f"<{len(body)} bytes>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _cell(text: str) -> str:
    """A table cell a terminal shows as it is: control characters (an escape sequence
    in a body or reason) as U+FFFD, and a lone surrogate an older version stored too."""
    return mq.admission.diagnostic(_CONTROL.sub("\ufffd", text))


def send(out: OutputWrapper, o: dict[str, Any]) -> None:
    raw = sys.stdin.read() if o["body"] == "-" else o["body"]
    body: Any = raw
    if o["json_body"]:
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise CommandError(f"BODY is not valid JSON: {exc}") from exc
    options = {
        k: o[k]
        for k in (
            "group_id",
            "message_id",
            "subject",
            "priority",
            "delay",
            "ttl",
            "content_type",
            "unique_key",
            "on_conflict",
            "unique_while",
        )
        if o.get(k) is not None
    }
    if o.get("depends_on") or o.get("depends_on_batch"):  # the engine judges them
        batches = [mq.BatchRef(b) for b in o.get("depends_on_batch") or []]
        options["depends_on"] = [*(o.get("depends_on") or []), *batches]
    seq = mq.send(o["queue"], body, using=o["database"], **options)
    out.write(json.dumps({"seq": seq}) if o["json"] else f"sent seq {seq} to {o['queue']!r}")


def cancel(out: OutputWrapper, o: dict[str, Any]) -> None:
    """``mq.request_cancel`` each seq; a finished or unknown one is reported, the others
    still cancelled, and the command then fails."""
    answers: dict[int, bool | str] = {}
    for seq in o["seqs"]:
        try:
            answers[seq] = mq.request_cancel(o["queue"], seq, using=o["database"])
        except (mq.MessageFinishedError, mq.MessageNotFoundError) as exc:
            answers[seq] = str(exc)
    if o["json"]:
        dump(out, {str(seq): answer for seq, answer in answers.items()})
    else:
        for seq, answer in answers.items():
            if answer is True:
                out.write(f"seq {seq}: cancelled (running: asked to stop)")
            elif answer is False:
                out.write(f"seq {seq}: running, asked to stop already")
    failed = [str(a) for a in answers.values() if isinstance(a, str)]
    if failed:
        raise CommandError("; ".join(failed))


def _chunked(
    out: OutputWrapper, verb: str, total: int | None, step: Callable[[int], int], quiet: bool
) -> int:
    """Run ``step(chunk)`` until it does less than a chunk, printing progress."""
    done = 0
    while True:
        n = step(CHUNK)
        done += n
        if not quiet and (n == CHUNK or total):
            out.write(f"{verb} {done}{f' of ~{total}' if total else ''}...")
        if n < CHUNK:
            return done


def redrive(out: OutputWrapper, o: dict[str, Any]) -> None:
    q, using = o["queue"], o["database"]
    total = mq.stats(q, using=using).counts["dead_lettered"] if not o["seqs"] else None
    if o["to"]:
        mq.get_queue(o["to"], using=using)
    if o["seqs"]:
        moved = mq.redrive(q, seqs=o["seqs"], to_queue=o["to"], using=using)
    else:
        moved = _chunked(
            out,
            "redriven",
            total,
            lambda n: mq.redrive(q, to_queue=o["to"], limit=n, using=using),
            o["json"],
        )
    out.write(
        json.dumps({"count": moved})
        if o["json"]
        else f"redrove {moved} message(s) from {q!r} to {o['to'] or q!r}"
    )


def purge(out: OutputWrapper, o: dict[str, Any]) -> None:
    q, using, state = o["queue"], o["database"], o["state"]
    if state not in PURGEABLE:
        raise CommandError(f"--state must be one of {', '.join(PURGEABLE)}, not {state!r}")
    total = mq.stats(q, using=using).counts[state]
    if not o["yes"]:
        if not (sys.stdin.isatty() and o["interactive"]):
            raise CommandError(
                f"purge removes up to {total} {state} message(s) of {q!r} "
                "for good; pass --yes to confirm"
            )
        answer = input(f"Remove up to {total} {state} message(s) of {q!r}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            raise CommandError("purge cancelled")
    removed = _chunked(
        out,
        "purged",
        total,
        lambda n: mq.purge(q, state=state, older_than=o["older_than"], limit=n, using=using),
        o["json"],
    )
    out.write(
        json.dumps({"count": removed})
        if o["json"]
        else f"purged {removed} {state} message(s) from {q!r}"
    )


def health(out: OutputWrapper, o: dict[str, Any]) -> None:
    """Exit non-zero when a queue database is unreachable, fewer than --min-workers live
    workers heartbeat on one, or the oldest active message is older than --max-age.
    Without --database every queue database is probed; ``workers`` is the fewest live
    workers any of them has."""
    report: dict[str, Any] = {"database": True, "workers": None, "oldest_active_age": None}
    problems: list[str] = []
    for alias in [o["database"]] if o["database"] else databases.queue_databases():
        workers, oldest = _probe(alias, problems)
        report["database"] = report["database"] and workers is not None
        if workers is None:
            continue
        if report["workers"] is None or workers < report["workers"]:
            report["workers"] = workers
        if workers < o["min_workers"]:
            problems.append(f"{workers} live worker(s) on {alias!r}, need {o['min_workers']}")
        if oldest is not None and (report["oldest_active_age"] or 0) <= oldest:
            report["oldest_active_age"] = oldest
    report["workers"] = report["workers"] or 0
    oldest = report["oldest_active_age"]
    if o["max_age"] is not None and oldest is not None and oldest > o["max_age"]:
        problems.append(f"oldest active message is {oldest:.1f}s old (> {o['max_age']:g}s)")
    if o.get("worker") is not None:
        from .health import report as worker_report

        alias = o["database"] or current().database
        report["self"], found = worker_report(o["worker"], alias)
        problems += found
    report["healthy"] = not problems
    report["problems"] = problems
    if o["json"]:
        dump(out, report)
    else:
        out.write(f"database: {'ok' if report['database'] else 'UNREACHABLE'}")
        out.write(f"live workers: {report['workers']}")
        out.write(f"oldest active message: {_age(report['oldest_active_age'])}")
    if problems:
        raise CommandError("unhealthy: " + "; ".join(problems), returncode=1)
    if not o["json"]:
        out.write("healthy")


def _probe(alias: str, problems: list[str]) -> tuple[int | None, float | None]:
    """(live workers, oldest active age) on database ``alias``; (None, None) when it
    does not answer."""
    try:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        problems.append(f"database {alias!r} unreachable: {exc}")
        return None, None
    from ..models import Worker

    workers = Worker.objects.using(alias).alive().count()
    ages = [
        s.oldest_active_age
        for s in mq.stats(using=alias).values()
        if s.oldest_active_age is not None
    ]
    return workers, max(ages, default=None)
