"""The nemesis of the fault suite: a seeded schedule of faults against the fleet and the
database, one every few seconds, each recorded with its time and victim.

Faults: SIGKILL of a ``runworker`` (a parent, or one forked child of ``--processes``),
SIGKILL of a producer (often mid-transaction: it is always in one or about to be), SIGSTOP
of a worker past its leases; on PostgreSQL ``pg_terminate_backend`` of every backend of
this test's database (never another database's) and, in the long form only, a restart of
the whole server; on SQLite a foreign process that takes the write lock and is SIGKILLed
while holding it. Each killed process is restarted with the same arguments.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import DatabaseError, connection

from tests.support import dbfaults

#: The PostgreSQL cluster the long form restarts (``pg_ctlcluster`` version and name,
#: ``MQLITE_FAULTS_PG_CLUSTER``, with ``PGPORT`` pointing the tests at it): a private
#: one. Unset, the long form restarts nothing: the default server is shared with every
#: other user of the machine.
PG_CLUSTER = os.environ.get("MQLITE_FAULTS_PG_CLUSTER", "").split() or None


def pg_ctl(action: str, timeout_s: float = 180) -> subprocess.CompletedProcess[bytes]:
    assert PG_CLUSTER is not None, "MQLITE_FAULTS_PG_CLUSTER names no private cluster"
    return subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", *PG_CLUSTER, action, "-m", "fast"],
        capture_output=True,
        timeout=timeout_s,
        check=False,
    )


HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("CREATE TABLE IF NOT EXISTS reliability_lockhold (x integer)")
conn.execute("INSERT INTO reliability_lockhold VALUES (1)")
print("held", flush=True)
time.sleep(600)
"""


@dataclass
class Member:
    """A process of the fleet and how to start it again."""

    kind: str  # "worker" or "producer"
    args: tuple[str, ...]
    command: str
    proc: subprocess.Popen[bytes]


@dataclass
class Nemesis:
    fleet: Any
    members: list[Member]
    rng: random.Random
    lock_s: float
    restarts: bool = False
    log: list[dict[str, Any]] = field(default_factory=list)
    #: Every freeze of a worker past its leases: its pids, when they were certainly
    #: stopped (epoch ms, read after the SIGSTOPs were sent and a database round trip
    #: later) and when the first SIGCONT was sent (epoch ms, read before it).
    freezes: list[dict[str, Any]] = field(default_factory=list)
    #: Seconds from each server restart's end (the server up again) until the first
    #: completion after it.
    recovery_s: list[float] = field(default_factory=list)
    completed: Callable[[], int] | None = None
    #: Sends a burst of messages (a backlog for the workers to prefetch).
    burst: Callable[[], None] | None = None

    def kinds(self) -> list[str]:
        kinds = ["sigkill-worker", "sigkill-child", "sigkill-producer"]
        kinds += ["sigstop-worker", "sigstop-worker"]
        if dbfaults.has_sessions(connection):
            kinds += ["pg-terminate"] * 3  # every session ended (MariaDB: KILL)
        else:
            kinds += ["sqlite-lock-holder-killed"]
        return kinds

    def run(self, duration_s: float, every_s: tuple[float, float], restart_at: list[float]) -> None:
        """Inject faults for ``duration_s``; server restarts at those fractions of it."""
        t0 = time.monotonic()
        pending_restarts = sorted(restart_at) if self.restarts else []
        while (elapsed := time.monotonic() - t0) < duration_s:
            time.sleep(self.rng.uniform(*every_s))
            if pending_restarts and elapsed >= pending_restarts[0] * duration_s:
                pending_restarts.pop(0)
                self.inject("pg-restart")
            else:
                self.inject(self.rng.choice(self.kinds()))
            self.revive()
        # Every kind at least once, however few faults a slow machine let the schedule
        # reach (a short run on a loaded machine may otherwise miss one).
        for kind in dict.fromkeys(self.kinds()):
            if kind not in {e["kind"] for e in self.log}:
                self.inject(kind)
                self.revive()

    def inject(self, kind: str) -> None:
        at = time.time()
        victim = getattr(self, kind.replace("-", "_"))()
        self.log.append({"kind": kind, "t": at, "victim": victim})

    # -- the faults -------------------------------------------------------------------

    def _pick(self, kind: str, where: Callable[[Member], bool] = lambda m: True) -> Member:
        alive = [m for m in self.members if m.kind == kind and m.proc.poll() is None and where(m)]
        return self.rng.choice(alive)

    def sigkill_worker(self) -> int:
        m = self._pick("worker")
        self.fleet.kill(m.proc)
        return m.proc.pid

    def sigkill_child(self) -> int | None:
        m = self._pick("worker", lambda m: "--processes" in m.args)
        children = child_pids(m.proc.pid)
        if not children:
            return None
        pid = self.rng.choice(children)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return None
        return pid

    def sigkill_producer(self) -> int:
        m = self._pick("producer")
        self.fleet.kill(m.proc)
        return m.proc.pid

    def sigstop_worker(self) -> int:
        """Freeze a worker past its leases, right after a burst of sends, so that it
        holds prefetched messages waiting for a thread (the case a resumed worker must
        not start)."""
        if self.burst is not None:
            try:
                self.burst()
            except DatabaseError:  # the parent's own connection met a fault: no burst
                connection.close()
            time.sleep(self.rng.uniform(0.05, 0.4))
        m = self._pick("worker")
        for _ in range(40):  # catch it holding more than it runs, for up to ~2 s
            pids = [m.proc.pid, *child_pids(m.proc.pid)]
            for pid in pids:
                _signal(pid, signal.SIGSTOP)
            held = held_beyond_threads(pids, threads=8 if "--concurrency" in m.args else 1)
            stopped_ms = _now_ms()  # after a round trip: the stops have taken effect
            if held:
                break
            for pid in pids:  # a probe this short explains nothing: not a freeze
                _signal(pid, signal.SIGCONT)
            time.sleep(0.05)
        else:
            pids = [m.proc.pid, *child_pids(m.proc.pid)]
            for pid in pids:
                _signal(pid, signal.SIGSTOP)
            time.sleep(0.05)
            stopped_ms = _now_ms()
        time.sleep(self.rng.uniform(1.2, 2.0) * self.lock_s)  # past the lease
        self.freezes.append({"pids": pids, "stopped_ms": stopped_ms, "resumed_ms": _now_ms()})
        for pid in child_pids(m.proc.pid):
            _signal(pid, signal.SIGCONT)
        m.proc.send_signal(signal.SIGCONT)
        return m.proc.pid

    def pg_terminate(self) -> int:
        return dbfaults.terminate_backends(connection)

    def pg_restart(self) -> float:
        """Restart the server (fast mode, after a checkpoint so that the shutdown's own
        is short: a busy server's can outlast ``pg_ctl``'s wait); start it again if the
        restart did not; returns how long it was away."""
        before = self._completed_now()
        with connection.cursor() as cursor:
            cursor.execute("CHECKPOINT")
        t0 = time.monotonic()
        done = pg_ctl("restart")
        if done.returncode != 0:
            pg_ctl("start")
        restarted = time.monotonic()
        while self._completed_now() <= before:
            if time.monotonic() - restarted > 120:
                raise AssertionError("nothing completed within 120 s of the restart")
            time.sleep(0.1)
        self.recovery_s.append(time.monotonic() - restarted)
        return restarted - t0

    def sqlite_lock_holder_killed(self) -> int:
        path = str(connection.settings_dict["NAME"])
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, path], stdout=subprocess.PIPE, text=True
        )
        assert holder.stdout is not None
        holder.stdout.readline()  # "held": it has the write lock
        time.sleep(self.rng.uniform(0.3, 1.5))
        holder.kill()
        holder.wait(10)
        return holder.pid

    # -- keeping the fleet whole ------------------------------------------------------

    def revive(self) -> None:
        """Start again every member that died (killed, or exited on a fault)."""
        for m in self.members:
            if m.proc.poll() is not None:
                m.proc = self.fleet.start(*m.args, command=m.command)

    def _completed_now(self) -> int:
        """The completions so far, through the parent's own connection (which a
        restart breaks: then it is reopened)."""
        assert self.completed is not None
        while True:
            try:
                return self.completed()
            except Exception:
                connection.close()
                time.sleep(0.1)


def held_beyond_threads(pids: list[int], threads: int) -> bool:
    """Whether some worker process among ``pids`` holds more messages than it has
    handler threads (some wait, prefetched, for a thread)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT w.id, count(m.seq) FROM mqlite_worker w JOIN mqlite_message m "
            "ON m.locked_by = w.id AND m.state = 'locked' "
            f"WHERE w.stopped_at IS NULL AND w.pid IN ({', '.join(['%s'] * len(pids))}) "
            "GROUP BY w.id",
            pids,
        )
        return any(n > threads for _wid, n in cursor.fetchall())


def child_pids(parent: int) -> list[int]:
    """The live children of ``parent`` (from /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


def _now_ms() -> int:
    return int(time.time() * 1000)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def summary(log: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in log:
        out[e["kind"]] = out.get(e["kind"], 0) + 1
    return out
