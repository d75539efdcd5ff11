"""The scenarios, by name. Each takes a ``Context`` and returns ``{result name: summary}``;
names start with the system measured (``mqlite.``, ``tasks_db.``, ``sqlite3.``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..harness import Context
from . import brokers, defaults, drain, floor, latency, memory, produce, tasks_floor, writes

Scenario = Callable[[Context], dict[str, Any]]

SCENARIOS: dict[str, Scenario] = {
    "defaults": defaults.defaults,
    "brokers": brokers.brokers,
    "produce_single": produce.single,
    "produce_batch": produce.batch,
    "drain": drain.consumer_drain,
    "tasks_drain": drain.tasks_drain,
    "end_to_end": drain.end_to_end,
    "claim_latency": latency.claim_latency,
    "blocked_group": latency.blocked_group,
    "worker_rss": memory.worker_rss,
    "write_amplification": writes.write_amplification,
    "raw_floor": floor.raw_floor,
    "tasks_floor": tasks_floor.tasks_floor,
}
