"""Worker memory over a long drain: one ``runworker --burst`` process works through a
large backlog while this process samples its resident set from ``/proc/<pid>/status``."""

from __future__ import annotations

import time
from typing import Any

from ..backlog import fill_direct
from ..harness import Context, pending, reset, wait_all
from .drain import runworker_args

INTERVAL_S = 0.5


def rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def worker_rss(ctx: Context) -> dict[str, Any]:
    n = ctx.size("rss")
    reset()
    fill_direct("bench", n)
    proc = ctx.manage(*runworker_args())
    samples: list[tuple[float, int, int]] = []  # (seconds, left, rss KiB)
    start = time.perf_counter()
    next_left_check = 0.0
    left = n
    while proc.poll() is None:
        kib = rss_kib(proc.pid)
        elapsed = time.perf_counter() - start
        if elapsed >= next_left_check:
            left = pending()
            next_left_check = elapsed + 2.0
        if kib is not None:
            samples.append((elapsed, left, kib))
        time.sleep(INTERVAL_S)
    wait_all([proc], 10)
    seconds = time.perf_counter() - start
    if pending():
        raise RuntimeError("the worker exited with messages left")
    # Growth is judged after warm-up (the first 10% of the drain: imports, caches, the
    # pool's threads) up to the last sample.
    step = max(1, len(samples) // 200)
    warm = [kib for t, _, kib in samples if t >= seconds * 0.1] or [s[2] for s in samples]
    return {
        "mqlite.worker_rss": {
            "unit": "MiB",
            "n": n,
            "min": min(warm) / 1024,
            "median": sorted(warm)[len(warm) // 2] / 1024,
            "max": max(warm) / 1024,
            "first": warm[0] / 1024,
            "last": warm[-1] / 1024,
            "growth": (warm[-1] - warm[0]) / 1024,
            "msg_per_s": n / seconds,
            "timeline": [(round(t, 1), left, kib) for t, left, kib in samples[::step]],
        }
    }
