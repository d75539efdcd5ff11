"""django-mqlite: the project's own database as a reliable message and task queue.

``import django_mqlite as mq`` gives the public API. Importing this package
never imports models, so it is safe in settings, ``AppConfig`` and task modules.

The top-level modules are the app's standard roles: ``apps``, ``models``, ``checks``,
``conf``, ``exceptions``, ``signals``, and the documented import paths ``consumers``
(the consumer registry, which lives in ``worker/registry.py``), ``permissions``,
``admission`` and ``backends`` (the ``TASKS`` path).
This module may import ``engine`` (the verbs), ``worker.registry`` (``mq.consumer``),
``admission`` and ``exceptions``; never ``models``, ``api``, ``sqs``, ``admin``, ``cli``
or the rest of ``worker`` (its ``__init__`` loads the runtime on first use).
"""

from __future__ import annotations

from typing import Any

from . import admission
from .engine import clock
from .engine.aio import apeek, areceive, arequest_cancel, asend, asend_batch, astats
from .engine.batch import Batch
from .engine.batch_reads import batch_results, get_batch, list_batches
from .engine.cancel import cancel_scheduled
from .engine.chain import Chain, Step
from .engine.claim import receive, receive_deferred
from .engine.control import pause_queue, resume_queue
from .engine.databases import database_of
from .engine.history import history
from .engine.inspect import peek, stats
from .engine.maintenance import reap
from .engine.once import once, prune_once
from .engine.queues import create_queue, delete_queue, get_queue, list_queues, update_queue
from .engine.received import Received
from .engine.redrive import purge, purge_everything, redrive
from .engine.running import request_cancel
from .engine.schedules import (
    FireTime,
    Schedule,
    create_schedule,
    delete_schedule,
    get_schedule,
    list_schedules,
    next_fire_times,
    pause_schedule,
    resume_schedule,
    run_schedule,
    update_schedule,
)
from .engine.send import send, send_batch
from .engine.settle import (
    abandon,
    complete,
    complete_batch,
    defer,
    reject,
    release,
    renew,
    renew_batch,
    renew_lease,
    snooze,
)
from .engine.topics import (
    create_topic,
    delete_topic,
    get_topic,
    list_topics,
    matching_queues,
    publish,
    subscribe,
    topic_database,
    topic_totals,
    unsubscribe,
)
from .engine.types import (
    BatchInfo,
    BatchRef,
    BatchState,
    Callback,
    Completion,
    MessageRef,
    Mode,
    Ordering,
    OutMessage,
    Peeked,
    Queue,
    QueueStats,
    State,
    Subscription,
    Topic,
)
from .engine.waiting import wait
from .exceptions import (
    BatchNotFoundError,
    Cancelled,
    CrossDatabaseError,
    DedupConflictError,
    GroupRequiredError,
    InvalidArgumentError,
    LockLostError,
    MessageFinishedError,
    MessageGoneError,
    MessageNotFoundError,
    MessageTooLargeError,
    MQLiteError,
    ProgressTooLargeError,
    QueueExistsError,
    QueueNotEmptyError,
    QueueNotFoundError,
    Reject,
    ScheduleExistsError,
    ScheduleNotFoundError,
    Snooze,
    SnoozePastExpiryError,
    TopicExistsError,
    TopicNotFoundError,
    UniqueKeyLockedError,
)
from .worker.registry import consumer

__all__ = [
    "Batch",
    "BatchInfo",
    "BatchNotFoundError",
    "BatchRef",
    "BatchState",
    "Callback",
    "Cancelled",
    "Chain",
    "Completion",
    "CrossDatabaseError",
    "DedupConflictError",
    "FireTime",
    "GroupRequiredError",
    "InvalidArgumentError",
    "LockLostError",
    "MQLiteError",
    "MessageFinishedError",
    "MessageGoneError",
    "MessageNotFoundError",
    "MessageRef",
    "MessageTooLargeError",
    "Mode",
    "Ordering",
    "OutMessage",
    "Peeked",
    "ProgressTooLargeError",
    "Queue",
    "QueueExistsError",
    "QueueNotEmptyError",
    "QueueNotFoundError",
    "QueueStats",
    "Received",
    "Reject",
    "Schedule",
    "ScheduleExistsError",
    "ScheduleNotFoundError",
    "Snooze",
    "SnoozePastExpiryError",
    "State",
    "Step",
    "Subscription",
    "Topic",
    "TopicExistsError",
    "TopicNotFoundError",
    "UniqueKeyLockedError",
    "abandon",
    "admission",
    "apeek",
    "areceive",
    "arequest_cancel",
    "asend",
    "asend_batch",
    "astats",
    "batch",
    "batch_results",
    "cancel_scheduled",
    "clock",
    "complete",
    "complete_batch",
    "consumer",
    "create_queue",
    "create_schedule",
    "create_topic",
    "database_of",
    "defer",
    "delete_queue",
    "delete_schedule",
    "delete_topic",
    "get_batch",
    "get_queue",
    "get_schedule",
    "get_topic",
    "history",
    "list_batches",
    "list_queues",
    "list_schedules",
    "list_topics",
    "matching_queues",
    "next_fire_times",
    "once",
    "pause_queue",
    "pause_schedule",
    "peek",
    "prune_once",
    "publish",
    "purge",
    "purge_everything",
    "reap",
    "receive",
    "receive_deferred",
    "redrive",
    "reject",
    "release",
    "renew",
    "renew_batch",
    "renew_lease",
    "request_cancel",
    "resume_queue",
    "resume_schedule",
    "run_schedule",
    "send",
    "send_batch",
    "snooze",
    "stats",
    "subscribe",
    "subscribe_task",
    "topic_database",
    "topic_totals",
    "unsubscribe",
    "update_queue",
    "update_schedule",
    "wait",
]


def subscribe_task(
    topic: str,
    task: Any,
    filter: Any = None,
    *,
    queue: str | None = None,
    using: str | None = None,
) -> Subscription:
    """Subscribe a Django task (the Task, or its dotted path) to ``topic``: each publish
    ``filter`` takes is enqueued as ``task(event)`` by the Tasks backend. ``queue``, when
    given, must be the task's queue (``django_mqlite.tasks.topics``)."""
    from .tasks.topics import subscribe_task as subscribe

    return subscribe(topic, task, filter, queue=queue, using=using)


def batch(
    *,
    on_complete: Callback | None = None,
    on_success: Callback | None = None,
    on_failure: Callback | None = None,
    using: str | None = None,
) -> Batch:
    """A batch of messages with callbacks, as a context manager:
    ``with mq.batch(on_complete=mq.Callback(queue, body)) as b: b.send(queue, body)``.
    ``on_complete`` is enqueued when every child has settled, ``on_success`` only when
    every child completed, ``on_failure`` only when one was dead-lettered; each exactly
    once, in the transaction of the settlement that finishes the batch (see
    ``docs/workflows.md``)."""
    return Batch(on_complete=on_complete, on_success=on_success, on_failure=on_failure, using=using)
