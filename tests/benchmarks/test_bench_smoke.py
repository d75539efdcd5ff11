"""The benchmark harness still runs end to end (tiny sizes, SQLite). Asserts shape,
never timing: numbers are for ``python -m benchmarks``, not for the test suite."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
DOC = ROOT / "docs" / "benchmark.md"


@pytest.mark.slow
def test_bench_harness_runs_quick_scenarios(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    env = {**os.environ, "BENCH_SIZES": json.dumps(_TINY), "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "run",
            "--db",
            "sqlite",
            "--quick",
            "--repeat",
            "1",
            "--out",
            str(out),
            "--scenario",
            "produce_single",
            "produce_batch",
            "drain",
            "claim_latency",
            "raw_floor",
            "tasks_floor",
            "write_amplification",
            "tasks_drain",
            "defaults",
        ],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=240,
        capture_output=True,
    )
    data = json.loads(out.read_text())
    sqlite = data["results"]["sqlite"]
    assert data["machine"]["cores"]
    assert len(data["machine"]["load_before"]) == 3
    # Whether the run had the [otel] extra is recorded (None when not installed).
    from importlib import metadata

    try:
        otel: str | None = metadata.version("opentelemetry-api")
    except metadata.PackageNotFoundError:
        otel = None
    assert data["machine"]["opentelemetry_api"] == otel
    for key in (
        "mqlite.produce_single",
        "mqlite.produce_batch_256",
        "mqlite.drain_1proc",
        "mqlite.claim_1000",
        "sqlite3.floor_drain_batch_64",
        "mqlite.bytes_per_msg_batch64",
        "mqlite.defaults_drain",
        "mqlite.enqueue_txn",
        "mqlite.send_single",
    ):
        group = next(g for g in sqlite.values() if isinstance(g, dict) and key in g)
        result = group[key]
        assert result["min"] <= result["median"] <= result["max"], key
    assert "mqlite.tasks_drain_1proc" in sqlite["tasks_drain"]
    # Measured where Redis and its client are there, else skipped with the reason.
    assert set(sqlite["tasks_floor"]) == {"django.tasks_floor", "django.record_only"}
    from benchmarks.report import tables

    assert "Tasks drain, start-up included" in tables(data)


_TINY = {
    "single": 50,
    "batch": 512,
    "drain": 300,
    "tasks_drain": 20,
    "end_to_end": 200,
    "backlogs": [1000],
    "tasks_backlogs": [200],
    "blocked": 300,
    "rss": 500,
    "writes": 200,
    "defaults": 100,
    "defaults_single": 20,
}


def test_the_docs_defaults_table_is_the_results_file() -> None:
    """docs/benchmark.md shows the defaults table of benchmarks/results/defaults.json as
    ``python -m benchmarks report`` renders it: every row from that one run, none edited."""
    from benchmarks.report import defaults_table

    data = json.loads((RESULTS / "defaults.json").read_text())
    table = defaults_table(data).strip()
    assert table.count("| Tasks drain, steady state |") == len(data["results"])
    assert table in DOC.read_text()


def test_every_rendered_block_of_the_docs_is_what_its_results_file_renders() -> None:
    """Each ``<!-- rendered: NAME -->`` block of docs/benchmark.md (tables, targets, the
    prose ratios) is exactly what ``benchmarks.render`` draws from its results file:
    ``python -m benchmarks report --docs`` rewrites them."""
    from benchmarks.render import BLOCKS, blocks, render

    found = blocks(DOC.read_text())
    assert set(found) == set(BLOCKS)
    for name, text in found.items():
        assert text == render(name), f"block {name} differs: python -m benchmarks report --docs"


# A ratio with decimals (7.1×, 0.9x) is a measurement; whole multiples (10×, 2×) are the
# targets' thresholds, written by hand on purpose.
HAND_RATIO = re.compile(r"\b\d+\.\d+ ?[×x](?![\w-])|\bat \d\.\d+ of\b")


def test_no_ratio_is_written_by_hand_outside_a_rendered_block() -> None:
    from benchmarks.render import BLOCK

    outside = BLOCK.sub("", DOC.read_text())
    assert HAND_RATIO.findall(outside) == []
    assert HAND_RATIO.search("our 8.4× django-tasks-db, at 0.50 of the floor")  # it can find


def _cited() -> set[str]:
    return set(re.findall(r"\b((?:defaults|results)[\w.-]*\.json)\b", DOC.read_text()))


def test_every_results_file_the_docs_cite_passes_the_check() -> None:
    """Every committed results file the page names is what the harness produces (but the
    first full run, which the page names as the one that fails, and says why)."""
    from benchmarks.render import AWAITED
    from benchmarks.results_check import problems

    cited = _cited()
    assert {"defaults.json", "results-2026-12-01c.json"} <= cited
    for name in sorted(cited):
        if name in AWAITED and not (RESULTS / name).exists():
            continue  # a run still to be made: its block says so (render.AWAITED)
        data = json.loads((RESULTS / name).read_text())
        if name == "results.json":
            assert any("sizes" in p for p in problems(data))
        else:
            assert problems(data) == [], name


def test_db_choices() -> None:
    from benchmarks.__main__ import databases

    assert databases("both") == ["sqlite", "postgres"]
    assert databases("all") == ["sqlite", "postgres", "mariadb"]
    assert databases("mariadb") == ["mariadb"]


def test_the_mariadb_block_says_how_to_run_it_until_its_file_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/benchmark.md's MariaDB block names the command while its results file is
    missing, and renders the table and its targets from the file once it is there."""
    from benchmarks import render
    from benchmarks.sizes import sizes_for

    monkeypatch.setattr(render, "RESULTS", tmp_path)
    waiting = render.render("defaults-mariadb")
    assert waiting.startswith("Not measured yet: `python -m benchmarks run --db mariadb")
    data = _defaults()  # PostgreSQL's half, relabelled: the shape a MariaDB run writes
    data["results"] = {"mariadb": data["results"]["postgres"]}
    data["sizes"] = {"mariadb": sizes_for("mariadb", False, overrides={})}
    (tmp_path / "defaults-mariadb.json").write_text(json.dumps(data))
    text = render.render("defaults-mariadb")
    assert text.startswith("**mariadb** (N = 3000)")
    assert "| target | MariaDB |" in text
    # MariaDB's targets: the steady drain, and every enqueue ahead (not 2x)
    assert "| Tasks enqueue in one transaction ahead of django-tasks-db | 1.4× |" in text
    assert "start-up included |" not in text.split("| target |")[1]


def _defaults() -> dict[str, Any]:
    return json.loads((RESULTS / "defaults.json").read_text())


def _entry(data: dict[str, Any], key: str, db: str = "sqlite") -> dict[str, Any]:
    entry: dict[str, Any] = data["results"][db]["defaults"][key]
    return entry


def _double_median(data: dict[str, Any]) -> None:
    _entry(data, "mqlite.defaults_drain")["median"] *= 2


def _drop_sample(data: dict[str, Any]) -> None:
    _entry(data, "tasks_db.enqueue_txn")["samples"].pop()


def _raise_max(data: dict[str, Any]) -> None:
    _entry(data, "ox.defaults_drain_steady", "postgres")["max"] += 1


def _other_n(data: dict[str, Any]) -> None:
    _entry(data, "mqlite.send_single")["n"] = 3000


def _other_sizes(data: dict[str, Any]) -> None:
    data["sizes"]["postgres"]["defaults"] = 1000


def _other_repeat(data: dict[str, Any]) -> None:
    data["repeat"] = 5


def _stored_ratio(data: dict[str, Any]) -> None:
    _entry(data, "mqlite.defaults_drain")["ratio"] = 7.1


@pytest.mark.parametrize(
    "tamper",
    [
        _double_median,
        _drop_sample,
        _raise_max,
        _other_n,
        _other_sizes,
        _other_repeat,
        _stored_ratio,
    ],
)
def test_a_tampered_results_file_fails_the_check(tamper: Any) -> None:
    """A hand-doubled median with its samples left as they were, and every other edit a
    run of the harness would not produce, fails ``results_check``."""
    from benchmarks.results_check import problems

    data = _defaults()
    assert problems(data) == []
    tamper(data)
    assert problems(data)


def test_report_refuses_a_file_that_fails_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from benchmarks.__main__ import main

    data = _defaults()
    good = tmp_path / "good.json"
    good.write_text(json.dumps(data))
    assert main(["report", str(good)]) == 0
    _double_median(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert main(["report", str(bad)]) == 1
    assert "median" in capsys.readouterr().err


def _brokers_file(n: int) -> dict[str, Any]:
    from benchmarks.harness import summary
    from benchmarks.sizes import sizes_for

    results = {
        "mqlite.brokers_drain": summary([1000.0], "tasks/s", n=n, cpu_us_per_msg=900.0),
        "mqlite.brokers_drain_steady": summary([1400.0], "tasks/s", n=n),
        "mqlite.pickup": summary([8.0], "ms", n=200, p50=8.0, p95=12.0, p99=16.0, every_ms=50.0),
        "celery_redis.brokers_drain": summary([250.0], "tasks/s", n=n, cpu_us_per_msg=2000.0),
        "celery_redis.brokers_drain_steady": summary([345.0], "tasks/s", n=n),
        "celery_redis.pickup": summary(
            [4.5], "ms", n=200, p50=4.5, p95=5.0, p99=5.8, every_ms=50.0, fresh_ms=[7.08]
        ),
        "rq.brokers_drain": {"skipped": "redis does not answer on 127.0.0.1:6379"},
    }
    return {
        "repeat": 1,
        "quick": False,
        "sizes": {"sqlite": sizes_for("sqlite", False, overrides={})},
        "results": {"sqlite": {"brokers": results}},
    }


def test_a_brokers_results_file_checks_and_renders_its_table() -> None:
    from benchmarks.report import brokers_table
    from benchmarks.results_check import problems

    data = _brokers_file(30_000)
    assert problems(data) == []
    table = brokers_table(data)
    assert "| Celery, Redis | 250 [2,000 µs CPU] | 345 | 4.5 / 5.0 / 5.8 | 7.1 | 4.0x |" in table
    assert "| django-mqlite | 1,000 [900 µs CPU] | 1,400 | 8.0 / 12.0 / 16.0 | - |  |" in table
    assert "| RQ, Redis | skipped | - | - | - |  |" in table


def test_a_tasks_floor_file_checks_and_renders_each_worker_above_the_floor() -> None:
    from benchmarks.harness import summary
    from benchmarks.report import tables, tasks_floor_table
    from benchmarks.results_check import problems

    data = _brokers_file(30_000)
    data["results"]["sqlite"]["tasks_floor"] = {
        "django.tasks_floor": summary([3000.0], "tasks/s", n=30_000, cpu_us_per_msg=260.0),
        "django.record_only": summary([7000.0], "tasks/s", n=30_000, cpu_us_per_msg=120.0),
    }
    assert problems(data) == []
    table = tasks_floor_table(data)
    assert "| the floor: Django's own steps for a task (one thread, no queue) " in table
    assert "| 3,000 [260 µs CPU] | | |" in table
    assert "| the task's own record alone | 7,000 [120 µs CPU] | | |" in table
    # Each worker of the brokers drain in the same file: its CPU a task less the record,
    # and for a Django Tasks backend less the floor.
    mqlite = "| django-mqlite's worker, its brokers drain | 1,000 [900 µs CPU] | 780 µs | 640 µs |"
    assert mqlite in table
    celery = "| Celery, Redis's worker, its brokers drain | 250 [2,000 µs CPU] | 1,880 µs |  |"
    assert celery in table
    assert table.strip() in tables(data)
    # At another N it is refused; without the scenario there is no table.
    data["results"]["sqlite"]["tasks_floor"]["django.tasks_floor"]["n"] = 3_000
    assert any("django.tasks_floor: n is 3000" in p for p in problems(data))
    assert tasks_floor_table(_brokers_file(30_000)) == ""


def test_the_brokers_targets_show_a_fresh_producers_first_pickup_beside_the_target() -> None:
    from benchmarks.render import brokers_targets

    data = _brokers_file(30_000)
    targets = brokers_targets(data)
    assert "| pickup p50 / p99 (a warm producer) no worse than Celery on Redis | 8.0 / 16.0 " in (
        targets
    )
    assert "first pickup, against Celery on Redis's) | not measured |" in targets
    data["results"]["sqlite"]["brokers"]["mqlite.pickup"]["fresh_ms"] = [5.0, 9.0, 6.0]
    assert "first pickup, against Celery on Redis's) | 6.0 ms against 7.1: no worse |" in (
        brokers_targets(data)
    )


def test_the_brokers_targets_show_an_idle_and_a_trickling_workers_costs() -> None:
    from benchmarks.harness import summary
    from benchmarks.render import brokers_targets
    from benchmarks.results_check import problems

    data = _brokers_file(30_000)
    assert "at most 1.5 transactions a task | not measured |" in brokers_targets(data)
    results = data["results"]["sqlite"]["brokers"]
    results["mqlite.idle_cost"] = summary([1.1], "transactions/s", n=10, core_pct=0.4)
    results["mqlite.trickle_cost"] = summary(
        [2.2], "transactions/task", n=201, every_ms=50.0, cpu_us_per_task=5200.0
    )
    assert problems(data) == []
    targets = brokers_targets(data)
    assert "1% of a core | 1.1 a second, 0.40% of a core: met |" in targets
    assert "1.5 transactions a task | 2.20 a task (5.2 ms of CPU a task): not met |" in targets
    results["mqlite.idle_cost"] = summary([3.2], "transactions/s", n=10, core_pct=0.4)
    assert "3.2 a second, 0.40% of a core: not met" in brokers_targets(data)
    results["mqlite.trickle_cost"]["n"] = 200  # the pickup's 200 and the producer's first
    assert any("mqlite.trickle_cost: n is 200" in p for p in problems(data))


def test_the_brokers_targets_show_the_bytes_a_message_writes_from_the_same_file() -> None:
    from benchmarks.harness import summary
    from benchmarks.render import brokers_targets
    from benchmarks.results_check import problems

    data = _brokers_file(30_000)
    assert "at most django-tasks-db's | not measured |" in brokers_targets(data)
    writes = data["sizes"]["sqlite"]["writes"]
    data["results"]["sqlite"]["write_amplification"] = {
        "mqlite.bytes_per_msg_batch1": summary([70136.0], "bytes/msg", n=writes // 10),
        "tasks_db.bytes_per_task_batch1": summary([33000.0], "bytes/task", n=writes // 10),
    }
    assert problems(data) == []
    assert "at most django-tasks-db's | 70,136 B against 33,000: not met |" in (
        brokers_targets(data)
    )


def test_a_brokers_result_at_another_n_is_refused() -> None:
    from benchmarks.results_check import problems

    found = problems(_brokers_file(3_000))
    assert any("mqlite.brokers_drain: n is 3000, the harness uses 30000" in p for p in found)


def test_a_pickup_producer_warms_up_before_the_measured_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``produce --warm``: one timed task of its own, waited for until a worker recorded
    it, then the idle pause, and only then the measured tasks."""
    from benchmarks.brokers import produce, record

    events: list[tuple[str, Any]] = []
    recorded = [1]  # the worker's own warm-up task, already recorded

    def send(enqueued_at: float | None) -> None:
        events.append(("send", enqueued_at))

    def done() -> int:
        # The worker records the producer's task on the third look after it was sent.
        sent = [i for i, e in enumerate(events) if e[0] == "send"]
        if sent and sum(1 for e in events[sent[0] :] if e[0] == "look") >= 2:
            recorded[0] = 2
        events.append(("look", None))
        return recorded[0]

    monkeypatch.setattr(record, "done", done)
    monkeypatch.setattr(produce.time, "sleep", lambda s: events.append(("sleep", s)))
    produce._warm_up(send, 1.5)

    kinds = [e[0] for e in events]
    assert kinds[0] == "look"  # the count before
    assert kinds[1] == "send" and isinstance(events[1][1], float)  # timed
    assert kinds.count("send") == 1
    assert events[-1] == ("sleep", 1.5)  # the idle pause, after the task was recorded
    assert kinds[-2] == "look" and recorded[0] == 2
    assert kinds.count("look") == 4  # it waited: looked until the task was recorded


def test_a_system_that_does_not_finish_its_drain_leaves_the_others_measured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A peer's drain past the timeout (django-tasks-db on PostgreSQL, 2026-12-07) is
    reported for that peer; the scenario goes on with the others (it stopped at it)."""
    from benchmarks.brokers.systems import System
    from benchmarks.harness import Context
    from benchmarks.scenarios import brokers

    fast = System("huey", ["huey"], (), "huey")
    slow = System("tasks_db", ["db_worker"], (), "django_tasks_db", uses_db=True)
    monkeypatch.setattr(brokers, "systems", lambda db: [fast, slow])
    monkeypatch.setattr(brokers, "down", lambda system: None)

    def drain(system: System, n: int, steady: list[float]) -> tuple[float, float]:
        if system is slow:
            raise RuntimeError("['db_worker']: 29346 of 30000 in 1800s")
        steady.append(1500.0)
        return 1400.0, 600.0

    monkeypatch.setattr(brokers, "_drain", drain)
    monkeypatch.setattr(brokers, "_pickup", lambda ctx, system, samples, costs: {"ran": 1})
    ctx = Context(
        db="sqlite", quick=True, repeat=2, sizes={"brokers": 10, "pickup": 4, "idle_s": 1}
    )
    out = brokers.brokers(ctx)
    assert out["huey.brokers_drain"]["samples"] == [1400.0, 1400.0]
    assert out["huey.pickup"] == {"ran": 1}
    for key in ("brokers_drain", "brokers_drain_steady", "pickup"):
        assert out[f"tasks_db.{key}"] == {
            "skipped": "did not finish: ['db_worker']: 29346 of 30000 in 1800s"
        }


def test_a_fresh_producers_first_pickup_is_reported_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from benchmarks.harness import Context
    from benchmarks.scenarios import brokers

    runs = iter([(40.0, [1.0, 2.0, 3.0, 4.0]), (30.0, [2.0, 2.0, 2.0, 9.0])])
    monkeypatch.setattr(brokers, "_pickup_once", lambda system, samples, costs, idle_s: next(runs))
    ctx = Context(db="sqlite", quick=True, repeat=2)
    got = brokers._pickup(ctx, object(), 4)  # type: ignore[arg-type]
    assert got["fresh_ms"] == [40.0, 30.0]
    assert got["p99"] == 9.0  # the slowest of the measured eight, not the fresh 40
    assert got["slowest"][0][0] == [3, 4.0]


def test_the_tasks_floor_runs_each_task_through_djangos_immediate_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scenario's clock covers n tasks, each run by Django's own backend: its task
    is called once each (and WARM more before the clock), task_started and
    task_finished are sent each time; Redis is not needed to see it (the record is
    counted here instead)."""
    from benchmarks.brokers import record
    from benchmarks.harness import Context
    from benchmarks.scenarios import tasks_floor
    from django_mqlite.tasks.compat import task_finished, task_started

    calls: list[object] = []
    signals: list[str] = []
    monkeypatch.setattr(record, "started", lambda enqueued_at=None: calls.append(enqueued_at))
    monkeypatch.setattr(record, "reset", lambda: None)
    monkeypatch.setattr(tasks_floor.socket, "create_connection", lambda *a, **k: io.BytesIO())
    monkeypatch.setattr(tasks_floor.importlib.util, "find_spec", lambda name: object())
    # The bench project's task, imported afresh where its "default" backend takes it.
    import django
    from django.test import override_settings

    framework = "django_tasks" if django.VERSION < (6, 0) else "django.tasks"
    immediate = {"BACKEND": f"{framework}.backends.immediate.ImmediateBackend"}
    monkeypatch.delitem(sys.modules, "benchmarks.benchproject.noop.tasks", raising=False)
    with override_settings(TASKS={"default": immediate}):
        import benchmarks.benchproject.noop.tasks as noop

    monkeypatch.setattr(noop, "started", record.started)

    def on(name: str) -> Any:
        return lambda sender, task_result, **kw: signals.append(name)

    started, finished = on("started"), on("finished")
    task_started.connect(started, weak=False)
    task_finished.connect(finished, weak=False)
    try:
        out = tasks_floor.tasks_floor(Context("sqlite", True, 2, {"brokers": 40}))
    finally:
        task_started.disconnect(started)
        task_finished.disconnect(finished)
    floor, alone = out["django.tasks_floor"], out["django.record_only"]
    assert floor["n"] == alone["n"] == 40 and len(floor["samples"]) == 2
    assert floor["cpu_us_per_msg"] > 0 and floor["median"] > 0
    per_repeat = 2 * (40 + tasks_floor.WARM)  # the backend's task, then the record alone
    assert len(calls) == 2 * per_repeat
    assert signals.count("started") == signals.count("finished") == 2 * (40 + tasks_floor.WARM)
