"""Prometheus metrics: the numbers of ``mq.stats()``, collected fresh on every scrape."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

import django_mqlite as mq

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
    """Depth per queue and state, oldest active age, and lifetime totals per queue."""

    def __init__(
        self,
        using: str | None = None,
        queues: Callable[[Iterable[str]], list[str]] | None = None,
    ) -> None:
        self.using = using
        self.queues = queues

    def collect(self) -> Iterator[Metric]:
        stats: dict[str, mq.QueueStats] = mq.stats(using=self.using)
        if self.queues is not None:
            shown = set(self.queues(stats))
            stats = {name: st for name, st in stats.items() if name in shown}
        depth = GaugeMetricFamily(
            "mqlite_queue_messages", "Messages in the queue, by state.", labels=["queue", "state"]
        )
        age = GaugeMetricFamily(
            "mqlite_queue_oldest_active_age_seconds",
            "Age of the oldest active message (0 when none is waiting).",
            labels=["queue"],
        )
        totals = {
            name: CounterMetricFamily(f"mqlite_messages_{name}", text, labels=["queue"])
            for name, text in _TOTAL_HELP.items()
        }
        for name, st in stats.items():
            for state, count in st.counts.items():
                depth.add_metric([name, state], count)
            age.add_metric([name], st.oldest_active_age or 0.0)
            for total, value in st.totals.items():
                if total in totals:
                    totals[total].add_metric([name], value)
        yield depth
        yield age
        yield from totals.values()


def render(
    using: str | None = None, queues: Callable[[Iterable[str]], list[str]] | None = None
) -> bytes:
    """The Prometheus text exposition of every queue (or of those ``queues`` keeps)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(QueueCollector(using, queues))
    return generate_latest(registry)
