"""Prometheus metrics, collected fresh on every scrape without counting every message.

A scrape of a deep queue must stay cheap, so it reads:

- depth per queue and state as a *bounded* count, like the admin's gauges: exact up to
  ``COUNT_CAP`` messages and reported as ``COUNT_CAP + 1`` beyond (``COUNT(*)`` over a
  ``LIMIT``, at most ``COUNT_CAP + 1`` index entries per state);
- the oldest active message's age: one index seek per queue;
- lifetime totals from the counters table (a few rows per queue), not from messages;
- topic counters (publishes per topic, copies per subscription) from theirs;
- one row per worker that has not stopped: alive, busy, claimed, failed, clock skew;
- batches (those made with ``mq.batch``, not a message's own node) by state, their
  children by outcome, callbacks fired and callback errors: one aggregate over the
  batch table, which finished-batch retention (``MQLITE["BATCH_RETENTION"]``) bounds.
  Nothing is written to keep them: they are read from the rows the settlements write.

``mq.stats()`` and ``manage.py mqlite stats`` give exact depths when they are needed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.db.models import Count, F, Q, Sum
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

import django_mqlite as mq

from ..conf import current

#: Depth gauges are exact up to this many messages per state and read COUNT_CAP + 1 above.
COUNT_CAP = 10_000

_TOTAL_HELP = {
    "enqueued": "Messages sent (and redriven in from another queue).",
    "delivered": "Deliveries (claims), redeliveries included.",
    "completed": "Messages completed.",
    "abandoned": "Deliveries given back by the consumer.",
    "reclaimed": "Deliveries whose lease ran out.",
    "retried": "Failed deliveries that were made available again.",
    "exhausted": "Messages dead-lettered at max_delivery_count.",
    "rejected": "Messages dead-lettered explicitly.",
    "expired": "Messages whose time to live ran out.",
    "dead_lettered": "Messages dead-lettered, for any reason.",
    "redriven": "Dead letters moved back to active.",
    "purged": "Messages purged.",
}


class QueueCollector(Collector):
    """Depth per queue and state, oldest active age, lifetime totals, worker gauges."""

    def __init__(
        self,
        using: str | None = None,
        queues: Callable[[Iterable[str]], list[str]] | None = None,
        workers: bool = True,
    ) -> None:
        self.using = using or current().database
        #: Keeps the queue names the caller may see (the API's per-queue permissions).
        self.queues = queues
        #: Whether to show the worker and batch gauges (they span every queue).
        self.show_workers = workers

    def collect(self) -> Iterator[Metric]:
        from ..models import Message, Queue, QueueTotals

        depth = GaugeMetricFamily(
            "mqlite_queue_messages",
            f"Messages in the queue, by state (exact up to {COUNT_CAP}, {COUNT_CAP + 1} above).",
            labels=["queue", "state"],
        )
        age = GaugeMetricFamily(
            "mqlite_queue_oldest_active_age_seconds",
            "Age of the oldest active message (0 when none is waiting).",
            labels=["queue"],
        )
        paused = GaugeMetricFamily(
            "mqlite_queue_paused", "1 while the queue is paused, else 0.", labels=["queue"]
        )
        rate = GaugeMetricFamily(
            "mqlite_queue_rate_limit",
            "Claims per second allowed across all consumers (only queues with a limit).",
            labels=["queue"],
        )
        in_flight = GaugeMetricFamily(
            "mqlite_queue_max_in_flight",
            "Messages that may be locked at once (only queues with a limit).",
            labels=["queue"],
        )
        totals = {
            name: CounterMetricFamily(f"mqlite_messages_{name}", text, labels=["queue"])
            for name, text in _TOTAL_HELP.items()
        }
        queue_rows = sorted(
            Queue.objects.using(self.using).values_list(
                "id", "name", "paused", "rate_limit_milli", "max_in_flight"
            ),
            key=lambda r: r[1],
        )
        if self.queues is not None:
            shown = set(self.queues([row[1] for row in queue_rows]))
            queue_rows = [row for row in queue_rows if row[1] in shown]
        queues = {row[0]: row[1] for row in queue_rows}
        messages = Message.objects.using(self.using)
        now = mq.clock.now_ms()
        for queue_id, name, is_paused, rate_milli, max_locked in queue_rows:
            paused.add_metric([name], 1 if is_paused else 0)
            if rate_milli is not None:
                rate.add_metric([name], rate_milli / 1000)
            if max_locked is not None:
                in_flight.add_metric([name], max_locked)
            for state in mq.State:
                rows = messages.filter(queue_id=queue_id, state=state.value).order_by()
                depth.add_metric([name, state.value], rows.values("pk")[: COUNT_CAP + 1].count())
            oldest = (
                messages.filter(queue_id=queue_id, state=mq.State.ACTIVE.value)
                .order_by("seq")
                .values_list("visible_at", flat=True)
                .first()
            )
            age.add_metric([name], 0.0 if oldest is None else max(0.0, (now - oldest) / 1000))
        QueueTotals.flush_pending(self.using)  # sends of this transaction (a test's, say)
        sums: Any = (
            QueueTotals.objects.using(self.using)
            .values("queue_id")
            .annotate(**{f"sum_{n}": Sum(n) for n in _TOTAL_HELP})
        )
        for row in sums:
            if row["queue_id"] in queues:
                for n, family in totals.items():
                    family.add_metric([queues[row["queue_id"]]], row[f"sum_{n}"] or 0)
        yield depth
        yield age
        yield paused
        yield rate
        yield in_flight
        yield from totals.values()
        yield from self.topics(queues)
        if self.show_workers:
            yield from self.workers(now)
            yield from self.batches()

    def topics(self, queues: dict[int, str]) -> Iterator[Metric]:
        """Publishes per topic and copies per subscription (``mq.topic_totals``): a
        subscription shown when its queue is, a topic when any of its queues is (or
        every queue may be seen)."""
        published = CounterMetricFamily(
            "mqlite_topic_published", "Publishes to the topic.", labels=["topic"]
        )
        delivered = CounterMetricFamily(
            "mqlite_topic_delivered",
            "Copies the topic put in the subscribed queue.",
            labels=["topic", "queue"],
        )
        shown = set(queues.values())
        for topic, counts in sorted(mq.topic_totals(using=self.using).items()):
            subs = {q: n for q, n in counts["delivered"].items() if q in shown}
            if self.queues is None or subs:
                published.add_metric([topic], counts["published"])
            for queue, n in sorted(subs.items()):
                delivered.add_metric([topic, queue], n)
        yield published
        yield delivered

    def workers(self, now: int) -> Iterator[Metric]:
        """Gauges of every worker that has not stopped (stale ones read alive 0)."""
        from ..models import Worker

        labels = ["worker", "host", "pid"]
        alive = GaugeMetricFamily("mqlite_worker_alive", "1 while heartbeating.", labels=labels)
        busy = GaugeMetricFamily(
            "mqlite_worker_busy", "Messages the worker holds (running or waiting).", labels=labels
        )
        claimed = CounterMetricFamily(
            "mqlite_worker_claimed", "Messages claimed since the worker started.", labels=labels
        )
        failed = CounterMetricFamily(
            "mqlite_worker_failed", "Handler attempts that failed since start.", labels=labels
        )
        skew = GaugeMetricFamily(
            "mqlite_worker_clock_skew_seconds",
            "Database clock minus the worker host's clock.",
            labels=labels,
        )
        rows: Any = Worker.objects.using(self.using).filter(stopped_at=None).order_by("pk")
        for w in rows:
            key = [str(w.pk), w.host, str(w.pid)]
            alive.add_metric(key, 1.0 if w.is_alive(now) else 0.0)
            busy.add_metric(key, w.in_flight)
            claimed.add_metric(key, w.claimed)
            failed.add_metric(key, w.failed)
            if w.clock_skew_ms is not None:
                skew.add_metric(key, w.clock_skew_ms / 1000)
        yield from (alive, busy, claimed, failed, skew)

    def batches(self) -> Iterator[Metric]:
        """Batches made with ``mq.batch`` still kept (running, or finished and not yet
        removed by retention): how many by state, their children by outcome, the
        callbacks they fired, and those that recorded a callback error."""
        from ..models import Batch

        batches = GaugeMetricFamily("mqlite_batches", "Batches kept, by state.", labels=["state"])
        children = GaugeMetricFamily(
            "mqlite_batch_children",
            "Children of the batches kept, by outcome (pending: not settled yet).",
            labels=["batch_state", "outcome"],
        )
        fired = GaugeMetricFamily(
            "mqlite_batch_callbacks_fired",
            "Callbacks enqueued by the batches kept, by callback.",
            labels=["callback"],
        )
        errors = GaugeMetricFamily(
            "mqlite_batch_callback_errors",
            "Batches kept with a callback that could not be enqueued.",
        )
        settled = F("completed") + F("failed") + F("cancelled")
        sums = {
            "n": Count("id"),
            "total": Sum("total"),
            "completed": Sum("completed"),
            "failed": Sum("failed"),
            "cancelled": Sum("cancelled"),
            "errors": Count("id", filter=Q(callback_error__isnull=False)),
            **{name: Sum(F("fired").bitand(bit)) for name, bit in _CALLBACK_BITS.items()},
        }
        rows = Batch.objects.using(self.using).filter(seq__isnull=True)
        by_state = {
            "open": rows.filter(sealed=0).aggregate(**sums),
            "running": rows.filter(sealed=1, total__gt=settled).aggregate(**sums),
            "finished": rows.filter(sealed=1, total=settled).aggregate(**sums),
        }
        n_errors = 0
        n_fired = dict.fromkeys(_CALLBACK_BITS, 0)
        for state, agg in by_state.items():
            batches.add_metric([state], agg["n"])
            done = {k: agg[k] or 0 for k in ("completed", "failed", "cancelled")}
            children.add_metric([state, "pending"], (agg["total"] or 0) - sum(done.values()))
            for outcome, n in done.items():
                children.add_metric([state, outcome], n)
            n_errors += agg["errors"]
            for name, bit in _CALLBACK_BITS.items():
                n_fired[name] += (agg[name] or 0) // bit
        for name, n in n_fired.items():
            fired.add_metric([name], n)
        errors.add_metric([], n_errors)
        yield from (batches, children, fired, errors)


#: The callbacks and their bit in a batch row's ``fired`` (``engine/tally.py``).
_CALLBACK_BITS = {"on_complete": 1, "on_success": 2, "on_failure": 4}


def render(
    using: str | None = None,
    queues: Callable[[Iterable[str]], list[str]] | None = None,
    workers: bool = True,
) -> bytes:
    """The Prometheus text exposition of every queue (or of those ``queues`` keeps) and,
    with ``workers``, of every live worker."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector(using, queues, workers))
    return generate_latest(registry)
