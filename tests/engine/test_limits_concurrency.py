"""Rate and in-flight limits under concurrent consumers — threads of one process on the
frozen clock, and separate processes on the real clock — checked by an oracle: never
more claimed than the limit allows, never more held at once, nothing starved."""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connections

import django_mqlite as mq
from tests.support.concurrency import receive_until_idle, retrying, run_threads, start_threads
from tests.support.procs import ROOT, Workers, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_rate_limit_holds_across_threads_on_the_frozen_clock() -> None:
    rate, total = 10, 120
    mq.create_queue("rl", rate_limit=rate, lock_duration=3600)
    mq.send_batch("rl", [mq.OutMessage(str(i)) for i in range(total)])
    claimed: list[int] = []
    lock = threading.Lock()
    violations: list[str] = []
    stop = threading.Event()
    with mq.clock.frozen() as clock:
        elapsed = [0.0]

        def consumer(i: int) -> None:
            rng = random.Random(i)
            while not stop.is_set():
                got = retrying(lambda: mq.receive("rl", max_messages=rng.choice([1, 2, 5])))
                assert isinstance(got, list)
                with lock:
                    claimed.extend(m.seq for m in got)
                    # The bucket held one second's worth at the start, then earned
                    # ``rate`` per second of the clock (read after the claim: an upper bound).
                    allowed = rate + rate * elapsed[0]
                    if len(claimed) > allowed + 1e-9:
                        violations.append(f"{len(claimed)} claimed with {allowed} allowed")
                for m in got:
                    retrying(m.complete)
                if not got:
                    time.sleep(0.002)

        errors: list[BaseException] = []
        threads = start_threads(4, consumer, errors)
        try:
            for _ in range(int((total - rate) / rate * 10)):
                wait_for(
                    lambda: len(claimed) >= rate + rate * elapsed[0] - 1e-9,
                    timeout=30,
                    every=0.002,
                    what="consumers stalled",
                )
                with lock:
                    clock.advance(0.1)
                    elapsed[0] = round(elapsed[0] + 0.1, 6)
            wait_for(
                lambda: len(claimed) >= total, timeout=30, every=0.002, what="consumers stalled"
            )
        finally:
            stop.set()
            for t in threads:
                t.join(60)
    assert not errors, errors
    assert violations == []
    assert sorted(claimed) == sorted(set(claimed)) and len(claimed) == total


def test_max_in_flight_holds_across_threads() -> None:
    limit, total = 3, 150
    mq.create_queue("fl", max_in_flight=limit, lock_duration=3600)
    mq.send_batch("fl", [mq.OutMessage(str(i)) for i in range(total)])
    lock = threading.Lock()
    held = [0]
    peak = [0]
    done: list[int] = []

    def consumer(i: int) -> None:
        rng = random.Random(i)
        for got in receive_until_idle("fl", [1, 2, 4], rng, idle_rounds=20, pause_s=0.005):
            # Counted after the claim committed, uncounted before the completion starts:
            # never more than the database holds locked at that instant.
            with lock:
                held[0] += len(got)
                peak[0] = max(peak[0], held[0])
            # Hold on until the others have filled the limit (or a short while has passed),
            # so reaching it does not hang on how fast this machine's round trips are.
            deadline = time.monotonic() + 0.05 + rng.random() * 0.05
            while held[0] < limit and time.monotonic() < deadline:
                time.sleep(0.001)
            for m in got:
                with lock:
                    held[0] -= 1
                retrying(m.complete)
                with lock:
                    done.append(m.seq)

    run_threads(5, consumer)
    assert peak[0] <= limit
    assert peak[0] == limit  # the limit was reached, so it was what held the consumers back
    assert sorted(done) == sorted(set(done)) and len(done) == total


# -- processes, real clock ------------------------------------------------------------


def _run_children(tmp_path: Path, queue: str, n: int, hold_s: float) -> list[dict]:  # type: ignore[type-arg]
    workers = Workers(tmp_path)
    log = tmp_path / "claims.jsonl"
    log.touch()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.support.limits_child", queue, str(log), str(hold_s)],
            cwd=ROOT,
            env=workers.env(None),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    try:
        for p in procs:
            _, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_rate_limit_holds_across_processes(tmp_path: Path) -> None:
    rate, total = 20, 90
    mq.create_queue("rlp", rate_limit=rate)
    mq.send_batch("rlp", [mq.OutMessage(str(i)) for i in range(total)])
    connections.close_all()
    events = _run_children(tmp_path, "rlp", 3, 0.0)
    claims = [e for e in events if "claim" in e]
    seqs = list(itertools.chain.from_iterable(e["claim"] for e in claims))
    assert sorted(seqs) == sorted(set(seqs)) and len(seqs) == total  # nothing starved
    # Each claim happened at some clock time in [before, after]. Claims wholly inside a
    # window [a, b] drew on at most a full bucket at a plus what [a, b] earned.
    claims.sort(key=lambda e: e["before"])
    worst = 0.0
    for i, first in enumerate(claims):
        a = first["before"]
        inside = 0
        for e in sorted(claims[i:], key=lambda e: e["after"]):
            if e["before"] >= a:
                inside += len(e["claim"])
                allowed = rate + rate * (e["after"] - a)
                worst = max(worst, inside - allowed)
    # The engine's clock is in whole milliseconds, the children's stamps are not: allow
    # what 2 ms earn (0.04 of a message at 20/s), far below one message too many.
    assert worst <= rate * 0.002, f"claimed {worst:.3f} more than the limit allows in a window"
    span = max(e["after"] for e in claims) - min(e["before"] for e in claims)
    assert span >= (total - rate) / rate - 0.05  # the limit, not the consumers, set the pace


def test_max_in_flight_holds_across_processes(tmp_path: Path) -> None:
    limit, total = 2, 60
    mq.create_queue("flp", max_in_flight=limit)
    mq.send_batch("flp", [mq.OutMessage(str(i)) for i in range(total)])
    connections.close_all()
    events = _run_children(tmp_path, "flp", 3, 0.01)
    # Each message is held from (after its claim returned) to (before its completion
    # started): a sub-interval of its real lease. Sweep for the most held at once.
    points = []
    claimed_at = {}
    for e in events:
        if "claim" in e:
            for seq in e["claim"]:
                claimed_at[seq] = e["after"]
    for e in events:
        if "done" in e:
            points += [(claimed_at[e["done"]], 1), (e["before"], -1)]
    held = peak = 0
    for _, step in sorted(points, key=lambda p: (p[0], p[1])):
        held += step
        peak = max(peak, held)
    assert peak <= limit
    assert sorted(claimed_at) == sorted({e["done"] for e in events if "done" in e})
    assert len(claimed_at) == total
