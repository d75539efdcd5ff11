"""Periodic schedules stored in the database, beside those declared in
``MQLITE["PERIODIC"]``: create, change, pause, resume, run now, delete, and the next
fire times. The admin and ``manage.py mqlite schedules`` call these; the ticker
(``tasks/periodic.py``) runs stored schedules exactly as it runs declared ones.

Exactly once across hosts is the ticker's compare-and-set on the schedule's cursor row
(``mqlite_periodic``: the latest occurrence enqueued), the same row and statement for
both kinds. What this module adds is how an operator moves that cursor: creating,
changing and resuming a schedule replace its cursor row with the occurrence due now, and
pausing deletes it, each in the transaction that changes the schedule and bumps its
``version``. A ticker's compare-and-set on the old row then matches nothing (on
PostgreSQL it waits for the operator's commit and finds its row gone), and it also
requires the schedule to be unpaused at the version the ticker read, so a ticker holding
an older copy enqueues nothing. Hence:

- pause stops occurrences at once, on every host;
- resume starts from the next fire time: the occurrences missed while paused are not run
  (no burst of them at resume);
- a change takes effect from the next fire time of the new definition.

Overlap: ``"allow"`` enqueues every occurrence; ``"skip"`` sends each occurrence with the
unique key ``schedule:<name>`` (``engine/unique.py``, skip policy), so while the last run
is live (waiting or running) the database refuses the next one in the same statement
that would have inserted it. Names are 1-80 letters, digits, ``.``, ``_``, ``-``, and
cannot be those of declared schedules.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from django.db import IntegrityError, transaction
from django.db.backends.utils import CursorWrapper

from ..exceptions import InvalidArgumentError, ScheduleExistsError, ScheduleNotFoundError
from . import arguments, databases, wakeup
from .clock import from_ms, now_ms
from .dialects import Dialect
from .schedule_times import MAX_JITTER_S, OVERLAP, Schedule, check_when

__all__ = ["FireTime", "Schedule", "create_schedule", "list_schedules", "run_schedule"]

UNIQUE_PREFIX = "schedule:"
MAX_FIRE_TIMES = 100
_COLUMNS = (
    "name, cron, timezone, task, args, kwargs, queue, body, paused, overlap, jitter_s, version"
)
_FIELDS = ("cron", "timezone", "task", "args", "kwargs", "queue", "body", "overlap", "jitter")


class TaskSchedules(Protocol):
    """What the Tasks integration (``tasks/periodic.py``) does for schedules; the engine
    knows no task, so it asks."""

    def declared(self) -> list[Schedule]:
        """The schedules of ``MQLITE["PERIODIC"]``."""

    def check_target(self, task: str | None, queue: str | None) -> None:
        """InvalidArgumentError unless ``task`` is a task path (or ``queue`` a queue a
        raw message may be sent to)."""

    def fire(self, schedule: Schedule, occurrence: int | None, using: str) -> bool:
        """Enqueue one run (``occurrence`` None: run now); False when the overlap
        policy skipped it."""


#: Installed by the Tasks integration when the app is ready (``tasks/plugin.py``).
hooks: TaskSchedules | None = None


@dataclass(frozen=True)
class FireTime:
    """A coming occurrence: its cron time, and when it is enqueued (after its jitter)."""

    at: dt.datetime
    enqueue_at: dt.datetime


#: The wake-up key (and NOTIFY payload) of a change to the stored schedules: tickers
#: re-read them when they hear it (``tasks.periodic.Ticker``).
CHANGED_KEY = "#schedules"


def _announce(cursor: CursorWrapper, dialect: Dialect, alias: str) -> None:
    """Tell every ticker that the stored schedules changed, once this transaction
    commits: NOTIFY where the database has it, and this process's own wake-up."""
    notify = dialect.notify_sql()
    if notify is not None:
        cursor.execute(notify, [CHANGED_KEY])
    transaction.on_commit(lambda: wakeup.notify(CHANGED_KEY), using=alias)


def unique_key(name: str) -> str:
    """The unique key each run of a ``skip`` schedule is sent with."""
    return f"{UNIQUE_PREFIX}{name}"


def _hooks() -> TaskSchedules:
    if hooks is None:  # pragma: no cover - installed in AppConfig.ready()
        raise InvalidArgumentError("schedules need django_mqlite in INSTALLED_APPS")
    return hooks


def _declared_names() -> set[str]:
    return {s.name for s in _hooks().declared()}


def _json(value: Any, what: str) -> str:
    try:
        return json.dumps(value, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"{what} must be JSON: {exc}") from None


def check_name(name: object) -> str:
    """A stored schedule's name: 1-80 letters, digits, '.', '_', '-' (as a queue's)."""
    if not isinstance(name, str) or not arguments.QUEUE_NAME_RE.fullmatch(name):
        raise InvalidArgumentError(
            f"invalid schedule name {name!r}: 1-80 characters of letters, digits, '.', '_', '-'"
        )
    return name


def build(name: str, **spec: Any) -> Schedule:
    """A schedule from its fields, checked (InvalidArgumentError says what is wrong)."""
    check_name(name)
    cron, tz = check_when(spec.get("cron"), spec.get("timezone"))
    overlap = spec.get("overlap") or "allow"
    if overlap not in OVERLAP:
        raise InvalidArgumentError(f"overlap must be one of {', '.join(OVERLAP)}, not {overlap!r}")
    jitter = spec.get("jitter") or 0
    if not isinstance(jitter, int) or isinstance(jitter, bool) or not 0 <= jitter <= MAX_JITTER_S:
        raise InvalidArgumentError(f"jitter must be whole seconds in 0-{MAX_JITTER_S}")
    task, queue = spec.get("task") or None, spec.get("queue") or None
    if (task is None) == (queue is None):
        raise InvalidArgumentError("give either a task path or a queue")
    args, kwargs = spec.get("args") or [], spec.get("kwargs") or {}
    if not isinstance(args, list | tuple) or not isinstance(kwargs, dict):
        raise InvalidArgumentError("args must be a list and kwargs a dict")
    if task is not None and not isinstance(task, str):
        raise InvalidArgumentError("task must be a dotted path")
    if queue is not None:
        arguments.check_queue_name(queue)
    for value, what in ((args, "args"), (kwargs, "kwargs"), (spec.get("body"), "body")):
        _json(value, what)
    _hooks().check_target(task, queue)
    return Schedule(
        name,
        cron,
        tz,
        task=task,
        args=list(args),
        kwargs=dict(kwargs),
        queue=queue,
        body=spec.get("body") if queue is not None else None,
        overlap=overlap,
        jitter_s=jitter,
        paused=bool(spec.get("paused")),
        stored=True,
    )


def fields_of(schedule: Schedule) -> dict[str, Any]:
    """The fields ``build`` takes, as a schedule has them."""
    return {
        "cron": schedule.cron,
        "timezone": schedule.tz.key,
        "task": schedule.task,
        "args": schedule.args,
        "kwargs": schedule.kwargs,
        "queue": schedule.queue,
        "body": schedule.body,
        "overlap": schedule.overlap,
        "jitter": schedule.jitter_s,
        "paused": schedule.paused,
    }


def create_schedule(name: str, *, using: str | None = None, **spec: Any) -> Schedule:
    """Store a new schedule (``cron``, ``task`` with ``args``/``kwargs`` or ``queue``
    with ``body``, ``timezone``, ``overlap``, ``jitter`` seconds, ``paused``). It runs
    from its next fire time. ``ScheduleExistsError`` when the name is taken; nothing is
    written on any error."""
    unknown = set(spec) - {*_FIELDS, "paused"}
    if unknown:
        raise InvalidArgumentError(f"unknown schedule option(s): {', '.join(sorted(unknown))}")
    schedule = build(name, **spec)
    if name in _declared_names():
        raise ScheduleExistsError(f'schedule {name!r} is declared in MQLITE["PERIODIC"]')
    alias = databases.alias_of(using)
    cursor, dialect = databases.ctx(alias)
    now = now_ms()
    j = dialect.json_param()
    try:
        with transaction.atomic(using=alias):
            cursor.execute(
                f"INSERT INTO mqlite_schedule ({_COLUMNS}, created_at, modified_at) "
                f"VALUES (%s, %s, %s, %s, {j}, {j}, %s, {j}, %s, %s, %s, 1, %s, %s)",
                [*_params(schedule), now, now],
            )
            _reset_cursor(cursor, schedule, now)
            _announce(cursor, dialect, alias)
    except IntegrityError:
        raise ScheduleExistsError(f"schedule {name!r} exists already") from None
    return _load(cursor, dialect, name)


def update_schedule(name: str, *, using: str | None = None, **changes: Any) -> Schedule:
    """Change the fields given (as ``create_schedule`` takes them); the new definition
    runs from its next fire time."""
    unknown = set(changes) - set(_FIELDS)
    if unknown:
        raise InvalidArgumentError(f"unknown schedule option(s): {', '.join(sorted(unknown))}")
    return _change(name, using, lambda s: build(name, **{**fields_of(s), **changes}))


def pause_schedule(name: str, *, using: str | None = None) -> Schedule:
    """Stop enqueueing occurrences of ``name`` (at once, on every host). Idempotent."""
    return _change(name, using, lambda s: dataclasses.replace(s, paused=True))


def resume_schedule(name: str, *, using: str | None = None) -> Schedule:
    """Enqueue occurrences again from the next fire time; those missed while paused are
    not run. Idempotent."""
    return _change(name, using, lambda s: dataclasses.replace(s, paused=False))


def delete_schedule(name: str, *, using: str | None = None) -> None:
    """Remove a stored schedule (runs already enqueued stay)."""
    check_name(name)
    alias = databases.alias_of(using)
    cursor, dialect = databases.ctx(alias)
    with transaction.atomic(using=alias):
        cursor.execute("DELETE FROM mqlite_schedule WHERE name = %s", [name])
        if cursor.rowcount == 0:
            raise ScheduleNotFoundError(f"no stored schedule {name!r}")
        cursor.execute("DELETE FROM mqlite_periodic WHERE name = %s", [name])
        _announce(cursor, dialect, alias)


def get_schedule(name: str, *, using: str | None = None) -> Schedule:
    """A stored schedule, or a declared one (``stored`` False); else
    ``ScheduleNotFoundError``."""
    for declared in _hooks().declared():
        if declared.name == name:
            return declared
    check_name(name)
    cursor, dialect = databases.ctx(databases.alias_of(using))
    return _load(cursor, dialect, name)


def list_schedules(*, using: str | None = None) -> list[Schedule]:
    """The declared schedules, then the stored ones, each by name."""
    cursor, dialect = databases.ctx(databases.alias_of(using))
    declared = sorted(_hooks().declared(), key=lambda s: s.name)
    cursor.execute(f"SELECT {_COLUMNS} FROM mqlite_schedule ORDER BY name")
    return declared + [_row(dialect, r) for r in cursor.fetchall()]


def stored_to_run(*, using: str | None = None) -> list[Schedule]:
    """The ticker's share of stored schedules: unpaused, not shadowed by a declared one."""
    cursor, dialect = databases.ctx(databases.alias_of(using))
    cursor.execute(
        f"SELECT {_COLUMNS} FROM mqlite_schedule WHERE paused = %s ORDER BY name", [False]
    )
    declared = _declared_names()
    return [s for s in (_row(dialect, r) for r in cursor.fetchall()) if s.name not in declared]


def run_schedule(name: str, *, using: str | None = None) -> bool:
    """Enqueue one run of stored schedule ``name`` now, whether paused or not, outside
    its fire times (its cursor is untouched). False when its overlap policy skipped it
    (``skip`` while the last run is live)."""
    schedule = get_schedule(name, using=using)
    if not schedule.stored:
        raise InvalidArgumentError(f'schedule {name!r} is declared in MQLITE["PERIODIC"]')
    return _hooks().fire(schedule, None, databases.alias_of(using))


def next_fire_times(name: str, count: int = 10, *, using: str | None = None) -> list[FireTime]:
    """The next ``count`` (1-100) fire times of schedule ``name`` from now."""
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_FIRE_TIMES:
        raise InvalidArgumentError(f"count must be 1-{MAX_FIRE_TIMES}")
    schedule = get_schedule(name, using=using)
    return [
        FireTime(from_ms(at), from_ms(enqueue_at))
        for at, enqueue_at in schedule.upcoming(now_ms(), count)
    ]


# -- rows --------------------------------------------------------------------------------


def _params(s: Schedule) -> list[Any]:
    return [
        s.name,
        s.cron,
        s.tz.key,
        s.task,
        _json(s.args, "args"),
        _json(s.kwargs, "kwargs"),
        s.queue,
        _json(s.body, "body"),
        s.paused,
        s.overlap,
        s.jitter_s,
    ]


def _row(dialect: Dialect, r: Any) -> Schedule:
    name, cron, tz, task, args, kwargs, queue, body, paused, overlap, jitter_s, version = r
    return Schedule(
        name,
        cron,
        ZoneInfo(tz),
        task=task,
        args=dialect.load_json(args) or [],
        kwargs=dialect.load_json(kwargs) or {},
        queue=queue,
        body=dialect.load_json(body),
        overlap=overlap,
        jitter_s=jitter_s,
        paused=bool(paused),
        stored=True,
        version=version,
    )


def _load(cursor: CursorWrapper, dialect: Dialect, name: str) -> Schedule:
    cursor.execute(f"SELECT {_COLUMNS} FROM mqlite_schedule WHERE name = %s", [name])
    row = cursor.fetchone()
    if row is None:
        raise ScheduleNotFoundError(f"no stored schedule {name!r}")
    return _row(dialect, row)


def _change(name: str, using: str | None, change: Any) -> Schedule:
    """Apply ``change`` (old schedule -> new) to stored schedule ``name`` with its row
    locked, bump its version and reset its cursor, in one transaction."""
    check_name(name)
    alias = databases.alias_of(using)
    cursor, dialect = databases.ctx(alias)
    j = dialect.json_param()
    with transaction.atomic(using=alias):
        # Locks the row (PostgreSQL), so two operators' changes apply one after the other.
        cursor.execute("UPDATE mqlite_schedule SET version = version + 1 WHERE name = %s", [name])
        if cursor.rowcount == 0:
            raise ScheduleNotFoundError(f"no stored schedule {name!r}")
        new: Schedule = change(_load(cursor, dialect, name))
        now = now_ms()
        cursor.execute(
            "UPDATE mqlite_schedule SET cron = %s, timezone = %s, task = %s, "
            f"args = {j}, kwargs = {j}, queue = %s, body = {j}, paused = %s, overlap = %s, "
            "jitter_s = %s, modified_at = %s WHERE name = %s",
            [*_params(new)[1:], now, name],
        )
        _reset_cursor(cursor, new, now)
        _announce(cursor, dialect, alias)
        return _load(cursor, dialect, name)


def _reset_cursor(cursor: CursorWrapper, schedule: Schedule, now: int) -> None:
    """Replace the schedule's cursor row: gone while paused, else the occurrence due now
    (a new row, so a ticker's compare-and-set on the old one matches nothing)."""
    cursor.execute("DELETE FROM mqlite_periodic WHERE name = %s", [schedule.name])
    if not schedule.paused:
        cursor.execute(
            "INSERT INTO mqlite_periodic (name, last_at) VALUES (%s, %s)",
            [schedule.name, schedule.due(now)],
        )
