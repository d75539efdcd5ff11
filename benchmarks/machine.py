"""The machine a run happened on: CPU, cores, memory, load, versions."""

from __future__ import annotations

import os
import platform
import sqlite3
from typing import Any


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    return None


def _distribution(name: str) -> str | None:
    """The installed version of a distribution, or None when it is not installed."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def describe() -> dict[str, Any]:
    import django

    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "ram_gib": _ram_gib(),
        "load_before": os.getloadavg(),
        "python": platform.python_version(),
        "django": django.get_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
        # The [otel] extra changes the send and handler paths (docs/observability.md):
        # a run says whether it had it, so runs with and without it are told apart.
        "opentelemetry_api": _distribution("opentelemetry-api"),
        "opentelemetry_sdk": _distribution("opentelemetry-sdk"),
    }
