"""The schema. Migrations own it; the engine reads and writes it with raw SQL.

Times are epoch milliseconds in integer columns (``*_at``, ``*_until``, ``*_ms``): one
representation on every database, compared with plain integer comparisons.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from .engine import liveness
from .engine.clock import now_ms
from .engine.types import LIVE_STATES, Ordering, State

LIVE = [s.value for s in LIVE_STATES]


class Queue(models.Model):
    name = models.CharField(max_length=80, unique=True)
    ordering = models.CharField(
        max_length=16, choices=[(o.value, o.value) for o in Ordering], default="standard"
    )
    lock_duration_ms = models.BigIntegerField(default=30_000)
    max_delivery_count = models.IntegerField(default=10)
    default_ttl_ms = models.BigIntegerField(null=True, blank=True)
    dead_letter_on_expire = models.BooleanField(default=True)
    dedup_window_ms = models.BigIntegerField(default=600_000)
    content_dedup = models.BooleanField(default=False)
    dlq_max_age_ms = models.BigIntegerField(null=True, blank=True)
    dlq_max_count = models.BigIntegerField(null=True, blank=True)
    dlq_max_bytes = models.BigIntegerField(null=True, blank=True)
    keep_results_ms = models.BigIntegerField(null=True, blank=True)
    # A queue's dead letters move into this queue (as active messages) instead of
    # staying here; NULL keeps them.
    forward_dead_letters_to = models.CharField(max_length=80, null=True, blank=True)
    created_at = models.BigIntegerField()
    # Operator controls. A paused queue takes sends but hands nothing out. The rate limit
    # is a token bucket: ``rate_limit_milli`` is claims per 1000 seconds, ``rate_tokens``
    # the bucket's content in millionths of a claim as of ``rate_refill_at`` (epoch ms).
    # Database defaults, because the engine inserts queue rows with raw SQL.
    paused = models.BooleanField(default=False, db_default=False)
    rate_limit_milli = models.BigIntegerField(null=True, blank=True)
    rate_tokens = models.BigIntegerField(default=0, db_default=0)
    rate_refill_at = models.BigIntegerField(default=0, db_default=0)
    max_in_flight = models.IntegerField(null=True, blank=True)
    # How many times a message may be snoozed (``Received.snooze``) without using up a
    # delivery; a snooze past it is an ordinary abandon.
    max_snoozes = models.IntegerField(default=100, db_default=100)

    class Meta:
        db_table = "mqlite_queue"
        ordering = ["name"]
        # The HTTP API's permissions (with Django's own view_queue for reading);
        # docs/security.md says which route needs which. pause_queue guards the admin's
        # pause and resume actions.
        permissions = [
            ("send_queue", "Can send messages to queues"),
            ("consume_queue", "Can receive and settle messages of queues"),
            ("manage_queue", "Can create, change and delete queues, redrive and purge"),
            ("pause_queue", "Can pause and resume queues"),
        ]

    def __str__(self) -> str:
        return self.name


class Message(models.Model):
    seq = models.BigAutoField(primary_key=True)
    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, db_index=False, related_name="+")
    state = models.CharField(max_length=16, choices=[(s.value, s.value) for s in State])
    priority = models.SmallIntegerField(default=0)
    visible_at = models.BigIntegerField()
    locked_until = models.BigIntegerField(null=True, blank=True)
    lock_token = models.CharField(max_length=32, null=True, blank=True)
    locked_by = models.BigIntegerField(null=True, blank=True)
    delivery_count = models.IntegerField(default=0)
    expires_at = models.BigIntegerField(null=True, blank=True)
    enqueued_at = models.BigIntegerField()
    body = models.BinaryField()
    message_id = models.CharField(max_length=128, null=True, blank=True)
    group_id = models.CharField(max_length=128, null=True, blank=True)
    # Internal: the key of the line this message waits in (its group, or the whole queue
    # on strict_fifo); NULL when unordered. ``blocked`` is true while an earlier live
    # message of the same line exists; only unblocked active rows are claimable.
    order_key = models.CharField(max_length=128, null=True, blank=True)
    # 0/1 rather than a BooleanField: Django renders a boolean condition differently across
    # versions (``NOT "blocked"`` in 5.2, ``"blocked" = 0`` in 6.x on SQLite), and the
    # claim's WHERE must match the partial index's predicate term for term.
    blocked = models.SmallIntegerField(default=0)
    subject = models.CharField(max_length=256, null=True, blank=True)
    properties = models.JSONField(null=True, blank=True)
    correlation_id = models.CharField(max_length=128, null=True, blank=True)
    reply_to = models.CharField(max_length=256, null=True, blank=True)
    content_type = models.CharField(max_length=128, null=True, blank=True)
    dead_letter_reason = models.CharField(max_length=128, null=True, blank=True)
    dead_letter_description = models.TextField(null=True, blank=True)
    dead_lettered_at = models.BigIntegerField(null=True, blank=True)
    # A dead letter forwarded here (``forward_dead_letters_to``): the queue it came from
    # and the deliveries it had before (there and on earlier forwards); both NULL else.
    forwarded_from = models.CharField(max_length=80, null=True, blank=True)
    forwarded_deliveries = models.IntegerField(null=True, blank=True)
    last_error = models.TextField(null=True, blank=True)
    completed_at = models.BigIntegerField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    # Django Tasks: one entry per attempt (worker, start time, error class and traceback),
    # written by the lease holder; never read or written by the claim or settle paths.
    attempts = models.JSONField(null=True, blank=True)
    # Workflows: the batch this message is a child of (``mqlite_batch.id``; NULL for a
    # plain message). Read from the RETURNING list of every terminal statement, so a
    # plain message's settlement runs no extra statement.
    batch_id = models.BigIntegerField(null=True, blank=True)
    # ``send(..., unique_key=...)``: at most one live message of a queue holds a key
    # (the partial unique index below); a completed or dead-lettered one frees it.
    unique_key = models.CharField(max_length=200, null=True, blank=True)
    # ``send(..., unique_key=..., unique_while="pending")``: at most one message of a
    # queue that has never been claimed holds a key (the second partial unique index
    # below); the first claim frees it (``engine/unique.py``).
    pending_key = models.CharField(max_length=200, null=True, blank=True)
    # Snoozes asked of this message (``engine.settle.snooze_many``); the first
    # ``max_snoozes`` of its queue gave their delivery back. A database default, because
    # the engine inserts messages with raw SQL.
    snooze_count = models.IntegerField(default=0, db_default=0)
    # Task control (``engine.running``): when a cancel of this message was requested
    # while it ran (epoch ms; the lease renewal returns it to the worker), the progress
    # its handler last reported, and its last checkpoint (JSON, kept across
    # deliveries). Written by the lease holder's fenced renewal and completion only.
    cancel_requested_at = models.BigIntegerField(null=True, blank=True)
    progress = models.JSONField(null=True, blank=True)
    checkpoint = models.JSONField(null=True, blank=True)
    # Workflows: how many of the nodes this ``waiting`` message depends on
    # (``mqlite_dependency``) have not finished yet; it becomes claimable at 0.
    waiting_on = models.IntegerField(default=0, db_default=0)

    class Meta:
        db_table = "mqlite_message"
        constraints = [
            # The send's ON CONFLICT target: engine/send.py repeats this predicate.
            models.UniqueConstraint(
                fields=["queue", "unique_key"],
                name="mqlite_msg_unique",
                condition=Q(unique_key__isnull=False, state__in=LIVE),
            ),
            # The same for pending keys: waiting and never claimed (a snooze that gave
            # its delivery back counts itself). engine/unique.py repeats this predicate.
            models.UniqueConstraint(
                fields=["queue", "pending_key"],
                name="mqlite_msg_pending",
                condition=Q(
                    pending_key__isnull=False,
                    state__in=["active", "scheduled"],
                    delivery_count=0,
                    snooze_count=0,
                ),
            ),
        ]
        indexes = [
            # The claim: seek the first claimable row in (priority desc, seq) order.
            models.Index(
                fields=["queue", "-priority", "seq"],
                name="mqlite_msg_claim",
                condition=Q(state="active", blocked=0),
            ),
            # Ordered lines: is there an earlier live message of this group? who is next?
            models.Index(
                fields=["queue", "order_key", "blocked", "seq"],
                name="mqlite_msg_line",
                condition=Q(order_key__isnull=False, state__in=LIVE),
            ),
            # Stats, peek by state, queue deletion.
            models.Index(fields=["queue", "state", "seq"], name="mqlite_msg_state"),
            # Reaper sweeps, one partial index each.
            models.Index(
                fields=["locked_until"], name="mqlite_msg_lease", condition=Q(state="locked")
            ),
            models.Index(
                fields=["locked_by"],
                name="mqlite_msg_owner",
                condition=Q(state="locked", locked_by__isnull=False),
            ),
            models.Index(
                fields=["visible_at"], name="mqlite_msg_due", condition=Q(state="scheduled")
            ),
            models.Index(
                fields=["expires_at"],
                name="mqlite_msg_ttl",
                condition=Q(expires_at__isnull=False, state__in=LIVE),
            ),
            models.Index(
                fields=["queue", "completed_at"],
                name="mqlite_msg_results",
                condition=Q(state="completed"),
            ),
            # A batch's children (progress by state, kept results, redrive of failures).
            models.Index(
                fields=["batch_id", "state"],
                name="mqlite_msg_batch",
                condition=Q(batch_id__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.seq}"


class DeadLetter(Message):
    """The dead-lettered messages, as their own admin page."""

    class Meta:
        proxy = True
        verbose_name = "dead letter"
        permissions = [
            ("redrive_message", "Can redrive dead-lettered messages"),
            ("purge_message", "Can purge dead-lettered messages"),
            ("cancel_message", "Can cancel messages, running ones included"),
        ]


class Batch(models.Model):
    """A workflow batch (``mq.batch``): its children's terminal outcomes, counted in the
    transaction that settles each child (``engine/tally.py``), and its callbacks,
    enqueued exactly once by the settlement that finishes it. Lives on the database of
    its children; written only by the engine."""

    id = models.BigAutoField(primary_key=True)
    created_at = models.BigIntegerField()
    finished_at = models.BigIntegerField(null=True, blank=True)
    # 0/1 for the same reason as Message.blocked: the engine's SQL compares it to 1.
    sealed = models.SmallIntegerField(default=0)
    total = models.IntegerField(default=0)
    completed = models.IntegerField(default=0)
    failed = models.IntegerField(default=0)
    cancelled = models.IntegerField(default=0)
    # Bit mask of the callbacks already enqueued (1 on_complete, 2 on_success,
    # 4 on_failure): each is enqueued at most once in the batch's life.
    fired = models.SmallIntegerField(default=0)
    callbacks = models.JSONField(null=True, blank=True)
    # {"on_complete": seq, ...} of the callbacks enqueued, and the error of one that
    # could not be (its queue was deleted meanwhile, say).
    callback_seqs = models.JSONField(null=True, blank=True)
    callback_error = models.TextField(null=True, blank=True)
    # A message's own node (a chain step, or a message others depend on): the message
    # it follows (its only child); NULL for a batch made with ``mq.batch``.
    seq = models.BigIntegerField(null=True, blank=True)
    # A chain step's node: the chain's remaining steps (admitted messages, as a batch's
    # callbacks are stored), the first of them enqueued when the step completes.
    steps = models.JSONField(null=True, blank=True)
    # 1 once a message depends on this node (``mqlite_dependency``): its end releases
    # or fails them.
    awaited = models.SmallIntegerField(default=0, db_default=0)
    # The node of a child of an ``mq.batch`` that something depends on: the batch its
    # end is counted in when the node finishes (``engine/tally.py``).
    parent_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        db_table = "mqlite_batch"
        verbose_name_plural = "batches"
        indexes = [
            models.Index(
                fields=["parent_id"],
                name="mqlite_batch_parent",
                condition=Q(parent_id__isnull=False),
            ),
            # Finished batch retention (``engine/maintenance.py``) seeks the oldest.
            models.Index(
                fields=["finished_at"],
                name="mqlite_batch_finished",
                condition=Q(finished_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"batch {self.id}"


class Dependency(models.Model):
    """A ``waiting`` message (``seq``) waits for a node (``batch_id``: a batch, or a
    message's own node) to finish. Written when the message is sent, deleted by the
    settlement that finishes the node, which releases or dead-letters the message in
    the same transaction (``engine/dependencies.py``)."""

    batch_id = models.BigIntegerField()
    seq = models.BigIntegerField()

    class Meta:
        db_table = "mqlite_dependency"
        constraints = [
            models.UniqueConstraint(fields=["batch_id", "seq"], name="mqlite_dependency_key")
        ]
        indexes = [models.Index(fields=["seq"], name="mqlite_dependency_seq")]

    def __str__(self) -> str:
        return f"{self.seq} after {self.batch_id}"


class SettlementReceipt(models.Model):
    seq = models.BigIntegerField()
    lock_token = models.CharField(max_length=32)
    verb = models.CharField(max_length=16)
    args = models.TextField(default="")
    expires_at = models.BigIntegerField()

    class Meta:
        db_table = "mqlite_receipt"
        indexes = [
            models.Index(fields=["seq", "lock_token"], name="mqlite_receipt_key"),
            models.Index(fields=["expires_at"], name="mqlite_receipt_exp"),
        ]

    def __str__(self) -> str:
        return f"{self.verb} {self.seq}"


class ReceiveAttempt(models.Model):
    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, db_index=False, related_name="+")
    attempt_id = models.CharField(max_length=128)
    items = models.TextField()
    expires_at = models.BigIntegerField()

    class Meta:
        db_table = "mqlite_attempt"
        constraints = [
            models.UniqueConstraint(fields=["queue", "attempt_id"], name="mqlite_attempt_key")
        ]
        indexes = [models.Index(fields=["expires_at"], name="mqlite_attempt_exp")]

    def __str__(self) -> str:
        return self.attempt_id


class DedupRecord(models.Model):
    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, db_index=False, related_name="+")
    dedup_key = models.CharField(max_length=200)
    body_hash = models.CharField(max_length=64)
    seq = models.BigIntegerField()
    expires_at = models.BigIntegerField()

    class Meta:
        db_table = "mqlite_dedup"
        constraints = [
            models.UniqueConstraint(fields=["queue", "dedup_key"], name="mqlite_dedup_key")
        ]
        indexes = [models.Index(fields=["expires_at"], name="mqlite_dedup_exp")]

    def __str__(self) -> str:
        return self.dedup_key


class ProcessedKey(models.Model):
    key = models.CharField(max_length=255, unique=True)
    processed_at = models.BigIntegerField()

    class Meta:
        db_table = "mqlite_processed_key"
        # mq.prune_once() deletes by age.
        indexes = [models.Index(fields=["processed_at"], name="mqlite_pkey_processed")]

    def __str__(self) -> str:
        return self.key


class QueueTotals(models.Model):
    """Lifetime counters, sharded per queue so concurrent writers rarely share a row."""

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, db_index=False, related_name="+")
    shard = models.SmallIntegerField(default=0)
    enqueued = models.BigIntegerField(default=0)
    delivered = models.BigIntegerField(default=0)
    completed = models.BigIntegerField(default=0)
    abandoned = models.BigIntegerField(default=0)
    reclaimed = models.BigIntegerField(default=0)
    retried = models.BigIntegerField(default=0)
    exhausted = models.BigIntegerField(default=0)
    rejected = models.BigIntegerField(default=0)
    expired = models.BigIntegerField(default=0)
    dead_lettered = models.BigIntegerField(default=0)
    redriven = models.BigIntegerField(default=0)
    purged = models.BigIntegerField(default=0)

    class Meta:
        db_table = "mqlite_totals"
        constraints = [
            models.UniqueConstraint(fields=["queue", "shard"], name="mqlite_totals_shard")
        ]

    def __str__(self) -> str:
        return f"{self.queue_id}/{self.shard}"

    @staticmethod
    def flush_pending(using: str) -> None:
        """Inside a transaction that sent messages, add the counts its later sends left
        for commit (PostgreSQL, migration 0008) before reading these rows, so the
        reading includes the transaction's own sends. ``mq.stats`` does this itself."""
        from .engine.send_one import flush_deferred_counts

        flush_deferred_counts(using)


class QueueHistory(models.Model):
    """One sample of a queue per minute, written by the reaper, never by send, claim or
    settle: the lifetime totals and the depth per state at the end of ``minute`` (epoch
    milliseconds of the minute's start). ``mq.history()`` turns consecutive samples into
    per-minute counts; see ``engine/history.py``."""

    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, db_index=False, related_name="+")
    minute = models.BigIntegerField()
    sampled_at = models.BigIntegerField()
    enqueued = models.BigIntegerField(default=0)
    delivered = models.BigIntegerField(default=0)
    completed = models.BigIntegerField(default=0)
    abandoned = models.BigIntegerField(default=0)
    reclaimed = models.BigIntegerField(default=0)
    retried = models.BigIntegerField(default=0)
    exhausted = models.BigIntegerField(default=0)
    rejected = models.BigIntegerField(default=0)
    expired = models.BigIntegerField(default=0)
    dead_lettered = models.BigIntegerField(default=0)
    redriven = models.BigIntegerField(default=0)
    purged = models.BigIntegerField(default=0)
    depth_active = models.BigIntegerField(default=0)
    depth_locked = models.BigIntegerField(default=0)
    depth_deferred = models.BigIntegerField(default=0)
    depth_scheduled = models.BigIntegerField(default=0)
    depth_completed = models.BigIntegerField(default=0)
    depth_dead_lettered = models.BigIntegerField(default=0)
    depth_waiting = models.BigIntegerField(default=0, db_default=0)

    class Meta:
        db_table = "mqlite_history"
        verbose_name_plural = "queue histories"
        constraints = [
            # One sample per queue and minute, however many reapers race to write it.
            models.UniqueConstraint(fields=["queue", "minute"], name="mqlite_history_key")
        ]
        # Retention trims by age across all queues.
        indexes = [models.Index(fields=["minute"], name="mqlite_history_minute")]

    def __str__(self) -> str:
        return f"{self.queue_id}@{self.minute}"


def _stale_before_ms(now: int | None) -> int:
    return liveness.stale_before_ms(now_ms() if now is None else now)


class WorkerQuerySet(models.QuerySet["Worker"]):
    """The worker-liveness rule of ``engine/liveness.py``, as querysets (``now``: epoch ms,
    default the current time)."""

    def alive(self, now: int | None = None) -> WorkerQuerySet:
        """Workers not stopped whose heartbeat is newer than the stale boundary."""
        return self.filter(stopped_at=None, last_seen__gt=_stale_before_ms(now))

    def stale(self, now: int | None = None) -> WorkerQuerySet:
        """Workers not stopped that have been silent since the stale boundary."""
        return self.filter(stopped_at=None, last_seen__lte=_stale_before_ms(now))


class Worker(models.Model):
    host = models.CharField(max_length=255)
    pid = models.IntegerField()
    queues = models.JSONField(default=list)
    started_at = models.BigIntegerField()
    last_seen = models.BigIntegerField()
    in_flight = models.IntegerField(default=0)
    stopped_at = models.BigIntegerField(null=True, blank=True)
    #: Messages claimed and handler attempts that failed (raised, timed out, rejected)
    #: since the worker started, as of its last heartbeat. Database defaults, so workers
    #: of the previous version keep registering during a rolling upgrade.
    claimed = models.BigIntegerField(default=0, db_default=0)
    failed = models.BigIntegerField(default=0, db_default=0)
    #: Database clock minus this worker's host clock, ms, measured with each heartbeat.
    clock_skew_ms = models.IntegerField(null=True, blank=True)

    objects = WorkerQuerySet.as_manager()

    class Meta:
        db_table = "mqlite_worker"
        indexes = [models.Index(fields=["last_seen"], name="mqlite_worker_seen")]

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}"

    def is_alive(self, now: int | None = None) -> bool:
        """``Worker.objects.alive()``'s rule, for a row already read."""
        return liveness.is_alive(self.stopped_at, self.last_seen, now_ms() if now is None else now)


class PeriodicSchedule(models.Model):
    """The latest occurrence of each ``MQLITE["PERIODIC"]`` schedule that was enqueued.

    Moving ``last_at`` forward is a compare-and-set in the same transaction as the
    enqueue, so each occurrence is enqueued once however many workers tick.
    """

    name = models.CharField(max_length=80, unique=True)
    last_at = models.BigIntegerField()

    class Meta:
        db_table = "mqlite_periodic"

    def __str__(self) -> str:
        return self.name


class Schedule(models.Model):
    """A periodic schedule stored in the database (``engine/schedules.py``, which alone
    writes these rows): what it enqueues, when, and how. Its cursor, the latest
    occurrence enqueued, is its ``PeriodicSchedule`` row of the same name."""

    OVERLAP_CHOICES = [("allow", "allow"), ("skip", "skip while the last run is live")]

    name = models.CharField(max_length=80, unique=True)
    cron = models.CharField(max_length=200)
    timezone = models.CharField(max_length=64)
    #: A Django task's dotted path (with ``args``/``kwargs``), or a ``queue`` and ``body``.
    task = models.CharField(max_length=255, null=True, blank=True)
    args = models.JSONField(default=list, blank=True)
    kwargs = models.JSONField(default=dict, blank=True)
    queue = models.CharField(max_length=80, null=True, blank=True)
    body = models.JSONField(null=True, blank=True)
    paused = models.BooleanField(default=False)
    overlap = models.CharField(max_length=8, choices=OVERLAP_CHOICES, default="allow")
    jitter_s = models.PositiveIntegerField("jitter (seconds)", default=0)
    #: Bumped at every change, pause and resume: a ticker holding an older copy of the
    #: schedule enqueues nothing for it.
    version = models.BigIntegerField(default=1)
    created_at = models.BigIntegerField()
    modified_at = models.BigIntegerField()

    class Meta:
        db_table = "mqlite_schedule"
        ordering = ["name"]
        permissions = [("operate_schedule", "Can pause, resume and run schedules")]

    def __str__(self) -> str:
        return self.name


class SQSQueue(models.Model):
    """What the SQS endpoint keeps about a queue beyond the engine's settings: the SQS
    attributes the engine has no notion of, tags, and recent message move tasks."""

    name = models.CharField(max_length=80, unique=True)
    attributes = models.JSONField(default=dict)
    tags = models.JSONField(default=dict)
    move_tasks = models.JSONField(default=list)
    created_at = models.BigIntegerField()
    modified_at = models.BigIntegerField()

    class Meta:
        db_table = "mqlite_sqs_queue"
        verbose_name = "SQS queue"

    def __str__(self) -> str:
        return self.name


class Topic(models.Model):
    """A name that publishes fan out from (``mq.publish``): each subscription's queue
    gets its own copy of every message its filter matches."""

    name = models.CharField(max_length=80, unique=True)
    created_at = models.BigIntegerField()
    #: A fresh random value at every change of the topic's subscriptions (and of a
    #: subscribed queue's ordering or dedup): a publisher's cached statement runs only
    #: while it still matches (``engine/fanout.py``).
    version = models.BigIntegerField(default=0, db_default=0)

    class Meta:
        db_table = "mqlite_topic"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Subscription(models.Model):
    """A queue's subscription to a topic. ``filter`` is the predicate as given (NULL:
    every message), validated by the engine when the subscription was made; the engine
    compiles it to SQL per database when it publishes (``engine/filters.py``)."""

    topic = models.ForeignKey(Topic, on_delete=models.CASCADE, related_name="subscriptions")
    queue = models.ForeignKey(Queue, on_delete=models.CASCADE, related_name="+")
    filter = models.JSONField(null=True, blank=True)
    created_at = models.BigIntegerField()
    #: A task subscription (``mq.subscribe_task``): the dotted path of the task each
    #: matching publish is enqueued as, on this queue, by the Tasks backend (signed).
    task = models.CharField(max_length=200, null=True, blank=True)

    class Meta:
        db_table = "mqlite_subscription"
        constraints = [
            models.UniqueConstraint(fields=["topic", "queue"], name="mqlite_sub_unique"),
        ]
        indexes = [models.Index(fields=["queue"], name="mqlite_sub_queue")]

    def __str__(self) -> str:
        return f"{self.topic_id} -> {self.queue_id}"


class TopicTotals(models.Model):
    """Lifetime counters of a topic: the row with ``queue_id`` 0 counts publishes,
    each other row the copies its queue received from the topic. Sharded like
    ``QueueTotals`` (on PostgreSQL each session adds to a shard of its own, so
    concurrent publishers do not queue on one row); no foreign keys, so that a
    publish's counting adds no check at commit. Removed with their topic, subscription
    or queue."""

    topic_id = models.BigIntegerField()
    queue_id = models.BigIntegerField()
    shard = models.SmallIntegerField(default=0)
    published = models.BigIntegerField(default=0)
    delivered = models.BigIntegerField(default=0)

    class Meta:
        db_table = "mqlite_topic_totals"
        constraints = [
            models.UniqueConstraint(
                fields=["topic_id", "queue_id", "shard"], name="mqlite_topic_totals_shard"
            ),
        ]
        # No index on queue_id: the table holds a few rows per subscription, and every
        # index is one more page a publish writes at commit.

    def __str__(self) -> str:
        return f"{self.topic_id}/{self.queue_id}"
