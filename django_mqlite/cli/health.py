"""Is one particular worker alive? ``manage.py mqlite health --worker self``.

A worker is alive by the rule of ``engine/liveness.py``: its row says it has not stopped
and its last heartbeat is more recent than ``WORKER_STALE_AFTER``. The heartbeat is
written by a thread of the worker process, so a killed, OOM-killed or frozen process
stops being alive within that time.
"""

from __future__ import annotations

import socket
from typing import Any

from django.core.management.base import CommandError

from ..conf import current
from ..engine.clock import now_ms


def select(spec: str, using: str) -> Any:
    """The worker rows ``spec`` names: ``self`` (this host's workers), a worker id, or
    ``HOST:PID``. Raises ``CommandError`` for anything else."""
    from ..models import Worker

    rows = Worker.objects.using(using)
    if spec == "self":
        return rows.filter(host=socket.gethostname()[:255])
    if spec.isdigit():
        return rows.filter(pk=int(spec))
    host, sep, pid = spec.rpartition(":")
    if sep and host and pid.isdigit():
        return rows.filter(host=host, pid=int(pid))
    raise CommandError(f"--worker takes self, a worker id or HOST:PID, not {spec!r}")


def report(spec: str, using: str) -> tuple[dict[str, Any], list[str]]:
    """The named workers' state for a probe, and what is wrong (empty when one is alive)."""
    now = now_ms()
    rows = list(select(spec, using).order_by("-started_at")[:16])
    alive = [w for w in rows if w.is_alive(now)]
    info = {
        "worker": spec,
        "alive": len(alive),
        "workers": [
            {
                "id": w.pk,
                "host": w.host,
                "pid": w.pid,
                "alive": w in alive,
                "last_seen_age": round((now - w.last_seen) / 1000, 3),
                "in_flight": w.in_flight,
                "claimed": w.claimed,
                "failed": w.failed,
                "clock_skew_ms": w.clock_skew_ms,
            }
            for w in rows
        ],
    }
    if not rows:
        return info, [f"no worker matches {spec!r} (host {socket.gethostname()!r})"]
    if not alive:
        return info, [
            f"worker {spec!r} is not alive (no heartbeat for {current().worker_stale_after_s:g}s)"
        ]
    return info, []
