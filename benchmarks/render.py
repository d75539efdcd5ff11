"""The blocks of ``docs/benchmark.md`` that come from results files, rendered from them.

A block sits between ``<!-- rendered: NAME -->`` and ``<!-- /rendered -->``; ``BLOCKS``
says which results files each one reads and how it is written. ``python -m benchmarks
report --docs`` rewrites every block from its files, and ``tests/benchmarks/test_bench_smoke.py``
fails when a block differs from what this module renders, or when a ratio is written
by hand outside a block. Every file a block reads must pass ``results_check``.

The few figures in the blocks that no results file holds (the start-up of an empty
worker, a round trip) were measured by hand beside the run; they are the constants
below, named with what they are.
"""

from __future__ import annotations

import json
import re
import statistics
import textwrap
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from .brokers.systems import ONCE
from .plot import flatten
from .report import (
    BROKER_SYSTEMS,
    SYSTEMS,
    brokers_table,
    defaults_table,
    tables,
    tasks_floor_table,
)
from .results_check import check

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "benchmark.md"
BLOCK = re.compile(r"<!-- rendered: ([\w-]+) -->\n(.*?)<!-- /rendered -->", re.S)

# Measured by hand at the time of defaults.json (docs/benchmark.md says how).
SQLITE_EMPTY_BURST_S = 0.36  # `runworker --burst` on an empty SQLite queue
BARE_SETUP_S = 0.30  # a bare django.setup() of the bench project
POSTGRES_EMPTY_BURST_S = 0.40  # `runworker --burst` on an empty PostgreSQL queue

Data = dict[str, Any]


def load(name: str) -> Data:
    data: Data = json.loads((RESULTS / name).read_text())
    check(data)
    return data


def _flat(data: Data, db: str) -> dict[str, Any]:
    return flatten(data["results"][db])


def _med(data: Data, db: str, key: str) -> float:
    return float(_flat(data, db)[key]["median"])


def _ratio(data: Data, db: str, ours: str, peer: str) -> float:
    return _med(data, db, ours) / _med(data, db, peer)


def _x(r: float) -> str:
    return f"{r:.1f}×"


def _n(v: float) -> str:
    return f"{v:,.0f}"


# -- the defaults run ---------------------------------------------------------------


_DEFAULT_DBS = (("sqlite", "SQLite"), ("postgres", "PostgreSQL"))
#: "Ahead" as a least ratio: above 1, whatever the rounding shows.
AHEAD = 1.000001


def defaults_targets(
    data: Data, dbs: tuple[tuple[str, str], ...] = _DEFAULT_DBS, *, mariadb: bool = False
) -> str:
    """The targets for the defaults, each cell a ratio of medians (or the rates); a peer
    a database's run did not measure (django-ox where it cannot run) reads "skipped",
    and a row no database measured is left out. ``mariadb``: MariaDB's targets, the
    steady drain at least 10 times and every enqueue ahead (a ratio above 1)."""
    n = data["sizes"][dbs[0][0]]["defaults"]
    rows: list[tuple[str, str, str, float]] = [  # (label, key, peer, at least)
        (f"Tasks drain ≥ 10× django-tasks-db, N = {n:,}, start-up included",
         "defaults_drain", "tasks_db", 10),
        ("… ≥ 10× django-ox", "defaults_drain", "ox", 10),
        ("… as a steady-state rate, ≥ 10× django-tasks-db", "defaults_drain_steady",
         "tasks_db", 10),
        ("… as a steady-state rate, ≥ 10× django-ox", "defaults_drain_steady", "ox", 10),
        ("Tasks enqueue in one transaction ≥ 2× django-tasks-db", "enqueue_txn", "tasks_db", 2),
    ]  # fmt: skip
    if mariadb:
        rows = [
            (f"Tasks drain as a steady-state rate, N = {n:,}, ≥ 10× django-tasks-db",
             "defaults_drain_steady", "tasks_db", 10),
            ("… ≥ 10× django-ox", "defaults_drain_steady", "ox", 10),
            ("Tasks enqueue in one transaction ahead of django-tasks-db", "enqueue_txn",
             "tasks_db", AHEAD),
            ("… ahead of django-ox", "enqueue_txn", "ox", AHEAD),
            ("Tasks enqueue in autocommit ahead of django-tasks-db", "enqueue_single",
             "tasks_db", AHEAD),
            ("… ahead of django-ox", "enqueue_single", "ox", AHEAD),
        ]  # fmt: skip
    lines = ["| target | " + " | ".join(label for _, label in dbs) + " |"]
    lines.append("|---" * (len(dbs) + 1) + "|")
    for label, key, peer, least in rows:
        cells = []
        for db, _ in dbs:
            if not _measured(data, db, f"{peer}.{key}"):
                cells.append("skipped")
                continue
            r = _ratio(data, db, f"mqlite.{key}", f"{peer}.{key}")
            cells.append(_x(r) if r >= least else f"**{_x(r)}: missed**")
        if any(c != "skipped" for c in cells):
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    cells = []
    for db, _ in dbs:
        ours = _med(data, db, "mqlite.send_single")
        peers = [
            _med(data, db, f"{p}.enqueue_single")
            for p in ("tasks_db", "ox")
            if _measured(data, db, f"{p}.enqueue_single")
        ]
        text = f"{_n(ours)} vs " + " and ".join(_n(p) for p in peers)
        cells.append(text if ours > max(peers) else f"**{text}: missed**")
    lines.append("| `mq.send` in autocommit ahead of every peer's single enqueue | "
                 + " | ".join(cells) + " |")  # fmt: skip
    return "\n".join(lines)


def _measured(data: Data, db: str, key: str) -> bool:
    return "median" in _flat(data, db).get(key, {})


def mariadb_defaults(data: Data) -> str:
    """The defaults table of the MariaDB run, and its targets (the steady drain at least
    10 times, every enqueue ahead)."""
    table = defaults_table(data).strip()
    return f"{table}\n\n{defaults_targets(data, (('mariadb', 'MariaDB'),), mariadb=True)}"


def defaults_samples(data: Data) -> str:
    """The steady-state targets sample by sample: our slowest against the closest
    peer's fastest, per database."""
    parts, held = [], True
    for db, name in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
        flat = _flat(data, db)
        ours = min(flat["mqlite.defaults_drain_steady"]["samples"])
        peer = max(
            ("tasks_db", "ox"), key=lambda p: max(flat[f"{p}.defaults_drain_steady"]["samples"])
        )
        theirs = max(flat[f"{peer}.defaults_drain_steady"]["samples"])
        held = held and ours / theirs >= 10
        count = len(flat["mqlite.defaults_drain_steady"]["samples"])
        parts.append(
            f"our slowest of the {count} {name} samples ({_n(ours)}/s) is {_x(ours / theirs)} "
            f"{SYSTEMS[peer]}'s fastest ({_n(theirs)}/s)"
        )
    verdict = "hold" if held else "do not hold"
    return (
        f"The steady-state targets {verdict} sample by sample, not only at the medians: "
        f"{parts[0]}, and on PostgreSQL {parts[1].replace(' PostgreSQL', '')}."
    )


RUNS = [  # (results file, how the machine and the code were)
    ("defaults-2026-12-01a.json", "quiet, before the changes below"),
    ("defaults-2026-12-01b.json",
     "twice as slow (`sum(range(10**6))` 16-29 ms), the changes below"),
    ("defaults.json", "quiet, the same code: the table above"),
]  # fmt: skip


def defaults_runs(_: Data) -> str:
    """The day's defaults runs side by side: the ratios that moved with the machine."""
    lines = [
        "| run (UTC) | SQLite drain vs django-tasks-db, start-up / steady "
        "| PostgreSQL drain vs django-ox, start-up / steady "
        "| PostgreSQL enqueue, one transaction, vs django-tasks-db |",
        "|---|---|---|---|",
    ]
    for name, note in RUNS:
        d = load(name)
        started = d["started"].replace("T", " ")[:16]
        sq = [_ratio(d, "sqlite", f"mqlite.{k}", f"tasks_db.{k}") for k in _DRAINS]
        pg = [_ratio(d, "postgres", f"mqlite.{k}", f"ox.{k}") for k in _DRAINS]
        enq = _ratio(d, "postgres", "mqlite.enqueue_txn", "tasks_db.enqueue_txn")
        lines.append(
            f"| {started}, {note} (`{name}`) | {_x(sq[0])} / {_x(sq[1])} "
            f"| {_x(pg[0])} / {_x(pg[1])} | {_x(enq)} |"
        )
    return "\n".join(lines)


_DRAINS = ("defaults_drain", "defaults_drain_steady")


def defaults_runs_cpu(data: Data) -> str:
    slow = load(RUNS[1][0])
    cpu = [
        [_flat(d, "sqlite")[f"{s}.defaults_drain"]["cpu_us_per_msg"] for s in SYSTEMS]
        for d in (slow, data)
    ]
    times = [a / b for a, b in zip(*cpu, strict=True)]
    return (
        f"The slow run measured every system with {_x(min(times))} to {_x(max(times))} the "
        f"CPU per task of the table above (the SQLite drain: {_n(cpu[0][0])} µs for "
        f"django-mqlite, {_n(cpu[0][1])} for django-tasks-db and {_n(cpu[0][2])} for "
        f"django-ox, against {_n(cpu[1][0])}, {_n(cpu[1][1])} and {_n(cpu[1][2])})."
    )


def sqlite_bound(data: Data) -> str:
    """What the start-up-included SQLite target asks of the tasks after start-up."""
    n = data["sizes"]["sqlite"]["defaults"]
    peer = _med(data, "sqlite", "tasks_db.defaults_drain")
    steady = _med(data, "sqlite", "mqlite.defaults_drain_steady")
    budget = n / (10 * peer)
    after = budget - SQLITE_EMPTY_BURST_S
    bare = budget - BARE_SETUP_S
    return (
        f"10× django-tasks-db's {_n(peer)}/s is {_n(10 * peer)}/s, so {n:,} tasks and the "
        f"start-up in {budget:.2f} s: {after:.2f} s for the tasks after start-up, a rate of "
        f"{_n(n / after)}/s, {_x(n / after / steady)} the steady rate the same worker "
        f"reaches ({_n(steady)}/s). Even after nothing but a bare `django.setup()`, "
        f"{n:,} tasks would have to finish in {bare:.2f} s ({_n(n / bare)}/s)."
    )


def postgres_bound(data: Data) -> str:
    n = data["sizes"]["postgres"]["defaults"]
    peer = _med(data, "postgres", "ox.defaults_drain")
    steady = _med(data, "postgres", "mqlite.defaults_drain_steady")
    budget = n / (10 * peer)
    after = budget - POSTGRES_EMPTY_BURST_S
    return (
        f"10× django-ox's {_n(peer)}/s is {_n(10 * peer)}/s, so {n:,} tasks and the "
        f"start-up in {budget:.2f} s. An empty `runworker --burst` takes up to "
        f"{POSTGRES_EMPTY_BURST_S:.2f} s, which leaves {after:.2f} s for {n:,} tasks: "
        f"{_n(n / after)}/s, against the {_n(steady)}/s this worker reaches steady."
    )


def postgres_enqueue(data: Data) -> str:
    flat = _flat(data, "postgres")
    ours, peer = flat["mqlite.enqueue_txn"], flat["tasks_db.enqueue_txn"]
    ours_us, peer_us = 1e6 / ours["median"], 1e6 / peer["median"]
    wait = ours_us - ours["cpu_us_per_msg"]
    half = peer_us / 2
    runs = [load(name) for name, _ in RUNS]
    r = [_ratio(d, "postgres", "mqlite.enqueue_txn", "tasks_db.enqueue_txn") for d in runs]
    return (
        f"In the table above ours takes {_n(ours_us)} µs per enqueue, "
        f"{_n(ours['cpu_us_per_msg'])} µs of it CPU, and django-tasks-db {_n(peer_us)} µs, "
        f"{_n(peer['cpu_us_per_msg'])} µs of it CPU: 2× would be {_n(half)} µs, and the round "
        f"trip and the statement alone (the wall time that is not CPU) take {_n(wait)} µs of "
        f"ours, which leaves {_n(half - wait)} µs for the client where ours spends "
        f"{_n(ours['cpu_us_per_msg'])}. Of the day's three runs, the slow one "
        f"{'met' if r[1] >= 2 else 'missed'} 2× ({_x(r[1])}), the morning's "
        f"{'met' if r[0] >= 2 else 'missed'} it ({_x(r[0])}) and this one "
        f"{'met' if r[2] >= 2 else 'missed'} it ({_x(r[2])})."
    )


# -- the tuned runs -----------------------------------------------------------------


def tuned(data: Data) -> str:
    """The scenario and floor tables of a full run (its defaults, if any, left out)."""
    rest = {**data, "results": {db: {k: v for k, v in r.items() if k != "defaults"}
                                for db, r in data["results"].items()}}  # fmt: skip
    return tables(rest).strip()


def floor_and_peer(data: Data) -> str:
    """The slow re-run's distances to the floor and to the peer, beside the morning's."""
    morning = load("results-2026-12-01.json")

    def dist(d: Data) -> tuple[float, float]:
        floor = _ratio(d, "sqlite", "mqlite.floor_drain_batch_64", "sqlite3.floor_drain_batch_64")
        peer = _ratio(d, "sqlite", "mqlite.tasks_drain_1proc", "tasks_db.drain_1proc")
        return floor, peer

    (f1, p1), (f0, p0) = dist(data), dist(morning)
    raw = _med(data, "sqlite", "sqlite3.floor_drain_batch_64")
    raw0 = _med(morning, "sqlite", "sqlite3.floor_drain_batch_64")
    return (
        f"Its raw `sqlite3` floor drained {_n(raw)} messages/s against {_n(raw0)} in the "
        f"morning; django-mqlite draining in batches of 64 was at {f1:.2f} of that floor "
        f"(morning: {f0:.2f}), and the SQLite Tasks drain at {_x(p1)} django-tasks-db's "
        f"(morning: {_x(p0)})."
    )


def tuned_targets(data: Data) -> str:
    """The targets of the tuned scenarios against the latest full run."""
    sq, pg = _flat(data, "sqlite"), _flat(data, "postgres")

    def med(flat: dict[str, Any], key: str) -> float:
        return float(flat[key]["median"])

    def verdict(ok: bool) -> str:
        return "met" if ok else "**missed**"

    t_sq = med(sq, "mqlite.tasks_drain_1proc") / med(sq, "tasks_db.drain_1proc")
    t_pg = med(pg, "mqlite.tasks_drain_1proc") / med(pg, "tasks_db.drain_1proc")
    lat = [med(f, f"mqlite.claim_{b}") for f in (sq, pg) for b in (1_000_000, 1_000)]
    rss = [sq["mqlite.worker_rss"], pg["mqlite.worker_rss"]]
    rows = [
        ("SQLite drain, 1 worker process: ≥ 5,000 msg/s", _n(med(sq, "mqlite.drain_1proc")),
         verdict(med(sq, "mqlite.drain_1proc") >= 5000)),
        ("Django Tasks drain ≥ 3,000 tasks/s",
         f"{_n(med(sq, 'mqlite.tasks_drain_1proc'))} (SQLite), "
         f"{_n(med(pg, 'mqlite.tasks_drain_1proc'))} (PostgreSQL)",
         verdict(min(med(f, "mqlite.tasks_drain_1proc") for f in (sq, pg)) >= 3000)),
        ("… and ≥ 10× django-tasks-db", f"{_x(t_sq)} on SQLite, {_x(t_pg)} on PostgreSQL",
         "met" if min(t_sq, t_pg) >= 10 else "**missed on "
         + " and ".join(db for db, t in (("SQLite", t_sq), ("PostgreSQL", t_pg)) if t < 10) + "**"),
        ("batch produce ≥ 50,000 msg/s",
         f"{_n(med(sq, 'mqlite.produce_batch_64'))} (batch 64), "
         f"{_n(med(sq, 'mqlite.produce_batch_256'))} (batch 256) on SQLite",
         verdict(min(med(sq, f"mqlite.produce_batch_{b}") for b in (64, 256)) >= 50_000)),
        ("single produce ≥ 5,000 msg/s", f"{_n(med(sq, 'mqlite.produce_single'))} on SQLite",
         verdict(med(sq, "mqlite.produce_single") >= 5000)),
        ("claim latency at 1M within 1.5× of 1k",
         f"SQLite {lat[0]:.2f} / {lat[1]:.2f} ms ({_x(lat[0] / lat[1])}); "
         f"PostgreSQL {lat[2]:.2f} / {lat[3]:.2f} ms ({_x(lat[2] / lat[3])})",
         verdict(max(lat[0] / lat[1], lat[2] / lat[3]) <= 1.5)),
        ("PostgreSQL drain, 2 worker processes: ≥ 3,000 msg/s", _n(med(pg, "mqlite.drain_2proc")),
         verdict(med(pg, "mqlite.drain_2proc") >= 3000)),
        ("worker RSS flat",
         f"{_mib(rss[0])} over {rss[0]['n']:,} messages (SQLite), "
         f"{_mib(rss[1])} over {rss[1]['n']:,} (PostgreSQL)",
         verdict(max(rss[0]["growth"], rss[1]["growth"]) < 5)),
    ]  # fmt: skip
    lines = ["| target (medians, this 2-core machine) | measured | |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def _mib(rss: dict[str, Any]) -> str:
    return f"{rss['first']:.0f} → {rss['last']:.0f} MiB"


# 2026-12-03: the code before the typed settings, the layout's last moves and the
# tracing changes (8d662e2), and after them, without and with the [otel] extra (no SDK).
AFTER_PAIRS = [  # (first run, second run) of each pair, in the order they ran
    ("defaults-2026-12-03-after-1.json", "defaults-2026-12-03-otel-1.json"),
    ("defaults-2026-12-03-otel-2.json", "defaults-2026-12-03-after-2.json"),
    ("defaults-2026-12-03-after-3.json", "defaults-2026-12-03-otel-3.json"),
]
_MEASURES = {
    "send_single": "send, one at a time",
    "enqueue_txn": "Tasks enqueue, one transaction",
    "enqueue_single": "Tasks enqueue, one at a time",
    "defaults_drain": "Tasks drain, start-up included",
    "defaults_drain_steady": "Tasks drain, steady state",
}


def before_after(before: Data) -> str:
    """The defaults before and after (the first pair's run), and the [otel] extra's
    runs against the plain ones in each of three pairs."""
    pairs = [
        (load(a), load(b)) if "after" in a else (load(b), load(a)) for a, b in AFTER_PAIRS
    ]  # (without, with the extra)
    lines = [
        "| database | measure | before | after | after ÷ before "
        "| [otel], no SDK ÷ without: pair 1 / 2 / 3 |",
        "|---|---|---|---|---|---|",
    ]
    for db, label in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
        for key, name in _MEASURES.items():
            k = f"mqlite.{key}"
            was, now = _med(before, db, k), _med(pairs[0][0], db, k)
            otel = []
            for plain, extra in pairs:
                otel.append(f"{_med(extra, db, k) / _med(plain, db, k):.2f}")
            lines.append(
                f"| {label} | {name} | {_n(was)}/s | {_n(now)}/s | {now / was:.2f} "
                f"| {' / '.join(otel)} |"
            )
    return "\n".join(lines)


# The tuned scenarios at --quick sizes, before and after, in two pairs (before ran
# first in the first pair, after in the second); lower is better for a latency in ms.
QUICK_PAIRS = [
    ("results-2026-12-03-quick-before-1.json", "results-2026-12-03-quick-after-1.json"),
    ("results-2026-12-03-quick-before-2.json", "results-2026-12-03-quick-after-2.json"),
]


def _quick_rows(
    pairs: list[tuple[Data, Data]],
) -> Iterator[tuple[str, str, dict[str, Any], list[float | None]]]:
    """Each django-mqlite row and raw floor of quick tuned (before, after) pairs, as
    (database label, result, the first before's summary, after ÷ before per pair: None
    where before is 0)."""
    for db, label in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
        first = _flat(pairs[0][0], db)
        for key, summary in first.items():
            if not key.startswith(("mqlite.", "sqlite3.", "psycopg.")) or "median" not in summary:
                continue
            ratios: list[float | None] = []
            for before, after in pairs:
                was, now = _med(before, db, key), _med(after, db, key)
                ratios.append(now / was if was else None)
            yield label, key, summary, ratios


def quick_before_after(_: Data) -> str:
    """Each django-mqlite row and raw floor of the quick tuned runs: after ÷ before in
    each pair (the unchanged floors show what the machine did between the runs)."""
    lines = [
        "| database | result | unit | before (pair 1) | after ÷ before: pair 1 / pair 2 |",
        "|---|---|---|---|---|",
    ]
    for label, key, summary, ratios in _quick_rows([(load(b), load(a)) for b, a in QUICK_PAIRS]):
        cells = ["-" if r is None else f"{r:.2f}" for r in ratios]
        lines.append(
            f"| {label} | `{key}` | {summary['unit']} | {summary['median']:,.1f} "
            f"| {' / '.join(cells)} |"
        )
    return "\n".join(lines)


# 2026-12-04: one session with a cooldown between runs (docs/benchmark.md says which):
# the defaults before (01deda3) and after, and after with the [otel] extra (no SDK), in
# the order they ran; then the tuned scenarios at --quick sizes before and after.
SESSION_2026_12_04 = [  # (run, results file), in the order they ran
    ("B1", "defaults-2026-12-04-before-1.json"),
    ("A1", "defaults-2026-12-04-after-1.json"),
    ("O1", "defaults-2026-12-04-otel-1.json"),
    ("O2", "defaults-2026-12-04-otel-2.json"),
    ("A2", "defaults-2026-12-04-after-2.json"),
    ("A3", "defaults-2026-12-04-after-3.json"),
    ("O3", "defaults-2026-12-04-otel-3.json"),
    ("O4", "defaults-2026-12-04-otel-4.json"),
    ("A4", "defaults-2026-12-04-after-4.json"),
    ("B2", "defaults-2026-12-04-before-2.json"),
    ("QB1", "results-2026-12-04-quick-before-1.json"),
    ("QA1", "results-2026-12-04-quick-after-1.json"),
    ("QA2", "results-2026-12-04-quick-after-2.json"),
    ("QB2", "results-2026-12-04-quick-before-2.json"),
]
_RUN_FILE = dict(SESSION_2026_12_04)
# 2026-12-05: the defaults and the quick tuned scenarios before (7461412: before
# dependencies, chains, unique keys for Tasks, keys held while pending, cancelling
# running work, progress and checkpoints) and after (be2707a), a cooldown between runs.
SESSION_2026_12_05 = [  # (run, results file), in the order they ran
    ("B1", "defaults-2026-12-05-before-1.json"),
    ("A1", "defaults-2026-12-05-after-1.json"),
    ("A2", "defaults-2026-12-05-after-2.json"),
    ("B2", "defaults-2026-12-05-before-2.json"),
    ("QB1", "results-2026-12-05-quick-before-1.json"),
    ("QA1", "results-2026-12-05-quick-after-1.json"),
    ("QA2", "results-2026-12-05-quick-after-2.json"),
    ("QB2", "results-2026-12-05-quick-before-2.json"),
]
QUICK_PAIRS_2026_12_05 = [("QB1", "QA1"), ("QB2", "QA2")]  # (before, after); pair 2: after first
# The [otel] pairs (first run, second run): plain first, otel first, plain first, otel first.
OTEL_PAIRS_2026_12_04 = [("A1", "O1"), ("O2", "A2"), ("A3", "O3"), ("O4", "A4")]
# Runs of the same code back to back (a cooldown between them, as between all runs).
SAME_CODE_2026_12_04 = [("O1", "O2"), ("A2", "A3"), ("O3", "O4")]
QUICK_PAIRS_2026_12_04 = [("QB1", "QA1"), ("QB2", "QA2")]  # (before, after); pair 2: after first
_DBS = (("sqlite", "SQLite"), ("postgres", "PostgreSQL"))


def _runs(labels: str) -> list[Data]:
    return [load(_RUN_FILE[label]) for label in labels.split()]


def _per_run(runs: list[Data], db: str, key: str, field: str = "median") -> list[float]:
    return [float(_flat(d, db)[key][field]) for d in runs]


def _gm(values: list[float]) -> float:
    return statistics.geometric_mean(values)


def session_runs(runs: list[tuple[str, str]], _: Data) -> str:
    """Every run of a session: when, on what load, which code, with or without the
    extra (all from the files' own machine block and the engine path their child read)."""
    lines = [
        "| run | results file | started (UTC) | one-minute load, start → end "
        "| code imported | opentelemetry-api |",
        "|---|---|---|---|---|---|",
    ]
    for label, name in runs:
        d = load(name)
        m = d["machine"]
        tree = Path(d["results"]["sqlite"]["engine"]).parent.parent.name
        otel = m.get("opentelemetry_api", "not recorded")
        lines.append(
            f"| {label} | `{name}` | {d['started'][11:16]} "
            f"| {m['load_before'][0]:.2f} → {m['load_after'][0]:.2f} | `{tree}` "
            f"| {otel or 'not installed'} |"
        )
    return "\n".join(lines)


def _sides(
    runs: list[tuple[str, str]], before: str, after: str
) -> tuple[list[str], list[str], list[Data], list[Data]]:
    """The labels and loaded files of a session's *before* and *after* runs."""
    files = dict(runs)
    b, a = before.split(), after.split()
    return b, a, [load(files[x]) for x in b], [load(files[x]) for x in a]


def _cpu_ratio(before: list[Data], after: list[Data], db: str, k: str) -> float | None:
    """CPU per task, the median over after's runs ÷ before's (None: not measured)."""
    if "cpu_us_per_msg" not in _flat(before[0], db)[k]:
        return None
    cw = statistics.median(_per_run(before, db, k, "cpu_us_per_msg"))
    return statistics.median(_per_run(after, db, k, "cpu_us_per_msg")) / cw


def before_after_runs(runs: list[tuple[str, str]], before: str, after: str, _: Data) -> str:
    """The defaults before and after: the median over each side's runs, every run's
    value beside it, and CPU per task (the figure the machine's load moves least)."""
    bl, al, was_runs, now_runs = _sides(runs, before, after)
    lines = [
        f"| database | measure | before: median ({' / '.join(bl)}) "
        f"| after: median ({' / '.join(al)}) | after ÷ before | after's runs "
        f"| next to each other: {al[0]} ÷ {bl[0]} / {al[-1]} ÷ {bl[-1]} "
        "| CPU per task, after ÷ before |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for db, label in _DBS:
        for key, name in _MEASURES.items():
            k = f"mqlite.{key}"
            was, now = _per_run(was_runs, db, k), _per_run(now_runs, db, k)
            mw, mn = statistics.median(was), statistics.median(now)
            if min(now) > max(was):
                where = "all above before's"
            elif max(now) < min(was):
                where = "**all below before's**"
            else:
                where = "overlap before's"
            cpu = _cpu_ratio(was_runs, now_runs, db, k)
            lines.append(
                f"| {label} | {name} | {_n(mw)}/s ({' / '.join(_n(v) for v in was)}) "
                f"| {_n(mn)}/s ({' / '.join(_n(v) for v in now)}) | {mn / mw:.2f} "
                f"| {where} | {now[0] / was[0]:.2f} / {now[-1] / was[-1]:.2f} "
                f"| {'-' if cpu is None else f'{cpu:.2f}'} |"
            )
    return "\n".join(lines)


def _otel_sides(db: str, k: str, field: str = "median") -> tuple[list[float], list[float]]:
    plain = _per_run(_runs("A1 A2 A3 A4"), db, k, field)
    extra = _per_run(_runs("O1 O2 O3 O4"), db, k, field)
    return plain, extra


def _pair_ratios(db: str, k: str) -> list[float]:
    """[otel] ÷ plain in each pair."""
    out = []
    for first, second in OTEL_PAIRS_2026_12_04:
        a, b = (_med(load(_RUN_FILE[x]), db, k) for x in (first, second))
        out.append(b / a if first.startswith("A") else a / b)
    return out


def otel_2026_12_04(_: Data) -> str:
    """The [otel] extra with no SDK against the same code without it: the ratio of the
    geometric means over four runs each, each pair's ratio, and the 5% condition."""
    lines = [
        "| database | measure | without: geometric mean | [otel] ÷ without "
        "| pair 1 / 2 / 3 / 4 (plain first, otel first, plain first, otel first) "
        "| CPU per task, [otel] ÷ without | within 5% |",
        "|---|---|---|---|---|---|---|",
    ]
    for db, label in _DBS:
        for key, name in _MEASURES.items():
            k = f"mqlite.{key}"
            plain, extra = _otel_sides(db, k)
            r = _gm(extra) / _gm(plain)
            pairs = " / ".join(f"{p:.2f}" for p in _pair_ratios(db, k))
            cpu = "-"
            if "cpu_us_per_msg" in _flat(load(_RUN_FILE["A1"]), db)[k]:
                cp, ce = _otel_sides(db, k, "cpu_us_per_msg")
                cpu = f"{_gm(ce) / _gm(cp):.2f}"
            lines.append(
                f"| {label} | {name} | {_n(_gm(plain))}/s | {r:.3f} | {pairs} | {cpu} "
                f"| {_within(r)} |"
            )
    return "\n".join(lines)


def _within(r: float) -> str:
    if r < 0.95:
        return f"**no: {1 - r:.1%} slower**"
    if r > 1.05:
        return f"yes ({r - 1:.1%} faster)"
    return "yes"


def otel_verdict_2026_12_04(_: Data) -> str:
    """The 5% condition over the ten rows, in words."""
    rows = [
        (db, key, _gm(e) / _gm(p), _pair_ratios(db, f"mqlite.{key}"))
        for db, _ in _DBS
        for key in _MEASURES
        for p, e in [_otel_sides(db, f"mqlite.{key}")]
    ]
    held = [r for r in rows if r[2] >= 0.95]
    worst = min(rows, key=lambda r: r[2])
    pairs_in = sum(1 for r in rows for p in r[3] if p >= 0.95)
    names = dict(_DBS)
    verdict = (
        f"The condition holds on all {len(rows)} rows"
        if len(held) == len(rows)
        else f"The condition holds on {len(held)} of {len(rows)} rows"
    )
    return (
        f"{verdict}: the lowest ratio of geometric means is {worst[2]:.3f} "
        f"({names[worst[0]]}, {_MEASURES[worst[1]]}). Pair by pair, "
        f"{pairs_in} of the {sum(len(r[3]) for r in rows)} ratios are at or above 0.95; "
        f"the lowest single pair is {min(p for r in rows for p in r[3]):.2f} and the "
        f"highest {max(p for r in rows for p in r[3]):.2f}."
    )


# The 2026-12-03 session's pairs (AFTER_PAIRS) ran back to back with no cooldown.


def order_2026_12_04(_: Data) -> str:
    """Second run ÷ first run of each pair, without the cooldown (2026-12-03, three
    pairs) and with it (2026-12-04, four pairs), and runs of the same code back to back."""
    old = [(load(a), load(b)) for a, b in AFTER_PAIRS]
    new = [(load(_RUN_FILE[a]), load(_RUN_FILE[b])) for a, b in OTEL_PAIRS_2026_12_04]
    same = [(load(_RUN_FILE[a]), load(_RUN_FILE[b])) for a, b in SAME_CODE_2026_12_04]
    drift = [(load(_RUN_FILE["B1"]), load(_RUN_FILE["B2"]))]
    lines = [
        "| database | measure | 2026-12-03, no cooldown: pair 1 / 2 / 3 "
        "| 2026-12-04, cooldown: pair 1 / 2 / 3 / 4 "
        "| 2026-12-04, same code: O2 ÷ O1 / A3 ÷ A2 / O4 ÷ O3 "
        "| 2026-12-04, *before* at the end ÷ at the start: B2 ÷ B1 |",
        "|---|---|---|---|---|---|",
    ]
    for db, label in _DBS:
        for key, name in _MEASURES.items():
            k = f"mqlite.{key}"
            cells = [
                " / ".join(f"{_med(b, db, k) / _med(a, db, k):.2f}" for a, b in group)
                for group in (old, new, same, drift)
            ]
            lines.append(f"| {label} | {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def order_summary_2026_12_04(_: Data) -> str:
    """How often the second run of a pair was the slower one, in each session."""

    def tally(pairs: list[tuple[Data, Data]]) -> tuple[int, int, float, float]:
        r = [
            _med(b, db, f"mqlite.{key}") / _med(a, db, f"mqlite.{key}")
            for a, b in pairs
            for db, _ in _DBS
            for key in _MEASURES
        ]
        return sum(1 for x in r if x < 1), len(r), min(r), _gm(r)

    old = tally([(load(a), load(b)) for a, b in AFTER_PAIRS])
    new = tally([(load(_RUN_FILE[a]), load(_RUN_FILE[b])) for a, b in OTEL_PAIRS_2026_12_04])
    same = tally([(load(_RUN_FILE[a]), load(_RUN_FILE[b])) for a, b in SAME_CODE_2026_12_04])
    return (
        f"Without the cooldown (2026-12-03) the second run of a pair was the slower in "
        f"{old[0]} of its {old[1]} ratios (rows by pairs; lowest second ÷ first "
        f"{old[2]:.2f}, geometric mean {old[3]:.2f}); with it (2026-12-04) in {new[0]} of "
        f"{new[1]} (lowest {new[2]:.2f}, geometric mean {new[3]:.2f}), and for the same "
        f"code run twice in a row (the cooldown between them) in {same[0]} of {same[1]} "
        f"(lowest {same[2]:.2f}, geometric mean {same[3]:.2f})."
    )


def quick_before_after_runs(
    runs: list[tuple[str, str]], quick_pairs: list[tuple[str, str]], _: Data
) -> str:
    """Each django-mqlite row and raw floor of the quick tuned runs: after ÷ before in
    each pair and the geometric mean of the two."""
    files = dict(runs)
    pairs = [(load(files[b]), load(files[a])) for b, a in quick_pairs]
    each = " / ".join(f"{a} ÷ {b}" for b, a in quick_pairs)
    lines = [
        f"| database | result | unit | before ({quick_pairs[0][0]}) | after ÷ before: {each} "
        "| geometric mean |",
        "|---|---|---|---|---|---|",
    ]
    for label, key, summary, found in _quick_rows(pairs):
        ratios = [r for r in found if r is not None]
        was = summary["median"]
        lines.append(
            f"| {label} | `{key}` | {summary['unit']} "
            f"| {f'{was:.3f}' if summary['unit'] == 'ms' else f'{was:,.1f}'} "
            f"| {' / '.join(f'{r:.2f}' for r in ratios)} | {_gm(ratios):.2f} |"
        )
    return "\n".join(lines)


def before_after_verdict_runs(runs: list[tuple[str, str]], before: str, after: str, _: Data) -> str:
    """The defaults before and after in words, per database, from the table's figures."""
    _b, _a, was_runs, now_runs = _sides(runs, before, after)
    parts = []
    for db, label in _DBS:
        med, near, cpu, below = [], [], [], 0
        for key in _MEASURES:
            k = f"mqlite.{key}"
            was, now = _per_run(was_runs, db, k), _per_run(now_runs, db, k)
            med.append(statistics.median(now) / statistics.median(was))
            near += [now[0] / was[0], now[-1] / was[-1]]
            below += max(now) < min(was)
            c = _cpu_ratio(was_runs, now_runs, db, k)
            if c is not None:
                cpu.append(c)
        parts.append(
            f"on {label} after ÷ before is {min(med):.2f} to {max(med):.2f} over the "
            f"{len(med)} rows ({min(near):.2f} to {max(near):.2f} between runs next to each "
            f"other), every after run is below both before runs on {below} "
            f"{'row' if below == 1 else 'rows'}, and the CPU "
            f"per task after ÷ before is {min(cpu):.2f} to {max(cpu):.2f}"
        )
    return f"In figures: {parts[0]}; {parts[1]}."


def quick_verdict_runs(
    runs: list[tuple[str, str]], quick_pairs: list[tuple[str, str]], _: Data
) -> str:
    """The quick runs in words: django-mqlite's rows beside the raw floors of the same
    runs (SQLite), and the PostgreSQL rows."""
    files = dict(runs)
    pairs = [(load(files[b]), load(files[a])) for b, a in quick_pairs]

    def gms(db: str, keep: Callable[[str, str], bool]) -> list[float]:
        first = _flat(pairs[0][0], db)
        return [
            _gm([_med(a, db, k) / _med(b, db, k) for b, a in pairs])
            for k, v in first.items()
            if "median" in v and keep(k, v["unit"])
        ]

    def rate(prefix: str) -> Callable[[str, str], bool]:
        return lambda k, unit: k.startswith(prefix) and unit.endswith("/s")

    ours = gms("sqlite", lambda k, u: rate("mqlite.")(k, u) and ".floor_" not in k)
    floor = gms("sqlite", rate("sqlite3.floor_"))
    inproc = gms("sqlite", rate("mqlite.floor_"))
    pg = gms("postgres", rate("mqlite."))
    lat = gms("postgres", lambda k, u: k.startswith("mqlite.") and u == "ms")
    kept = ("MiB", "bytes/msg")
    same = gms("sqlite", lambda k, u: k.startswith("mqlite.") and u in kept)
    same += gms("postgres", lambda k, u: k.startswith("mqlite.") and u in kept)
    return (
        f"In figures (geometric means of the two pairs): django-mqlite's SQLite throughputs "
        f"after ÷ before {min(ours):.2f} to {max(ours):.2f}, the raw `sqlite3` floors "
        f"{min(floor):.2f} to {max(floor):.2f}, the engine in-process beside them "
        f"{min(inproc):.2f} to {max(inproc):.2f}; PostgreSQL throughputs {min(pg):.2f} to "
        f"{max(pg):.2f} and claim latencies {min(lat):.2f} to {max(lat):.2f}; worker memory "
        f"and bytes written {min(same):.2f} to {max(same):.2f}."
    )


# Results files of runs still to be made (a block reading one says how to make it until
# it is there): the file, and the command that writes it.
AWAITED = {
    "defaults-mariadb.json": "python -m benchmarks run --db mariadb --scenario defaults "
    "--out benchmarks/results/defaults-mariadb.json",
}

# -- the brokers run ------------------------------------------------------------------

_TASKS_PEERS = ("tasks_db", "ox")  # the other database backends of Django Tasks


def _broker(data: Data, db: str, key: str) -> dict[str, Any]:
    """A system's result in ``db``'s half; a broker peer's from the SQLite half, where
    a run of both databases measured it once."""
    entry: dict[str, Any] = _flat(data, db).get(key, {})
    if entry.get("skipped") == ONCE:
        entry = _flat(data, "sqlite").get(key, {})
    return entry


def _closest(data: Data, db: str, metric: str, peers: list[str]) -> str:
    """django-mqlite's ``metric`` against the fastest of ``peers``: the ratio and who."""
    ours = _broker(data, db, f"mqlite.{metric}").get("median")
    them = [(p, _broker(data, db, f"{p}.{metric}").get("median")) for p in peers]
    measured = [(p, v) for p, v in them if v]
    if not ours or not measured:
        return "not measured"
    peer, best = max(measured, key=lambda pv: pv[1])
    r = ours / best
    verdict = "met" if r >= 1 else "not met"
    return f"{_x(r)} the fastest ({BROKER_SYSTEMS[peer]}, {_n(best)}/s): {verdict}"


def _least(data: Data, db: str, metric: str) -> str:
    ours = _broker(data, db, f"mqlite.{metric}").get("median")
    them = [_broker(data, db, f"{p}.{metric}").get("median") for p in _TASKS_PEERS]
    if not ours or not all(them):
        return "not measured"
    r = min(ours / v for v in them if v)
    return f"{_x(r)} the faster of the two: {'met' if r >= 10 else 'not met'}"


def _pickup(data: Data, db: str) -> str:
    ours = _broker(data, db, "mqlite.pickup")
    celery = _broker(data, db, "celery_redis.pickup")
    if "p50" not in ours or "p50" not in celery:
        return "not measured"
    met = ours["p50"] <= celery["p50"] and ours["p99"] <= celery["p99"]
    return (
        f"{ours['p50']:.1f} / {ours['p99']:.1f} ms against {celery['p50']:.1f} / "
        f"{celery['p99']:.1f}: {'met' if met else 'not met'}"
    )


def _fresh(data: Data, db: str) -> str:
    """A fresh producer's first pickup (each repeat's; their median), ours and Celery on
    Redis's: what the pickup run's warm-up sets apart, shown beside the target."""
    ours = _broker(data, db, "mqlite.pickup").get("fresh_ms")
    celery = _broker(data, db, "celery_redis.pickup").get("fresh_ms")
    if not ours or not celery:
        return "not measured"
    return (
        f"{statistics.median(ours):.1f} ms against {statistics.median(celery):.1f}: "
        f"{'no worse' if statistics.median(ours) <= statistics.median(celery) else 'worse'}"
    )


def _idle(data: Data, db: str) -> str:
    """An idle ``runworker``'s transactions a second and share of a core (its pickup
    run's idle window): at most 2 and 1%."""
    cost = _broker(data, db, "mqlite.idle_cost")
    if "median" not in cost:
        return "not measured"
    tx, core = cost["median"], cost["core_pct"]
    met = tx <= 2 and core <= 1
    return f"{tx:.1f} a second, {core:.2f}% of a core: {'met' if met else 'not met'}"


def _trickle(data: Data, db: str) -> str:
    """The transactions a task of the pickup's trickle costs: at most 1.5."""
    cost = _broker(data, db, "mqlite.trickle_cost")
    if "median" not in cost:
        return "not measured"
    tx = cost["median"]
    cpu = cost["cpu_us_per_task"] / 1000
    return f"{tx:.2f} a task ({cpu:.1f} ms of CPU a task): {'met' if tx <= 1.5 else 'not met'}"


def _bytes(data: Data, db: str) -> str:
    """Bytes written over a message's life at batch 1, ours and django-tasks-db's (the
    ``write_amplification`` scenario in the same file): the target is SQLite's."""
    flat = _flat(data, db)
    ours = flat.get("mqlite.bytes_per_msg_batch1", {}).get("median")
    peer = flat.get("tasks_db.bytes_per_task_batch1", {}).get("median")
    if not ours or not peer:
        return "not measured"
    verdict = ("met" if ours <= peer else "not met") if db == "sqlite" else "not a target"
    return f"{_n(ours)} B against {_n(peer)}: {verdict}"


def brokers_targets(data: Data) -> str:
    """The brokers run against its targets, every cell from the results file."""
    dbs = [(db, label) for db, label in _DEFAULT_DBS if db in data["results"]]
    peers = [k for k in BROKER_SYSTEMS if k not in ("mqlite", *_TASKS_PEERS)]
    rows = [
        (
            "drain, start-up included: ahead of every broker peer",
            lambda db: _closest(data, db, "brokers_drain", peers),
        ),
        (
            "drain, steady: ahead of every broker peer",
            lambda db: _closest(data, db, "brokers_drain_steady", peers),
        ),
        (
            "drain, start-up included: ≥ 10× django-tasks-db and django-ox",
            lambda db: _least(data, db, "brokers_drain"),
        ),
        (
            "drain, steady: ≥ 10× django-tasks-db and django-ox",
            lambda db: _least(data, db, "brokers_drain_steady"),
        ),
        (
            "pickup p50 / p99 (a warm producer) no worse than Celery on Redis",
            lambda db: _pickup(data, db),
        ),
        (
            "(not a target: a fresh producer's first pickup, against Celery on Redis's)",
            lambda db: _fresh(data, db),
        ),
        (
            "an idle `runworker`: at most 2 transactions a second and 1% of a core",
            lambda db: _idle(data, db),
        ),
        (
            "a trickle (one task every 50 ms): at most 1.5 transactions a task",
            lambda db: _trickle(data, db),
        ),
        (
            "bytes written over a message's life at batch 1, at most django-tasks-db's",
            lambda db: _bytes(data, db),
        ),
    ]
    lines = ["| target | " + " | ".join(label for _, label in dbs) + " |"]
    lines.append("|---" * (1 + len(dbs)) + "|")
    for what, cell in rows:
        lines.append(f"| {what} | " + " | ".join(cell(db) for db, _ in dbs) + " |")
    machine = data.get("machine", {})
    if "load_before" in machine:
        before = ", ".join(f"{x:.2f}" for x in machine["load_before"])
        after = ", ".join(f"{x:.2f}" for x in machine.get("load_after", []))
        lines += [
            "",
            f"Load average (1, 5, 15 min) when the run started: {before}; when it ended: {after}.",
        ]
    return "\n".join(lines)


#: Runs of django-mqlite's brokers scenario alone (``BENCH_BROKERS=mqlite``), before
#: and after the worker's read of what is claimable on SQLite, alternated in the order
#: given: quick runs on both databases, and full-size ones (N = 30,000) on SQLite.
IDLE_RUNS_2026_12_07 = [
    (f"{side} {i}", f"brokers-2026-12-07-quick-{side}-{i}.json")
    for side, i in (("before", 1), ("after", 1), ("after", 2), ("before", 2))
]
DRAIN_RUNS_2026_12_07 = [
    (f"{side} {i}", f"brokers-2026-12-07-sqlite-{side}-{i}.json")
    for side, i in (
        ("before", 1),
        ("after", 1),
        ("after", 2),
        ("before", 2),
        ("before", 3),
        ("after", 3),
    )
]


def idle_costs(runs: list[tuple[str, str]], _: Data) -> str:
    """Per run and database: the drain, the idle and trickle costs (each repeat's, then
    the CPU) and the pickup, from each run's file."""
    lines = [
        "| run | database | drain, start-up included [CPU a task] | idle: transactions a"
        " second (each repeat) [share of a core] | trickle: transactions a task (each"
        " repeat) [CPU a task] | pickup p50 / p95 / p99 (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for label, name in runs:
        data = load(name)
        for db, db_label in _DBS:
            if db not in data["results"]:
                continue
            flat = _flat(data, db)
            idle, trickle = flat["mqlite.idle_cost"], flat["mqlite.trickle_cost"]
            pickup, drain = flat["mqlite.pickup"], flat["mqlite.brokers_drain"]
            lines.append(
                f"| {label} | {db_label} "
                f"| {_n(drain['median'])}/s [{_n(drain['cpu_us_per_msg'])} µs] "
                f"| {' / '.join(f'{v:.1f}' for v in idle['samples'])} [{idle['core_pct']:.1f}%] "
                f"| {' / '.join(f'{v:.2f}' for v in trickle['samples'])} "
                f"[{trickle['cpu_us_per_task'] / 1000:.1f} ms] "
                f"| {pickup['p50']:.2f} / {pickup['p95']:.2f} / {pickup['p99']:.2f} |"
            )
    return "\n".join(lines)


BLOCKS: dict[str, tuple[str, Callable[[Data], str]]] = {
    "defaults-table": ("defaults.json", lambda d: defaults_table(d).strip()),
    "defaults-mariadb": ("defaults-mariadb.json", mariadb_defaults),
    "brokers-table": ("brokers.json", lambda d: brokers_table(d).strip()),
    "brokers-targets": ("brokers.json", brokers_targets),
    "brokers-table-morning": (
        "brokers-2026-12-07-morning.json",
        lambda d: brokers_table(d).strip(),
    ),
    "brokers-targets-morning": ("brokers-2026-12-07-morning.json", brokers_targets),
    "brokers-table-late-night": (
        "brokers-2026-12-06-late-night.json",
        lambda d: brokers_table(d).strip(),
    ),
    "brokers-targets-late-night": ("brokers-2026-12-06-late-night.json", brokers_targets),
    "idle-costs-2026-12-07": (
        IDLE_RUNS_2026_12_07[0][1],
        partial(idle_costs, IDLE_RUNS_2026_12_07),
    ),
    "idle-costs-sqlite-2026-12-07": (
        DRAIN_RUNS_2026_12_07[0][1],
        partial(idle_costs, DRAIN_RUNS_2026_12_07),
    ),
    "tasks-floor": ("tasks-floor.json", lambda d: tasks_floor_table(d).strip()),
    "brokers-table-evening": (
        "brokers-2026-12-06-evening.json",
        lambda d: brokers_table(d).strip(),
    ),
    "brokers-targets-evening": ("brokers-2026-12-06-evening.json", brokers_targets),
    "defaults-targets": ("defaults.json", defaults_targets),
    "defaults-samples": ("defaults.json", defaults_samples),
    "defaults-runs": ("defaults.json", defaults_runs),
    "defaults-runs-cpu": ("defaults.json", defaults_runs_cpu),
    "sqlite-bound": ("defaults.json", sqlite_bound),
    "postgres-bound": ("defaults.json", postgres_bound),
    "postgres-enqueue": ("defaults.json", postgres_enqueue),
    "tuned-2026-12-01": ("results-2026-12-01.json", tuned),
    "tuned-2026-12-01c": ("results-2026-12-01c.json", tuned),
    "tuned-2026-12-01b-distances": ("results-2026-12-01b.json", floor_and_peer),
    "tuned-targets": ("results-2026-12-01c.json", tuned_targets),
    "tuned-2026-11-30": ("results-2026-11-30.json", tuned),
    "before-after-2026-12-03": ("defaults-2026-12-03-before.json", before_after),
    "quick-before-after-2026-12-03": (QUICK_PAIRS[0][0], quick_before_after),
    "session-2026-12-04": (_RUN_FILE["B1"], partial(session_runs, SESSION_2026_12_04)),
    "before-after-2026-12-04": (
        _RUN_FILE["B1"],
        partial(before_after_runs, SESSION_2026_12_04, "B1 B2", "A1 A2 A3 A4"),
    ),
    "before-after-verdict-2026-12-04": (
        _RUN_FILE["B1"],
        partial(before_after_verdict_runs, SESSION_2026_12_04, "B1 B2", "A1 A2 A3 A4"),
    ),
    "otel-2026-12-04": (_RUN_FILE["A1"], otel_2026_12_04),
    "otel-verdict-2026-12-04": (_RUN_FILE["A1"], otel_verdict_2026_12_04),
    "order-2026-12-04": (_RUN_FILE["A1"], order_2026_12_04),
    "order-summary-2026-12-04": (_RUN_FILE["A1"], order_summary_2026_12_04),
    "quick-before-after-2026-12-04": (
        _RUN_FILE["QB1"],
        partial(quick_before_after_runs, SESSION_2026_12_04, QUICK_PAIRS_2026_12_04),
    ),
    "session-2026-12-05": (
        SESSION_2026_12_05[0][1],
        partial(session_runs, SESSION_2026_12_05),
    ),
    "before-after-2026-12-05": (
        SESSION_2026_12_05[0][1],
        partial(before_after_runs, SESSION_2026_12_05, "B1 B2", "A1 A2"),
    ),
    "before-after-verdict-2026-12-05": (
        SESSION_2026_12_05[0][1],
        partial(before_after_verdict_runs, SESSION_2026_12_05, "B1 B2", "A1 A2"),
    ),
    "quick-before-after-2026-12-05": (
        SESSION_2026_12_05[4][1],
        partial(quick_before_after_runs, SESSION_2026_12_05, QUICK_PAIRS_2026_12_05),
    ),
    "quick-verdict-2026-12-05": (
        SESSION_2026_12_05[4][1],
        partial(quick_verdict_runs, SESSION_2026_12_05, QUICK_PAIRS_2026_12_05),
    ),
    "quick-verdict-2026-12-04": (
        _RUN_FILE["QB1"],
        partial(quick_verdict_runs, SESSION_2026_12_04, QUICK_PAIRS_2026_12_04),
    ),
}


def render(name: str) -> str:
    """Block ``name`` as its results file renders it (the file checked first), or, for
    a run still awaited whose file is not there yet, the command that makes it."""
    source, draw = BLOCKS[name]
    if source in AWAITED and not (RESULTS / source).exists():
        text = f"Not measured yet: `{AWAITED[source]}` writes the file, then `python -m "
        text += "benchmarks report --docs` renders it here."
    else:
        text = draw(load(source))
    if not text.startswith(("|", "**")):  # prose: wrapped as the page's own paragraphs
        text = textwrap.fill(text, width=88, break_on_hyphens=False, break_long_words=False)
    return text + "\n"


def blocks(text: str) -> dict[str, str]:
    """The rendered blocks of ``text``, by name (a name twice is an error)."""
    found: dict[str, str] = {}
    for match in BLOCK.finditer(text):
        if match.group(1) in found:
            raise ValueError(f"block {match.group(1)} appears twice")
        found[match.group(1)] = match.group(2)
    return found


def write_docs(doc: Path = DOC) -> list[Path]:
    """Re-render every block of ``doc`` from its results file; the paths rewritten."""
    text = doc.read_text()
    unknown = set(blocks(text)) - set(BLOCKS)
    if unknown:
        raise ValueError(f"{doc}: blocks with no renderer: {', '.join(sorted(unknown))}")
    new = BLOCK.sub(lambda m: f"<!-- rendered: {m[1]} -->\n{render(m[1])}<!-- /rendered -->", text)
    if new == text:
        return []
    doc.write_text(new)
    return [doc]
