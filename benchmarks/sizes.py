"""The sizes of a run: per mode (``--quick`` or not) and database."""

from __future__ import annotations

import json
import os
from typing import Any

QUICK = {
    "single": 2_000,
    "batch": 20_000,
    "drain": 10_000,
    "tasks_drain": 1_000,
    "end_to_end": 10_000,
    "backlogs": [1_000, 10_000, 100_000],
    "tasks_backlogs": [1_000, 10_000],
    "blocked": 20_000,
    "rss": 50_000,
    "writes": 10_000,
    "defaults": 1_000,
    "defaults_single": 300,
    "brokers": 1_000,
    "pickup": 100,
    "idle_s": 10,
}
FULL = {
    **QUICK,
    "single": 10_000,
    "batch": 100_000,
    "drain": 50_000,
    "tasks_drain": 3_000,
    "end_to_end": 30_000,
    "backlogs": [1_000, 100_000, 1_000_000],
    "tasks_backlogs": [1_000, 100_000],
    "rss": 1_000_000,
    "writes": 20_000,
    "defaults": 3_000,
    "defaults_single": 1_000,
    "brokers": 30_000,
    "pickup": 200,
}

# PostgreSQL on a shared 2-core box is bound by commit fsyncs (IO:WALSync): the peer
# manages tens of tasks per second there, and a 1M drain would take many minutes.
POSTGRES = {"tasks_drain": 500, "rss": 200_000}


def size_overrides() -> dict[str, Any]:
    """BENCH_SIZES (JSON) overrides sizes: the smoke test runs everything tiny. A file
    written with overrides records them (``size_overrides``)."""
    return dict(json.loads(os.environ.get("BENCH_SIZES") or "{}"))


def sizes_for(db: str, quick: bool, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The sizes of a run on ``db``; ``overrides`` default to ``size_overrides()``."""
    sizes = dict(QUICK if quick else FULL)
    if db == "postgres" and not quick:
        sizes.update(POSTGRES)
    sizes.update(size_overrides() if overrides is None else overrides)
    return sizes
