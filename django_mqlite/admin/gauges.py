"""Per-queue gauges for the changelist: how many messages in each state, how old the
oldest waiting one is.

Each count is capped (``COUNT(*)`` over ``LIMIT cap + 1`` on the ``(queue, state, seq)``
index), so a queue with a million messages costs the page ``cap`` index entries per
state, not a million. The queue's own page shows the exact numbers from ``mq.stats()``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.clock import now_ms
from ..engine.types import State
from ..models import Message
from .pagination import EXACT_COUNT_CAP, capped_count


@dataclass(frozen=True)
class Gauges:
    counts: dict[str, int]
    oldest_active_age: float | None

    def shown(self, state: str) -> str:
        n = self.counts[state]
        return f"{EXACT_COUNT_CAP:,}+" if n > EXACT_COUNT_CAP else f"{n:,}"


def gauges(queue_id: int, using: str) -> Gauges:
    rows = Message.objects.using(using).filter(queue_id=queue_id)
    counts = {s.value: capped_count(rows.filter(state=s.value)) for s in State}
    oldest = (
        rows.filter(state=State.ACTIVE.value)
        .order_by("seq")
        .values_list("visible_at", flat=True)
        .first()
    )
    age = None if oldest is None else max(0.0, (now_ms() - oldest) / 1000)
    return Gauges(counts=counts, oldest_active_age=age)
