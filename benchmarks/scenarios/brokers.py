"""The broker peers beside django-mqlite: drain and pickup latency, every system with
its own worker command at its documented defaults (``benchmarks.brokers.systems``).

For each system, with the same N and the same task (it records its start in Redis:
``benchmarks.brokers.record``):

- ``brokers_drain``: N tasks enqueued through the system's own API (unmeasured), then
  its worker started; the clock runs from starting the worker until the N-th task has
  recorded its start (start-up included). CPU per task is the worker's whole process
  tree (its children and the children they reaped), sampled at that moment.
- ``brokers_drain_steady``: the same run, start-up excluded the same way for every
  system: the counter is polled every 5 ms, and the rate is the tasks recorded between
  its first and last observed change over the time between them.
- ``pickup``: a warm, idle worker and a warm producer; one task every 50 ms, each
  carrying the wall time it was enqueued at; p50/p95/p99 of start minus enqueue, in
  milliseconds. The producer is a process of its own: its first task (connecting,
  the first statements of a new database session or broker channel) is timed apart,
  as ``fresh_ms``, one per repeat, before a second idle pause and the measured tasks.
- ``idle_cost`` and ``trickle_cost`` (django-mqlite only: the targets are its
  worker's): in the same pickup run, the worker's transactions (counted in its
  processes, ``benchmarks.brokers.txcount``) and its process tree's CPU, over
  the size ``idle_s`` (seconds) of idling after the warm-up (per second, and as a share of one
  core), and over the pickup's tasks (per task: from before the producer starts until
  ``SETTLE_S`` after the last task's start, so its completion is in; the producer's
  first task and its idle pause are in it too, so the figure errs high).

A system whose service (Redis, RabbitMQ, PostgreSQL) does not answer is skipped with
that reason. procrastinate runs on PostgreSQL only and is measured in the PostgreSQL run.
A broker peer does not use the run's database: a run of both databases measures it once,
in the SQLite half (``ONCE``), and the report compares the PostgreSQL half with those
figures.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..brokers import record, txcount
from ..brokers.systems import ONCE, System, down, purge_amqp, systems
from ..harness import ROOT, Context, rate, reset, skipped, summary

POLL_S = 0.005
#: How long an enqueue or a drain of N may take before the run fails: django-tasks-db
#: drains 30,000 on PostgreSQL at 33-42 a second on a 2-core machine (12-15 minutes;
#: 900 s was too short on a slower machine of the same kind, 2026-12-07).
DRAIN_TIMEOUT_S = 1800
PICKUP_EVERY_S = 0.05
IDLE_S = 1.0
#: The wait after the last pickup before the trickle's count is read (its completion,
#: and a look of the counter: ``EVERY_S``).
SETTLE_S = 4 * txcount.EVERY_S


def _env(system: System) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, **system.env}


def _empty(system: System) -> None:
    record.reset()
    if "amqp" in system.needs:
        purge_amqp()
    if system.name in ("mqlite", "tasks_db", "ox"):
        reset()  # every Tasks backend's table
    if system.name == "procrastinate":
        _procrastinate_ready(truncate=True)


def _procrastinate_ready(*, truncate: bool = False) -> None:
    """procrastinate's database with its schema applied (once), its jobs emptied."""
    import psycopg

    from ..brokers.apps.procrastinate_app import DSN

    base, name = DSN.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as c:
        if not c.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            c.execute(f'CREATE DATABASE "{name}"')
    with psycopg.connect(DSN, autocommit=True) as c:
        exists = c.execute("SELECT to_regclass('procrastinate_jobs')").fetchone()
        if exists is None or exists[0] is None:
            subprocess.run(  # noqa: S603 - the peer's own command
                [*systems("postgres")[-1].worker[:2], "schema", "--apply"],
                env=_env(systems("postgres")[-1]),
                check=True,
                capture_output=True,
            )
        if truncate:
            c.execute("TRUNCATE procrastinate_jobs CASCADE")


def _produce(
    system: System, n: int, every: float = 0.0, warm: float | None = None
) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "benchmarks.brokers.produce", system.name, str(n)]
    if every:
        cmd += ["--every", str(every)]
    if warm is not None:
        cmd += ["--warm", str(warm)]
    return subprocess.Popen(cmd, env=_env(system), stdout=subprocess.DEVNULL)  # noqa: S603


class Worker:
    """The system's worker process, in a session of its own (stopped as a group)."""

    def __init__(self, system: System, env: dict[str, str] | None = None) -> None:
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(  # noqa: S603 - the system's own worker command
            system.worker,
            env={**_env(system), **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=self.err,
            start_new_session=True,
        )

    def cpu_s(self) -> float:
        """CPU seconds of the worker's process tree so far, reaped children included."""
        import psutil

        root = psutil.Process(self.proc.pid)
        total = 0.0
        for p in [root, *root.children(recursive=True)]:
            try:
                t = p.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += t.user + t.system + t.children_user + t.children_system
        return total

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"{self.proc.args!r} exited {self.proc.returncode}: {self.tail()}")

    def tail(self) -> str:
        self.err.seek(0)
        return self.err.read().decode(errors="replace")[-2000:]

    def stop(self) -> None:
        """SIGTERM to the group (each system's documented warm shutdown), then SIGKILL."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.err.close()


def _wait_for(worker: Worker, count: int, timeout_s: float, seen: list[tuple[float, int]]) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        done = record.done()
        if not seen or done != seen[-1][1]:
            seen.append((time.perf_counter(), done))
        if done >= count:
            return
        worker.check_alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{worker.proc.args!r}: {done} of {count} in {timeout_s}s")
        time.sleep(POLL_S)


def _drain(system: System, n: int, steady: list[float]) -> tuple[float, float]:
    _empty(system)
    producer = _produce(system, n)
    if producer.wait(DRAIN_TIMEOUT_S) != 0:
        raise RuntimeError(f"{system.name}: enqueueing {n} failed")
    if record.done():
        raise RuntimeError(f"{system.name}: tasks ran before the worker started")
    seen: list[tuple[float, int]] = []
    start = time.perf_counter()
    worker = Worker(system)
    try:
        _wait_for(worker, n, DRAIN_TIMEOUT_S, seen)
        seconds = time.perf_counter() - start
        cpu = worker.cpu_s()
    finally:
        worker.stop()
    changes = [s for s in seen if s[1] > 0]
    if len(changes) >= 2:
        (t0, d0), (t1, d1) = changes[0], changes[-1]
        steady.append(rate(d1 - d0, t1 - t0))
    return rate(n, seconds), cpu / n * 1e6


class Cost:
    """A worker's transactions (counted in its processes, when it counts) and its
    process tree's CPU seconds, read at the start of a window and taken at its end."""

    def __init__(self, worker: Worker, counts: Path | None) -> None:
        self.worker, self.counts = worker, counts
        self.tx, self.cpu = self._read()

    def _read(self) -> tuple[int, float]:
        return (txcount.total(self.counts) if self.counts else 0), self.worker.cpu_s()

    def since(self) -> tuple[int, float]:
        """Transactions and CPU seconds since this window started."""
        tx, cpu = self._read()
        return tx - self.tx, cpu - self.cpu


def _pickup_once(
    system: System, samples: int, costs: dict[str, list[float]] | None = None, idle_s: float = 0
) -> tuple[float, list[float]]:
    """One pickup run: the latency (ms) of a fresh producer's first task, and those of
    ``samples`` tasks, one every 50 ms, from that producer, warm, into a warm, idle
    worker. With ``costs``, the worker counts its transactions, and its idle and
    trickle costs are appended there (the module's docstring)."""
    _empty(system)
    with tempfile.TemporaryDirectory(prefix="bench-tx-") as tmp:
        counts = Path(tmp) if costs is not None else None
        worker = Worker(system, {txcount.ENV: tmp} if counts else None)
        try:
            # Warm: the worker has started and run one task before the clock matters.
            _produce(system, 1, PICKUP_EVERY_S).wait(120)
            _wait_for(worker, 1, 120, [])
            time.sleep(IDLE_S)  # idle, as a worker between bursts is
            if costs is not None:
                idle = Cost(worker, counts)
                time.sleep(idle_s)
                tx, cpu = idle.since()
                costs["idle_tx_per_s"].append(tx / idle_s)
                costs["idle_core_pct"].append(cpu / idle_s * 100)
            trickle = Cost(worker, counts)
            # The producer's own first task, then IDLE_S again, then the samples.
            producer = _produce(system, samples, PICKUP_EVERY_S, warm=IDLE_S)
            _wait_for(worker, samples + 2, samples * PICKUP_EVERY_S + 240, [])
            if producer.wait(60) != 0:
                raise RuntimeError(f"{system.name}: the pickup producer failed")
            if costs is not None:
                time.sleep(SETTLE_S)
                tx, cpu = trickle.since()
                costs["trickle_tx_per_task"].append(tx / (samples + 1))
                costs["trickle_cpu_us_per_task"].append(cpu / (samples + 1) * 1e6)
        finally:
            worker.stop()
    ms = [v * 1000 for v in record.latencies()[1:]]
    if len(ms) != samples + 1:
        raise RuntimeError(f"{system.name}: {len(ms)} latencies of {samples + 1}")
    return ms[0], ms[1:]


def _percentile(ordered: list[float], p: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def _pickup(
    ctx: Context, system: System, samples: int, costs: dict[str, list[float]] | None = None
) -> dict[str, Any]:
    """The median of each repeat's p50, with p50/p95/p99 over every latency measured,
    and each repeat's three slowest pickups as [which task of the run (0: the first),
    milliseconds] (what the p99 of a run is: its second slowest of 200), and each
    repeat's fresh producer's first pickup (``fresh_ms``, not among the others). With
    ``costs``, each repeat's idle and trickle costs are appended there."""
    medians: list[float] = []
    everything: list[float] = []
    slowest: list[list[list[float]]] = []
    fresh: list[float] = []
    for _ in range(ctx.repeat):
        idle_s = ctx.size("idle_s") if costs is not None else 0
        first, run = _pickup_once(system, samples, costs, idle_s)
        fresh.append(round(first, 2))
        top = sorted(range(len(run)), key=run.__getitem__)[-3:]
        slowest.append([[i, round(run[i], 2)] for i in reversed(top)])
        ms = sorted(run)
        medians.append(_percentile(ms, 0.5))
        everything += ms
    everything.sort()
    return summary(
        medians,
        "ms",
        n=samples,
        p50=_percentile(everything, 0.5),
        p95=_percentile(everything, 0.95),
        p99=_percentile(everything, 0.99),
        every_ms=PICKUP_EVERY_S * 1000,
        slowest=slowest,
        fresh_ms=fresh,
    )


def brokers(ctx: Context) -> dict[str, Any]:
    """Every system's drain, the systems alternated within each repeat (so a change in
    the machine's load falls on all of them alike), then every system's pickup."""
    n = ctx.size("brokers")
    samples = ctx.size("pickup")
    idle_s = ctx.size("idle_s")
    out: dict[str, Any] = {}
    live = []
    only = [n for n in os.environ.get("BENCH_BROKERS", "").split(",") if n]
    run_dbs = os.environ.get("BENCH_RUN_DBS", ctx.db).split(",")
    for system in systems(ctx.db):
        if only and system.name not in only:  # development runs: BENCH_BROKERS=a,b
            continue
        why = down(system)
        if why is None and not system.uses_db and ctx.db != "sqlite" and "sqlite" in run_dbs:
            why = ONCE
        if why is None:
            live.append(system)
            continue
        for key in ("brokers_drain", "brokers_drain_steady", "pickup"):
            out[f"{system.name}.{key}"] = skipped(why)
    if any(s.name == "procrastinate" for s in live):
        _procrastinate_ready()
    rates: dict[str, list[float]] = {s.name: [] for s in live}
    cpus: dict[str, list[float]] = {s.name: [] for s in live}
    steady: dict[str, list[float]] = {s.name: [] for s in live}
    for _ in range(ctx.repeat):
        for system in list(live):
            try:
                r, cpu = _drain(system, n, steady[system.name])
            except RuntimeError as exc:
                # One system that does not finish (its drain past the timeout, its
                # worker gone) is reported as such; the others are still measured.
                live.remove(system)
                for key in ("brokers_drain", "brokers_drain_steady", "pickup"):
                    out[f"{system.name}.{key}"] = skipped(f"{DID_NOT_FINISH}: {exc}")
                continue
            rates[system.name].append(r)
            cpus[system.name].append(cpu)
    for system in live:
        out[f"{system.name}.brokers_drain"] = summary(
            rates[system.name],
            "tasks/s",
            n=n,
            cpu_us_per_msg=statistics.median(cpus[system.name]),
        )
        st = steady[system.name]
        out[f"{system.name}.brokers_drain_steady"] = (
            summary(st, "tasks/s", n=n) if st else skipped("too fast to observe two changes")
        )
    for system in live:
        costs: dict[str, list[float]] | None = None
        if system.name == "mqlite":
            costs = {k: [] for k in COST_KEYS}
        out[f"{system.name}.pickup"] = _pickup(ctx, system, samples, costs)
        if costs is not None:
            out[f"{system.name}.idle_cost"] = summary(
                costs["idle_tx_per_s"],
                "transactions/s",
                n=idle_s,
                core_pct=statistics.median(costs["idle_core_pct"]),
            )
            out[f"{system.name}.trickle_cost"] = summary(
                costs["trickle_tx_per_task"],
                "transactions/task",
                n=samples + 1,
                every_ms=PICKUP_EVERY_S * 1000,
                cpu_us_per_task=statistics.median(costs["trickle_cpu_us_per_task"]),
            )
    return out


DID_NOT_FINISH = "did not finish"
COST_KEYS = ("idle_tx_per_s", "idle_core_pct", "trickle_tx_per_task", "trickle_cpu_us_per_task")
