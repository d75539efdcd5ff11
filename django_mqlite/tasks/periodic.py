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

Schedules stored in the database (``engine/schedules.py``: admin, ``mqlite schedules``)
run through the same ticker and the same compare-and-set, which for them also requires
the schedule to be unpaused at the version the ticker read; the ticker reads them at
every tick. Their jitter delays each occurrence's enqueue by its stable offset
(``engine/schedule_times.py``), and their ``skip`` overlap policy sends each run with
the unique key ``schedule:<name>``.

The first time a schedule is seen, its latest past occurrence becomes the baseline and
is not run. After downtime, ``catchup`` decides: ``"latest"`` (default) enqueues the
most recent missed occurrence once; ``"all"`` enqueues each missed one (at most 1000).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils.module_loading import import_string

from ..conf import mqlite_settings
from ..engine import arguments, databases, wakeup
from ..engine import schedules as stored
from ..engine.clock import now_ms
from ..engine.dialects import dialect_for
from ..engine.schedule_times import Schedule, check_when
from ..exceptions import InvalidArgumentError
from .support import mqlite_task_queues

logger = logging.getLogger("django_mqlite.periodic")

TICK_INTERVAL_S = 1.0
#: Where a change of the stored schedules is announced to every process (NOTIFY on
#: PostgreSQL), a ticker re-reads them when it hears one and at least this often (a
#: notification lost while the listener reconnects delays a change, never misfires
#: one: each run's compare-and-set checks the schedule's version and paused flag).
STORED_REREAD_S = 10.0
MAX_CATCHUP = 1000
CATCHUP = ("latest", "all")
_KEYS = {"cron", "task", "args", "kwargs", "queue", "body", "timezone", "catchup"}


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
    try:
        cron, tz = check_when(spec.get("cron"), spec.get("timezone"))
    except InvalidArgumentError as exc:
        raise ImproperlyConfigured(f"{where}: {exc}") from None
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
    each schedule's latest due occurrence with the last one it knows was enqueued and
    only then touches the database (stored schedules cost one read per tick)."""

    def __init__(
        self,
        *,
        using: str | None = None,
        plan: list[Schedule] | None = None,
        stored: bool = True,
    ) -> None:
        self.using = databases.alias_of(using)
        self.plan = schedules() if plan is None else plan
        self.stored = stored
        self.known: dict[tuple[str, int], int] = {}
        self.read_failing = False
        self._read: list[Schedule] | None = None
        self._read_at = 0.0
        self._heard = 0
        self._cache_s = STORED_REREAD_S if dialect_for(self.using).has_listen_notify else 0.0

    def tick(self) -> int:
        """Enqueue what is due; returns how many occurrences this ticker enqueued."""
        now = now_ms()
        done = 0
        for schedule in self.plan + self._stored():
            latest = schedule.due(now)
            mark = (schedule.name, schedule.version)
            if self.known.get(mark, -1) >= latest:
                continue
            try:
                done += self._advance(schedule, latest, mark)
            except Exception:
                logger.exception("periodic schedule %r: enqueue failed", schedule.name)
                self.known.pop(mark, None)
        return done

    def _stored(self) -> list[Schedule]:
        if not self.stored:
            return []
        heard = wakeup.generation(stored.CHANGED_KEY)
        if (
            self._read is not None
            and heard == self._heard
            and time.monotonic() < self._read_at + self._cache_s
        ):
            return self._read
        try:
            found = stored.stored_to_run(using=self.using)
        except Exception:
            # Once per outage, not every second (a worker started before ``migrate``).
            if not self.read_failing:
                logger.exception("periodic schedules: reading the stored schedules failed")
            self.read_failing = True
            return []
        self.read_failing = False
        self._read, self._read_at, self._heard = found, time.monotonic(), heard
        return found

    def _advance(self, schedule: Schedule, latest: int, mark: tuple[str, int]) -> int:
        from django.db.models import Exists

        from ..models import PeriodicSchedule
        from ..models import Schedule as StoredSchedule

        rows = PeriodicSchedule.objects.using(self.using)
        last = rows.filter(name=schedule.name).values_list("last_at", flat=True).first()
        if last is None:
            # First sight: the latest past occurrence is the baseline, not a run.
            rows.bulk_create(
                [PeriodicSchedule(name=schedule.name, last_at=latest)], ignore_conflicts=True
            )
            self.known[mark] = latest
            return 0
        if last >= latest:
            self.known[mark] = last
            return 0
        cursor = rows.filter(name=schedule.name, last_at=last)
        if schedule.stored:  # as the ticker read it: not paused, changed or deleted since
            current = StoredSchedule.objects.using(self.using).filter(
                name=schedule.name, version=schedule.version, paused=False
            )
            cursor = cursor.filter(Exists(current))
        with transaction.atomic(using=self.using):
            if not cursor.update(last_at=latest):
                self.known.pop(mark, None)  # another ticker moved it; re-read
                self._read = None  # or the schedule changed: read them again
                return 0
            due = [latest]
            if schedule.catchup == "all":
                due = list(schedule.after(last, latest))[-MAX_CATCHUP:]
            for occurrence in due:
                fire(schedule, occurrence, self.using)
        self.known[mark] = latest
        logger.info("periodic schedule %r: enqueued %s occurrence(s)", schedule.name, len(due))
        return len(due)


def fire(schedule: Schedule, occurrence: int | None, using: str) -> bool:
    """Enqueue one run of ``schedule``: an occurrence (sent with its message id, so a
    re-send after a failed commit collapses), or a run now (``occurrence`` None). A
    ``skip`` schedule's run carries the unique key ``schedule:<name>``; False when that
    key is held (the last run is still live) and nothing was enqueued."""
    from ..engine.send import send_reported

    key = None if occurrence is None else schedule.key(occurrence)
    unique: dict[str, Any] = {}
    if schedule.overlap == "skip":
        unique = {"unique_key": stored.unique_key(schedule.name), "on_conflict": "skip"}
    if schedule.queue is not None:
        # The schedule's state lives on this ticker's database; the message goes to
        # the queue's own (its message_id dedups a re-send after a failed commit).
        target = databases.declared_database(schedule.queue) or using
        _, _, inserted = send_reported(
            schedule.queue, schedule.body, message_id=key, using=target, **unique
        )
        return inserted or not unique
    assert schedule.task is not None
    from .backend import MQLiteBackend

    task = import_string(schedule.task)
    backend = task.get_backend()
    if isinstance(backend, MQLiteBackend):
        return backend.enqueue_scheduled(
            task, schedule.args, schedule.kwargs, message_id=key, unique=unique or None
        )
    task.enqueue(*schedule.args, **schedule.kwargs)
    return True


class StoredSchedules:
    """What the engine asks of the Tasks integration for stored schedules
    (``engine.schedules.TaskSchedules``)."""

    def declared(self) -> list[Schedule]:
        return schedules()

    def check_target(self, task: str | None, queue: str | None) -> None:
        if queue is not None:
            from ..engine.queues import get_queue

            if queue in mqlite_task_queues():
                raise InvalidArgumentError(
                    f"{queue!r} is a Tasks queue: schedule the task by its path instead"
                )
            get_queue(queue)  # QueueNotFoundError
            return
        try:
            target = import_string(str(task))
        except ImportError:
            raise InvalidArgumentError(f"unknown task path {task!r}") from None
        if not callable(getattr(target, "enqueue", None)) or not hasattr(target, "get_backend"):
            raise InvalidArgumentError(f"{task!r} is not a Django task (@task)")

    def fire(self, schedule: Schedule, occurrence: int | None, using: str) -> bool:
        return fire(schedule, occurrence, using)


def ticker_loop(*, using: str | None = None) -> Any:
    """The worker's background thread that ticks every second."""
    from ..worker.background import Loop

    ticker = Ticker(using=using)

    def tick() -> None:
        # Returns None: a Loop step that returns a number waits that many seconds, and
        # the count of occurrences enqueued (0 mostly) would make the thread spin.
        ticker.tick()

    return Loop("mqlite-periodic", TICK_INTERVAL_S, tick)
