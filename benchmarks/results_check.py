"""What a results file must be to be written, reported or cited: the harness's own output.

``problems(data)`` lists every way ``data`` is not what ``python -m benchmarks run``
produces, and ``check(data)`` raises ``ResultsError`` with them:

- the file's ``repeat`` is a positive integer and its ``sizes`` are the harness's sizes
  for its mode (``quick`` or not) and database (``sizes_for``), plus the overrides the
  file declares in ``size_overrides`` (``BENCH_SIZES``, which the smoke test uses);
- every measured entry holds ``repeat`` samples (the steady-state drain rate, which a
  repeat too fast to observe leaves out, between 1 and ``repeat``), and its ``min``,
  ``median`` and ``max`` are the min, median and max of those samples, to the samples'
  rounding (4 decimals);
- its ``n`` (for claim latencies, its ``backlog``) is the size the scenario uses for that
  result on that database (``EXPECTED_N``: a result with no rule there is refused, so a
  new scenario says what it measures);
- it has no field the harness does not write (a ratio, in particular: ratios are
  computed from the medians when a report renders them, never stored).

``python -m benchmarks run`` checks a file before writing it and ``python -m benchmarks
report`` refuses one that fails; ``tests/benchmarks/test_bench_smoke.py`` checks every
committed file the docs cite.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from typing import Any

Sizes = dict[str, Any]

# The systems of the brokers scenario (benchmarks/brokers/systems.py).
_BROKER_SYSTEMS = (
    "(mqlite|celery_redis|celery_redis_results|celery_amqp|dramatiq_redis|dramatiq_amqp"
    "|huey|rq|procrastinate|tasks_db|ox)"
)

# Result name (without the system prefix where every system shares it) -> its n.
_N: list[tuple[str, Callable[[Sizes], int]]] = [
    (r"mqlite\.send_single", lambda s: s["defaults_single"]),
    (r"(mqlite|tasks_db|ox)\.enqueue_txn", lambda s: s["defaults"]),
    (r"(mqlite|tasks_db|ox)\.enqueue_single", lambda s: s["defaults_single"]),
    (r"(mqlite|tasks_db|ox)\.defaults_drain(_steady)?", lambda s: s["defaults"]),
    (r"(mqlite|tasks_db)\.produce_single", lambda s: s["single"]),
    (r"mqlite\.produce_batch_(64|256)", lambda s: s["batch"]),
    (r"tasks_db\.produce_batch_256", lambda s: max(256, s["batch"] // 10)),
    (r"mqlite\.drain_(1|2)proc(_async_commit)?", lambda s: s["drain"]),
    (r"tasks_db\.drain_(1|2)proc", lambda s: s["tasks_drain"]),
    (r"mqlite\.tasks_drain_1proc", lambda s: s["drain"]),
    (r"mqlite\.end_to_end", lambda s: s["end_to_end"]),
    (r"tasks_db\.end_to_end", lambda s: s["tasks_drain"]),
    (r"mqlite\.worker_rss", lambda s: s["rss"]),
    (r"mqlite\.bytes_per_msg_batch1", lambda s: s["writes"] // 10),
    (r"mqlite\.bytes_per_msg_batch64", lambda s: s["writes"]),
    (r"tasks_db\.bytes_per_task(_batch1)?", lambda s: min(s["writes"] // 10, s["tasks_drain"])),
    (r"tasks_db\.bytes_per_task_batch64", lambda s: min(s["writes"], s["tasks_drain"])),
    (r"(sqlite3|mqlite)\.floor_produce_single", lambda s: s["single"]),
    (r"(sqlite3|mqlite)\.floor_(produce_batch_256|drain_batch_64)", lambda s: s["batch"]),
    (rf"{_BROKER_SYSTEMS}\.brokers_drain(_steady)?", lambda s: s["brokers"]),
    (rf"{_BROKER_SYSTEMS}\.pickup", lambda s: s["pickup"]),
    (r"mqlite\.idle_cost", lambda s: s["idle_s"]),  # n: the seconds idled
    (r"mqlite\.trickle_cost", lambda s: s["pickup"] + 1),  # the pickup's tasks, the first's too
    (r"django\.(tasks_floor|record_only)", lambda s: s["brokers"]),
]
EXPECTED_N = [(re.compile(pattern + "$"), rule) for pattern, rule in _N]

# Claim latencies carry the backlog they were measured at, not an n.
_BACKLOG = re.compile(r"(mqlite|tasks_db)\.claim_(\d+)$")

FIELDS = {
    "unit", "min", "median", "max", "samples", "n", "load", "cpu_us_per_msg", "note", "body",
    "steady_median", "backlog", "p99", "first", "last", "growth", "msg_per_s", "timeline",
    "p50", "p95", "every_ms", "slowest", "fresh_ms", "core_pct", "cpu_us_per_task",
}  # fmt: skip

# Sizes added after results files were committed: a file may lack them.
ADDED_LATER = {"brokers", "pickup", "idle_s"}

# Samples are stored rounded to 4 decimals; min/median/max are not.
TOLERANCE = 1e-4


class ResultsError(ValueError):
    """A results file that is not what the harness produces."""


def check(data: dict[str, Any]) -> None:
    found = problems(data)
    if found:
        raise ResultsError("; ".join(found))


def expected_sizes(db: str, quick: bool, overrides: dict[str, Any] | None = None) -> Sizes:
    from .sizes import sizes_for

    return {**sizes_for(db, quick, overrides={}), **(overrides or {})}


def problems(data: dict[str, Any]) -> list[str]:
    out: list[str] = []
    repeat = data.get("repeat")
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        return [f"repeat is {repeat!r}, not a positive integer"]
    quick = data.get("quick")
    if not isinstance(quick, bool):
        return [f"quick is {quick!r}, not true or false"]
    results = data.get("results") or {}
    if not results:
        return ["no results"]
    sizes = data.get("sizes") or {}
    for db in results:
        want = expected_sizes(db, quick, data.get("size_overrides"))
        # A file written before a size existed lacks it (and so any result using it).
        have = sizes.get(db) or {}
        want = {k: v for k, v in want.items() if k in have or k not in ADDED_LATER}
        if have != want:
            out.append(f"{db}: sizes {sizes.get(db)} are not the harness's {want}")
            continue
        for entries in results[db].values():
            if not isinstance(entries, dict):
                continue  # "engine": the path the child imported
            for key, entry in entries.items():
                out += [f"{db} {key}: {p}" for p in _entry(key, entry, want, repeat)]
    return out


def _entry(key: str, entry: dict[str, Any], sizes: Sizes, repeat: int) -> list[str]:
    if "skipped" in entry or "error" in entry:
        return []
    out = [f"field {f!r} is not one the harness writes" for f in sorted(set(entry) - FIELDS)]
    backlog = _BACKLOG.match(key)
    if backlog:
        want = int(backlog.group(2))
        listed = sizes["tasks_backlogs" if key.startswith("tasks_db.") else "backlogs"]
        if entry.get("backlog") != want or want not in listed:
            out.append(f"backlog {entry.get('backlog')} is not {want} of {listed}")
    elif key == "mqlite.claim_behind_blocked":
        if entry.get("backlog") != sizes["blocked"]:
            out.append(f"backlog {entry.get('backlog')} is not {sizes['blocked']}")
    else:
        rule = next((r for p, r in EXPECTED_N if p.match(key)), None)
        if rule is None:
            out.append("no rule for its n (benchmarks/results_check.py EXPECTED_N)")
        else:
            try:
                expected = rule(sizes)
            except KeyError as missing:
                out.append(f"the file's sizes have no {missing}")
            else:
                if entry.get("n") != expected:
                    out.append(f"n is {entry.get('n')}, the harness uses {expected}")
    if key == "mqlite.worker_rss":
        return out  # its min/median/max are over the sampled timeline, not repeats
    return out + _samples(key, entry, repeat)


def _samples(key: str, entry: dict[str, Any], repeat: int) -> list[str]:
    samples = entry.get("samples")
    if not isinstance(samples, list) or not samples:
        return ["no samples"]
    out = []
    fewer_ok = key.endswith((".defaults_drain_steady", ".brokers_drain_steady"))
    if len(samples) != repeat and not (fewer_ok and 1 <= len(samples) <= repeat):
        out.append(f"{len(samples)} samples, the file's repeat is {repeat}")
    for name, value in (
        ("min", min(samples)),
        ("median", statistics.median(samples)),
        ("max", max(samples)),
    ):
        stored = entry.get(name)
        if not isinstance(stored, int | float) or abs(stored - value) > TOLERANCE:
            out.append(f"{name} is {stored!r}, the samples' {name} is {value!r}")
    return out
