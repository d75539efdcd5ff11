"""A results file as the Markdown tables of ``docs/benchmark.md``:
``python -m benchmarks report results.json``."""

from __future__ import annotations

from typing import Any

from .brokers.systems import ONCE
from .plot import flatten

ROWS = [  # (scenario, mqlite key, peer key, unit)
    ("produce single (autocommit)", "mqlite.produce_single", "tasks_db.produce_single", "/s"),
    ("produce batch 64", "mqlite.produce_batch_64", None, "/s"),
    ("produce batch 256", "mqlite.produce_batch_256", "tasks_db.produce_batch_256", "/s"),
    ("drain, 1 worker process", "mqlite.drain_1proc", "tasks_db.drain_1proc", "/s"),
    ("drain, 2 worker processes", "mqlite.drain_2proc", "tasks_db.drain_2proc", "/s"),
    ("drain, 2 processes, synchronous_commit=off", "mqlite.drain_2proc_async_commit", None, "/s"),
    ("Django Tasks drain, 1 process", "mqlite.tasks_drain_1proc", "tasks_db.drain_1proc", "/s"),
    ("end to end (produce + consume)", "mqlite.end_to_end", "tasks_db.end_to_end", "/s"),
    ("claim latency, 1k backlog", "mqlite.claim_1000", "tasks_db.claim_1000", "ms"),
    ("claim latency, 10k backlog", "mqlite.claim_10000", "tasks_db.claim_10000", "ms"),
    ("claim latency, 100k backlog", "mqlite.claim_100000", "tasks_db.claim_100000", "ms"),
    ("claim latency, 1M backlog", "mqlite.claim_1000000", None, "ms"),
    ("claim behind a 20k blocked group", "mqlite.claim_behind_blocked", None, "ms"),
    ("worker RSS over the drain (MiB)", "mqlite.worker_rss", None, "MiB"),
    (
        "bytes written per message, batch 1",
        "mqlite.bytes_per_msg_batch1",
        "tasks_db.bytes_per_task_batch1",
        "B",
    ),
    (
        "bytes written per message, batch 64",
        "mqlite.bytes_per_msg_batch64",
        "tasks_db.bytes_per_task_batch64",
        "B",
    ),
    # Older files: django-tasks-db's tasks enqueued 64 per transaction, claimed and
    # finished one at a time (a different life from either row above).
    ("bytes written per task", None, "tasks_db.bytes_per_task", "B"),
]


def _fmt(v: dict[str, Any] | None, unit: str) -> str:
    if v is None:
        return "-"
    if "skipped" in v:
        return "skipped"
    if "error" in v:
        return "error"
    med = v["median"]
    if unit == "ms":
        return f"{med:.2f} ({v['min']:.2f}-{v['max']:.2f})"
    if unit == "MiB":
        return f"{v['first']:.0f} → {v['last']:.0f} (max {v['max']:.0f})"
    text = f"{med:,.0f}"
    if unit == "/s" and "cpu_us_per_msg" in v:
        text += f" [{v['cpu_us_per_msg']:,.0f} µs CPU]"
    return text


DEFAULT_ROWS = [  # (row, key suffix, systems)
    ("Tasks drain, start-up included", "defaults_drain", ("mqlite", "tasks_db", "ox")),
    ("Tasks drain, steady state", "defaults_drain_steady", ("mqlite", "tasks_db", "ox")),
    ("Tasks enqueue, one transaction", "enqueue_txn", ("mqlite", "tasks_db", "ox")),
    ("Tasks enqueue, autocommit", "enqueue_single", ("mqlite", "tasks_db", "ox")),
    ("`mq.send`, autocommit", "send_single", ("mqlite",)),
]
SYSTEMS = {"mqlite": "django-mqlite", "tasks_db": "django-tasks-db", "ox": "django-ox"}


def defaults_table(data: dict[str, Any]) -> str:
    """The defaults table: every system with its worker's default options, per database,
    with the ratio of django-mqlite to each peer."""
    lines = []
    for db in data["results"]:
        flat = flatten(data["results"][db])
        if not any(k.endswith(".defaults_drain") for k in flat):
            continue
        n = data.get("sizes", {}).get(db, {}).get("defaults")
        lines += [f"**{db}** (N = {n})", ""]
        lines.append("| " + " | ".join(["", *SYSTEMS.values(), "ratio"]) + " |")
        lines.append("|---" * (len(SYSTEMS) + 2) + "|")
        for label, key, systems in DEFAULT_ROWS:
            cells = [_fmt(flat.get(f"{s}.{key}"), "/s") if s in systems else "" for s in SYSTEMS]
            ours = flat.get(f"mqlite.{key}")
            ratios = []
            for s in systems[1:]:
                peer = flat.get(f"{s}.{key}")
                if ours and peer and "median" in ours and "median" in peer:
                    ratios.append(f"{ours['median'] / peer['median']:.1f}x {SYSTEMS[s]}")
            lines.append(f"| {label} | " + " | ".join(cells) + f" | {', '.join(ratios)} |")
        lines.append("")
    return "\n".join(lines)


BROKER_SYSTEMS = {  # benchmarks/brokers/systems.py
    "mqlite": "django-mqlite",
    "celery_redis": "Celery, Redis",
    "celery_redis_results": "Celery, Redis, results",
    "celery_amqp": "Celery, RabbitMQ",
    "dramatiq_redis": "Dramatiq, Redis",
    "dramatiq_amqp": "Dramatiq, RabbitMQ",
    "huey": "Huey, Redis",
    "rq": "RQ, Redis",
    "procrastinate": "procrastinate",
    "tasks_db": "django-tasks-db",
    "ox": "django-ox",
}


def brokers_table(data: dict[str, Any]) -> str:
    """The brokers scenario: per database, a row per system with its drain (start-up
    included, and steady), CPU per task, pickup p50/p95/p99 (a warm producer), a fresh
    producer's first pickup, and django-mqlite's ratio to it on the drain."""
    lines = []
    flats = {db: flatten(data["results"][db]) for db in data["results"]}
    for db in data["results"]:
        flat = flats[db]
        ours = flat.get("mqlite.brokers_drain")
        if ours is None:
            continue
        n = data.get("sizes", {}).get(db, {}).get("brokers")
        lines += [f"**{db}** (N = {n})", ""]
        lines.append(
            "| system | drain, start-up included [CPU per task] | steady | pickup p50 / p95 / "
            "p99 (ms) | a fresh producer's first pickup (ms) | django-mqlite's drain against "
            "it |"
        )
        lines.append("|---|---|---|---|---|---|")
        for key, label in BROKER_SYSTEMS.items():
            source = flat
            if flat.get(f"{key}.brokers_drain", {}).get("skipped") == ONCE:
                source = flats["sqlite"]  # a broker peer, measured once (scenarios/brokers)
                label += " (measured in the SQLite half)"
            drain = source.get(f"{key}.brokers_drain")
            if drain is None:
                continue
            steady = source.get(f"{key}.brokers_drain_steady")
            pick = source.get(f"{key}.pickup") or {}
            if "p50" in pick:
                pickup = f"{pick['p50']:.1f} / {pick['p95']:.1f} / {pick['p99']:.1f}"
            else:
                pickup = "skipped" if "skipped" in pick else "-"
            fresh = ", ".join(f"{v:.1f}" for v in pick.get("fresh_ms", [])) or "-"
            ratio = ""
            if key != "mqlite" and "median" in drain and ours and "median" in ours:
                ratio = f"{ours['median'] / drain['median']:.1f}x"
            lines.append(
                f"| {label} | {_fmt(drain, '/s')} | {_fmt(steady, '/s')} | {pickup} | {fresh} "
                f"| {ratio} |"
            )
        lines.append("")
    return "\n".join(lines)


def tasks_floor_table(data: dict[str, Any]) -> str:
    """The tasks_floor scenario (scenarios/tasks_floor.py): per database, Django's own
    steps for a task with no queue, and the task's record alone, each on one thread
    with its CPU a task; beside them, when the same file has the brokers scenario, each
    worker's CPU a task in its drain, less the task's record (what the system spends
    around the task), and for a backend of Django Tasks less the floor (what its queue
    and worker spend beyond Django's own steps)."""
    lines = []
    for db, results in data["results"].items():
        flat = flatten(results)
        floor = flat.get("django.tasks_floor")
        if floor is None:
            continue
        record = flat.get("django.record_only")
        lines += [f"**{db}** (N = {data.get('sizes', {}).get(db, {}).get('brokers')})", ""]
        lines.append(
            "| measured | tasks/s [CPU a task] | CPU a task less the record | "
            "less the floor (Django Tasks backends) |"
        )
        lines.append("|---|---|---|---|")
        lines.append(
            "| the floor: Django's own steps for a task (one thread, no queue) "
            f"| {_fmt(floor, '/s')} | | |"
        )
        lines.append(f"| the task's own record alone | {_fmt(record, '/s')} | | |")

        def less(cpu: float, base: dict[str, Any] | None) -> str:
            if base is None or "cpu_us_per_msg" not in base:
                return ""
            return f"{cpu - base['cpu_us_per_msg']:,.0f} µs"

        for key, label in BROKER_SYSTEMS.items():
            drain = flat.get(f"{key}.brokers_drain")
            if drain is None or "cpu_us_per_msg" not in drain:
                continue
            cpu = drain["cpu_us_per_msg"]
            lines.append(
                f"| {label}'s worker, its brokers drain | {_fmt(drain, '/s')} "
                f"| {less(cpu, record)} | {less(cpu, floor) if key in SYSTEMS else ''} |"
            )
        lines.append("")
    return "\n".join(lines)


def tables(data: dict[str, Any]) -> str:
    dbs = list(data["results"])
    head = "| scenario | " + " | ".join(
        f"django-mqlite ({db}) | django-tasks-db ({db})" for db in dbs
    )
    lines = [head + " |", "|---" * (1 + 2 * len(dbs)) + "|"]
    flats = {db: flatten(data["results"][db]) for db in dbs}
    for label, ours, peer, unit in ROWS:
        cells = []
        for db in dbs:
            cells.append(_fmt(flats[db].get(ours) if ours else None, unit))
            cells.append(_fmt(flats[db].get(peer) if peer else None, unit))
        if any(c != "-" for c in cells):
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if len(lines) == 2:  # no row of the scenario table was measured
        lines = []
    defaults = defaults_table(data)
    if defaults:
        lines = [defaults, "", *lines]
    brokers = brokers_table(data)
    if brokers:
        lines = [brokers, "", *lines]
    floor = tasks_floor_table(data)
    if floor:
        lines = [*lines, "", floor]
    floor = flats.get("sqlite", {})
    if "sqlite3.floor_drain_batch_64" in floor:
        lines += ["", "| SQLite, in-process | raw sqlite3 (floor) | django-mqlite | ratio |"]
        lines.append("|---|---|---|---|")
        for what in ("produce_single", "produce_batch_256", "drain_batch_64"):
            raw = floor.get(f"sqlite3.floor_{what}")
            ours_v = floor.get(f"mqlite.floor_{what}")
            if raw and ours_v and "median" in raw and "median" in ours_v:
                lines.append(
                    f"| {what.replace('_', ' ')} | {_fmt(raw, '/s')} | {_fmt(ours_v, '/s')} "
                    f"| {ours_v['median'] / raw['median']:.2f} |"
                )
    return "\n".join(lines)
