"""The topics ``MQLITE["TOPICS"]`` declares, read and made (by ``migrate``).

A declaration is ``{name: {"subscriptions": {queue: subscription}, "database": alias}}``
(``"database"`` optional: the topic lives on ``MQLITE["DATABASE"]``). A subscription is
either a filter (or None: every message), or options ``{"filter": ..., "task":
"app.tasks.on_event"}``, both keys optional: with ``"task"`` it is a task subscription,
made by the Tasks integration (``topics.task_delivery``, the function behind
``mq.subscribe_task``), since the engine knows no task. The two forms cannot be taken
for each other: a filter has no ``"filter"`` or ``"task"`` key.

``read`` checks the shape and every filter without a database (the system checks ask it
too); ``sync_declared`` makes what it read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from ..conf import current
from ..exceptions import InvalidArgumentError, TopicExistsError
from . import filters, topics
from .types import Subscription

#: The keys of a subscription written as options.
OPTIONS = frozenset({"filter", "task"})


class DeclaredSubscription(NamedTuple):
    queue: str
    filter: dict[str, Any] | None
    task: str | None


class DeclaredTopic(NamedTuple):
    name: str
    database: str | None  # None: MQLITE["DATABASE"]
    subscriptions: list[DeclaredSubscription]


def read(declared: Any) -> list[DeclaredTopic]:
    """The declared topics, or InvalidArgumentError naming what is wrong (nothing is
    looked up: a task's path is the Tasks integration's to check)."""
    if not isinstance(declared, Mapping):
        raise InvalidArgumentError('MQLITE["TOPICS"] must be a dict of {name: {options}}')
    out = []
    for name, options in declared.items():
        opts = {} if options is None else options
        subs = (opts.get("subscriptions") or {}) if isinstance(opts, Mapping) else None
        if not isinstance(subs, Mapping) or set(opts) - {"database", "subscriptions"}:
            raise InvalidArgumentError(
                f'MQLITE["TOPICS"][{name!r}]: the options are "database" and '
                '"subscriptions" ({queue: filter or None, or {"filter": ..., "task": path}})'
            )
        where = f'MQLITE["TOPICS"][{name!r}]["subscriptions"]'
        subscriptions = [_subscription(f"{where}[{q!r}]", q, v) for q, v in subs.items()]
        out.append(DeclaredTopic(name, opts.get("database") or None, subscriptions))
    return out


def _subscription(where: str, queue: Any, value: Any) -> DeclaredSubscription:
    flt, task = value, None
    if isinstance(value, Mapping) and value and set(value) <= OPTIONS:
        flt, task = value.get("filter"), value.get("task")
        if task is not None and (not isinstance(task, str) or not task):
            raise InvalidArgumentError(f'{where}["task"]: a task\'s dotted path, as a string')
    try:
        checked = filters.validate(flt)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"{where}: {exc}") from None
    return DeclaredSubscription(queue, checked, task)


def sync_declared(declared: Any, *, using: str | None = None) -> int:
    """Create the topics ``MQLITE["TOPICS"]`` declares on database ``using`` and their
    declared subscriptions, replacing the filter (and task) of those that exist; returns
    how many topics. Subscriptions made at run time are kept."""
    alias = using or current().database
    done = 0
    for topic in read(declared):
        if (topic.database or current().database) != alias:
            continue
        try:
            topics.create_topic(topic.name, using=alias)
        except TopicExistsError:
            pass
        for sub in topic.subscriptions:
            if sub.task is None:
                topics.subscribe(topic.name, sub.queue, sub.filter, using=alias)
            else:
                _subscribe_task(topic.name, sub.queue, sub.task, sub.filter, alias)
        done += 1
    return done


def _subscribe_task(
    topic: str, queue: str, task: str, flt: dict[str, Any] | None, alias: str
) -> Subscription:
    if topics.task_delivery is None:
        raise InvalidArgumentError(
            f'MQLITE["TOPICS"][{topic!r}] subscribes task {task!r} and no Tasks '
            "integration is installed to make the subscription"
        )
    return topics.task_delivery.subscribe(topic, task, flt, queue=queue, using=alias)
