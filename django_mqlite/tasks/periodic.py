"""Periodic schedules: ``MQLITE["PERIODIC"]``, ticked by every running worker.

::

    MQLITE = {"PERIODIC": {
        "nightly-report": {"cron": "0 3 * * *", "task": "reports.tasks.nightly",
                           "timezone": "Europe/Paris"},
        "heartbeat": {"cron": "*/5 * * * *", "queue": "pings", "body": {"ping": True}},
    }}

Each schedule is a 5-field cron expression (parsed by ``cronsim``) read in its time
zone (default ``settings.TIME_ZONE``), and either a task (``task``, ``args``,
``kwargs``; enqueued through its backend, so signed) or a message (``queue``, ``body``)
to a queue that no Tasks backend serves.

Exactly once across workers and hosts: ``mqlite_periodic`` keeps, per schedule, the
latest occurrence enqueued. A ticker moves it forward with a compare-and-set
``UPDATE ... WHERE last_at = <what it read>`` in the same transaction as the enqueue;
a concurrent ticker's update matches no row, so it enqueues nothing. Every occurrence
is also sent with the message id ``periodic:<name>:<occurrence in UTC>``.

The first time a schedule is seen, its latest past occurrence becomes the baseline and
is not run. After downtime, ``catchup`` decides: ``"latest"`` (default) enqueues the
most recent missed occurrence once; ``"all"`` enqueues each missed one (at most 1000).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils.module_loading import import_string

from ..conf import mqlite_settings
from ..engine import arguments, databases
from ..engine.clock import from_ms, now_ms, to_ms
from .support import mqlite_task_queues

logger = logging.getLogger("django_mqlite.periodic")

TICK_INTERVAL_S = 1.0
MAX_CATCHUP = 1000
CATCHUP = ("latest", "all")
_KEYS = {"cron", "task", "args", "kwargs", "queue", "body", "timezone", "catchup"}


@dataclass(frozen=True)
class Schedule:
    name: str
    cron: str
    tz: ZoneInfo
    catchup: str = "latest"
    task: str | None = None
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    queue: str | None = None
    body: Any = None

    def latest(self, now: int) -> int:
        """The latest occurrence at or before ``now`` (epoch ms)."""
        start = from_ms(now).astimezone(self.tz) + dt.timedelta(microseconds=1)
        return to_ms(next(CronSim(self.cron, start, reverse=True)))

    def after(self, since: int, until: int) -> Iterator[int]:
        """Occurrences in ``(since, until]``."""
        for when in CronSim(self.cron, from_ms(since).astimezone(self.tz)):
            ms = to_ms(when)
            if ms > until:
                return
            yield ms

    def key(self, occurrence: int) -> str:
        return f"periodic:{self.name}:{from_ms(occurrence).strftime('%Y-%m-%dT%H:%M:%SZ')}"


def parse(name: str, spec: Any) -> Schedule:
    """One schedule from its settings entry; ImproperlyConfigured says what is wrong."""
    where = f'MQLITE["PERIODIC"][{name!r}]'
    if not isinstance(name, str) or not 1 <= len(name) <= 80:
        raise ImproperlyConfigured(f"{where}: a schedule name is 1-80 characters")
    if not isinstance(spec, Mapping):
        raise ImproperlyConfigured(f"{where} must be a dict")
    unknown = set(spec) - _KEYS
    if unknown:
        raise ImproperlyConfigured(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    cron = spec.get("cron")
    if not isinstance(cron, str) or len(cron.split()) != 5:
        raise ImproperlyConfigured(f"{where}: cron must be a 5-field cron expression")
    try:
        CronSim(cron, dt.datetime.now(dt.UTC))
    except CronSimError as exc:
        raise ImproperlyConfigured(f"{where}: bad cron expression {cron!r}: {exc}") from None
    tz_name = spec.get("timezone") or getattr(settings, "TIME_ZONE", None) or "UTC"
    try:
        tz = ZoneInfo(tz_name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ImproperlyConfigured(f"{where}: unknown time zone {tz_name!r}") from None
    catchup = spec.get("catchup", "latest")
    if catchup not in CATCHUP:
        raise ImproperlyConfigured(f"{where}: catchup must be one of {', '.join(CATCHUP)}")
    task, queue = spec.get("task"), spec.get("queue")
    if (task is None) == (queue is None):
        raise ImproperlyConfigured(f"{where}: give either a task path or a queue")
    if queue is not None:
        arguments.check_queue_name(queue)
        if queue in mqlite_task_queues():
            # A Tasks queue runs only envelopes the backend signed: a raw body would be
            # dead-lettered at every occurrence.
            raise ImproperlyConfigured(
                f"{where}: {queue!r} is a Tasks queue; schedule the task by its path "
                '("task": "app.tasks.name") so that it is enqueued signed'
            )
    args, kwargs = spec.get("args", []), spec.get("kwargs", {})
    if not isinstance(args, list | tuple) or not isinstance(kwargs, Mapping):
        raise ImproperlyConfigured(f"{where}: args must be a list and kwargs a dict")
    return Schedule(
        name, cron, tz, catchup, task, list(args), dict(kwargs), queue, spec.get("body")
    )


def schedules() -> list[Schedule]:
    declared = mqlite_settings.PERIODIC or {}
    if not isinstance(declared, Mapping):
        raise ImproperlyConfigured('MQLITE["PERIODIC"] must be a dict of {name: {...}}')
    return [parse(name, spec) for name, spec in declared.items()]


class Ticker:
    """Enqueues due occurrences. ``tick()`` is cheap when nothing is due: it compares
    each schedule's latest occurrence with the last one it knows was enqueued and only
    then touches the database."""

    def __init__(self, *, using: str | None = None, plan: list[Schedule] | None = None) -> None:
        self.using = databases.alias_of(using)
        self.plan = schedules() if plan is None else plan
        self.known: dict[str, int] = {}

    def tick(self) -> int:
        """Enqueue what is due; returns how many occurrences this ticker enqueued."""
        now = now_ms()
        done = 0
        for schedule in self.plan:
            latest = schedule.latest(now)
            if self.known.get(schedule.name, -1) >= latest:
                continue
            try:
                done += self._advance(schedule, latest)
            except Exception:
                logger.exception("periodic schedule %r: enqueue failed", schedule.name)
                self.known.pop(schedule.name, None)
        return done

    def _advance(self, schedule: Schedule, latest: int) -> int:
        from ..models import PeriodicSchedule

        rows = PeriodicSchedule.objects.using(self.using)
        last = rows.filter(name=schedule.name).values_list("last_at", flat=True).first()
        if last is None:
            # First sight: the latest past occurrence is the baseline, not a run.
            rows.bulk_create(
                [PeriodicSchedule(name=schedule.name, last_at=latest)], ignore_conflicts=True
            )
            self.known[schedule.name] = latest
            return 0
        if last >= latest:
            self.known[schedule.name] = last
            return 0
        with transaction.atomic(using=self.using):
            if not rows.filter(name=schedule.name, last_at=last).update(last_at=latest):
                self.known.pop(schedule.name, None)  # another ticker moved it; re-read
                return 0
            due = [latest]
            if schedule.catchup == "all":
                due = list(schedule.after(last, latest))[-MAX_CATCHUP:]
            for occurrence in due:
                self._enqueue(schedule, occurrence)
        self.known[schedule.name] = latest
        logger.info("periodic schedule %r: enqueued %s occurrence(s)", schedule.name, len(due))
        return len(due)

    def _enqueue(self, schedule: Schedule, occurrence: int) -> None:
        from ..engine.send import send
        from .backend import MQLiteBackend

        key = schedule.key(occurrence)
        if schedule.queue is not None:
            # The schedule's state lives on this ticker's database; the message goes to
            # the queue's own (its message_id dedups a re-send after a failed commit).
            using = databases.declared_database(schedule.queue) or self.using
            send(schedule.queue, schedule.body, message_id=key, using=using)
            return
        assert schedule.task is not None
        task = import_string(schedule.task)
        backend = task.get_backend()
        if isinstance(backend, MQLiteBackend):
            backend.enqueue_deduplicated(task, schedule.args, schedule.kwargs, message_id=key)
        else:
            task.enqueue(*schedule.args, **schedule.kwargs)


def ticker_loop(*, using: str | None = None) -> Any:
    """The worker's background thread that ticks every second."""
    from ..worker.background import Loop

    ticker = Ticker(using=using)

    def tick() -> None:
        # Returns None: a Loop step that returns a number waits that many seconds, and
        # the count of occurrences enqueued (0 mostly) would make the thread spin.
        ticker.tick()

    return Loop("mqlite-periodic", TICK_INTERVAL_S, tick)
