"""The concurrency oracle and its harness, for any test that runs consumers on real
threads (each with its own database connection): ``Oracle`` records claims, releases and
completions and lists every violation (a message held by two live leases, delivered
after completion, completed twice); ``run_threads`` runs ``target(i)`` on ``n`` threads and
re-raises what they raised; ``retrying`` retries a busy SQLite."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from django.db import OperationalError, connections

import django_mqlite as mq


@dataclass
class Oracle:
    lock: threading.Lock = field(default_factory=threading.Lock)
    leases: dict[int, tuple[str, float]] = field(default_factory=dict)  # seq -> (token, until)
    completed: set[int] = field(default_factory=set)
    violations: list[str] = field(default_factory=list)
    deliveries: int = 0

    def claimed(self, m: mq.Received) -> None:
        now = time.time()
        with self.lock:
            self.deliveries += 1
            if m.seq in self.completed:
                self.violations.append(f"{m.seq} delivered after completion")
            held = self.leases.get(m.seq)
            if held is not None and held[1] > now:
                self.violations.append(f"{m.seq} held by two live leases")
            assert m.locked_until is not None and m.lock_token is not None
            self.leases[m.seq] = (m.lock_token, m.locked_until.timestamp())

    def released(self, seq: int) -> None:
        with self.lock:
            self.leases.pop(seq, None)

    def done(self, seq: int) -> None:
        with self.lock:
            if seq in self.completed:
                self.violations.append(f"{seq} completed twice")
            self.completed.add(seq)


def start_threads(
    n: int, target: Callable[[int], None], errors: list[BaseException]
) -> list[threading.Thread]:
    """Start ``target(i)`` on ``n`` threads, each closing its connections at the end;
    what a thread raises goes to ``errors``, for the test to surface."""

    def wrapped(i: int) -> None:
        try:
            target(i)
        except BaseException as exc:  # surfaced by the caller
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    return threads


def run_threads(n: int, target: Callable[[int], None]) -> None:
    """``start_threads``, wait for them, and fail with what any of them raised."""
    errors: list[BaseException] = []
    for t in start_threads(n, target, errors):
        t.join(120)
    assert not errors, errors


def retrying(fn: Callable[[], object]) -> object:
    """SQLite may still report a busy database under heavy contention; try again."""
    for attempt in range(50):
        try:
            return fn()
        except OperationalError:
            time.sleep(0.01 * (attempt + 1))
    return fn()


def receive_until_idle(
    queue: str, sizes: list[int], rng: random.Random, idle_rounds: int, pause_s: float = 0.02
) -> Iterator[list[mq.Received]]:
    """Receive from ``queue`` (a random batch size of ``sizes`` each time) and yield each
    non-empty batch, until ``idle_rounds`` receives in a row found nothing."""
    idle = 0
    while idle < idle_rounds:
        got = retrying(lambda: mq.receive(queue, max_messages=rng.choice(sizes)))
        assert isinstance(got, list)
        if not got:
            idle += 1
            time.sleep(pause_s)
            continue
        idle = 0
        yield got
