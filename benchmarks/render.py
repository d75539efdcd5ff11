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
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .plot import flatten
from .report import SYSTEMS, defaults_table, tables
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


def defaults_targets(data: Data) -> str:
    """The targets for the defaults, each cell a ratio of medians (or the rates)."""
    n = data["sizes"]["sqlite"]["defaults"]
    rows = [  # (label, key, peer, at least)
        (f"Tasks drain ≥ 10× django-tasks-db, N = {n:,}, start-up included",
         "defaults_drain", "tasks_db", 10),
        ("… ≥ 10× django-ox", "defaults_drain", "ox", 10),
        ("… as a steady-state rate, ≥ 10× django-tasks-db", "defaults_drain_steady",
         "tasks_db", 10),
        ("… as a steady-state rate, ≥ 10× django-ox", "defaults_drain_steady", "ox", 10),
        ("Tasks enqueue in one transaction ≥ 2× django-tasks-db", "enqueue_txn", "tasks_db", 2),
    ]  # fmt: skip
    lines = ["| target | SQLite | PostgreSQL |", "|---|---|---|"]
    for label, key, peer, least in rows:
        cells = []
        for db in ("sqlite", "postgres"):
            r = _ratio(data, db, f"mqlite.{key}", f"{peer}.{key}")
            cells.append(_x(r) if r >= least else f"**{_x(r)}: missed**")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    cells = []
    for db in ("sqlite", "postgres"):
        ours = _med(data, db, "mqlite.send_single")
        peers = [_med(data, db, f"{p}.enqueue_single") for p in ("tasks_db", "ox")]
        text = f"{_n(ours)} vs {_n(peers[0])} and {_n(peers[1])}"
        cells.append(text if ours > max(peers) else f"**{text}: missed**")
    lines.append("| `mq.send` in autocommit ahead of every peer's single enqueue | "
                 + " | ".join(cells) + " |")  # fmt: skip
    return "\n".join(lines)


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


def quick_before_after(_: Data) -> str:
    """Each django-mqlite row and raw floor of the quick tuned runs: after ÷ before in
    each pair (the unchanged floors show what the machine did between the runs)."""
    pairs = [(load(b), load(a)) for b, a in QUICK_PAIRS]
    lines = [
        "| database | result | unit | before (pair 1) | after ÷ before: pair 1 / pair 2 |",
        "|---|---|---|---|---|",
    ]
    for db, label in (("sqlite", "SQLite"), ("postgres", "PostgreSQL")):
        first = _flat(pairs[0][0], db)
        for key, summary in first.items():
            if not key.startswith(("mqlite.", "sqlite3.", "psycopg.")) or "median" not in summary:
                continue
            cells = []
            for before, after in pairs:
                was, now = _med(before, db, key), _med(after, db, key)
                cells.append(f"{now / was:.2f}" if was else "-")
            lines.append(
                f"| {label} | `{key}` | {summary['unit']} | {summary['median']:,.1f} "
                f"| {' / '.join(cells)} |"
            )
    return "\n".join(lines)


BLOCKS: dict[str, tuple[str, Callable[[Data], str]]] = {
    "defaults-table": ("defaults.json", lambda d: defaults_table(d).strip()),
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
}


def render(name: str) -> str:
    """Block ``name`` as its results file renders it (the file checked first)."""
    source, draw = BLOCKS[name]
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
