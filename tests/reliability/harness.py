"""Process harness and checks shared by the reliability suite.

``Fleet`` starts real ``manage.py`` processes of the worker test project (with the
``tests.workerproject.reliability`` app) on this test's database, sends each one's
stdout/stderr to its own file (a pipe nobody reads would fill up and block a chatty
worker), and kills, stops and restarts them. The checks read what the database itself
recorded: settlement receipts (which lock token completed or abandoned a message, and
when) and the lifetime counters.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from django.db import connection

import django_mqlite as mq
from django_mqlite.conf import current
from tests.support.features import has
from tests.support.procs import MANAGE, ROOT, wait_for


class Fleet:
    """Child processes of the worker test project, each logging to its own file."""

    def __init__(self, tmp: Path, overrides: dict[str, Any] | None = None) -> None:
        self.tmp = tmp
        self.log = tmp / "deliveries.jsonl"
        self.log.touch()
        self.overrides = overrides or {}
        self.procs: list[subprocess.Popen[bytes]] = []
        self.outputs: dict[int, Path] = {}
        self.extra_env: dict[str, str] = {}

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "tests.workerproject.settings",
            "MQLITE_TEST_RELIABILITY": "1",
            "MQLITE_TEST_DB": os.environ.get("MQLITE_TEST_DB", "sqlite"),
            "MQLITE_TEST_DB_NAME": str(connection.settings_dict["NAME"]),
            "MQLITE_TEST_LOG": str(self.log),
            "MQLITE_TEST_OVERRIDES": json.dumps(self.overrides),
            **self.extra_env,
        }

    def start(self, *args: str, command: str = "runworker") -> subprocess.Popen[bytes]:
        out = self.tmp / f"{command}-{len(self.procs)}.log"
        with out.open("wb") as f:
            proc = subprocess.Popen(
                [sys.executable, str(MANAGE), command, *args],
                cwd=ROOT,
                env=self.env(),
                stdout=f,
                stderr=subprocess.STDOUT,
            )
        self.procs.append(proc)
        self.outputs[proc.pid] = out
        return proc

    def output(self, proc: subprocess.Popen[bytes]) -> str:
        return self.outputs[proc.pid].read_text(errors="replace")

    def all_output(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in self.outputs.values())

    def alive(self) -> list[subprocess.Popen[bytes]]:
        return [p for p in self.procs if p.poll() is None]

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        proc.send_signal(signal.SIGCONT)  # a stopped process must run to die
        proc.kill()
        proc.wait(30)

    def wait_started(self, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
        """Until the worker has installed its signal handlers and registered (a SIGTERM
        before that has the default effect: the process dies with -15, having claimed
        nothing)."""
        wait_for(lambda: "started" in self.output(proc) or proc.poll() is not None, timeout)

    def terminate(self, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> int:
        proc.send_signal(signal.SIGTERM)
        return proc.wait(timeout)

    def cleanup(self) -> None:
        for proc in self.alive():
            self.kill(proc)

    def deliveries(self, queue: str | None = None) -> list[dict[str, Any]]:
        """Recorded deliveries; a line cut short by SIGKILL is skipped."""
        out = []
        for line in self.log.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if queue is None or rec["queue"] == queue:
                out.append(rec)
        return out


def wait_until(predicate: Any, timeout: float, every: float = 0.1, what: str = "") -> Any:
    return wait_for(predicate, timeout, every, what)


def receipts() -> dict[str, list[tuple[str, int]]]:
    """Settlement receipts by lock token: ``[(verb, settled_at_ms), ...]``. The engine
    writes one in the transaction of every successful settlement, expiring RECEIPT_TTL
    after the settlement's own clock reading, so that reading is recovered exactly."""
    ttl_ms = current().receipt_ttl_ms
    out: dict[str, list[tuple[str, int]]] = defaultdict(list)
    with connection.cursor() as cursor:
        cursor.execute("SELECT lock_token, verb, expires_at FROM mqlite_receipt")
        for token, verb, expires in cursor.fetchall():
            out[token].append((verb, int(expires) - ttl_ms))
    return out


def live_messages(queue: str) -> list[mq.Peeked]:
    out: list[mq.Peeked] = []
    after = 0
    while True:
        page = mq.peek(queue, limit=1000, after_seq=after)
        if not page:
            return out
        out += page
        after = page[-1].seq


def check_totals(queue: str) -> dict[str, int]:
    """SPEC §2's accounting identities on the queue's lifetime counters."""
    t = mq.stats(queue).totals
    assert t["abandoned"] + t["reclaimed"] == t["retried"] + t["exhausted"], t
    # TTL expiry dead-letters or removes (per queue), so ``expired`` bounds its share.
    assert 0 <= t["dead_lettered"] - t["exhausted"] - t["rejected"] <= t["expired"], t
    return t


def lease_violations(
    deliveries: list[dict[str, Any]],
    settled: dict[str, list[tuple[str, int]]],
    lock_ms: int,
) -> list[str]:
    """The oracle: per message, its recorded deliveries in order must have distinct
    tokens and increasing delivery counts; each must begin only after the previous
    lease ended; the completing delivery (the token with a ``complete`` receipt) must be
    the last one; and exactly one delivery completes.

    A lease ends at its settlement (the receipt's time) or, with no receipt (its holder
    died or was frozen), no earlier than the ``locked_until`` it was claimed with:
    renewals only extend it, and under the suite's settings stale-worker reclaim waits
    longer than a lease. A delivery begins at its
    claim: the claim's own clock reading (``until - lock``) where writes are serialized
    (no ``concurrent_writers``, SQLite: the claim reads the clock inside its write lock,
    so it is ordered after every earlier commit), else the handler's start, which is
    after the claim committed (PostgreSQL: a claim may read the clock just before a
    concurrent settlement commits).
    """
    claim_clock = not has("concurrent_writers")
    by_seq: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for d in deliveries:
        by_seq[d["seq"]].append(d)
    bad: list[str] = []
    for seq, ds in by_seq.items():
        ds.sort(key=lambda d: d["delivery"])
        tokens = [d["token"] for d in ds]
        if len(set(tokens)) != len(tokens):
            bad.append(f"{seq}: a lock token was delivered twice: {tokens}")
        counts = [d["delivery"] for d in ds]
        if len(set(counts)) != len(counts):
            bad.append(f"{seq}: delivery count repeated: {counts}")
        completes = [d for d in ds if any(v == "complete" for v, _ in settled.get(d["token"], []))]
        if len(completes) != 1:
            bad.append(f"{seq}: {len(completes)} completing deliveries")
        elif completes[0] is not ds[-1]:
            bad.append(f"{seq}: delivered after completion (delivery {ds[-1]['delivery']})")
        for prev, nxt in itertools.pairwise(ds):
            ends = [t for _v, t in settled.get(prev["token"], [])]
            end = min(ends) if ends else prev["until_ms"]
            begin = nxt["until_ms"] - lock_ms if claim_clock else nxt["start_ms"]
            if begin < end:
                bad.append(
                    f"{seq}: delivery {nxt['delivery']} began at {begin} while delivery "
                    f"{prev['delivery']}'s lease lasted until {end} (two live leases)"
                )
    return bad
