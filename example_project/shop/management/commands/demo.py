"""The demo: a small shop's payments, told as a story in the terminal.

Orders are placed through the checkout view (order row and payment message in one
transaction), real worker processes charge them, poison payments are retried with
backoff and buried in the dead-letter state, a delayed batch lands on time, a worker is
killed mid-job and its work recovered, the dead letters are redriven, and the final
stats are checked against the queue's invariants.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.test import Client

import django_mqlite as mq
from django_mqlite.conf import mqlite_settings
from django_mqlite.engine.queues import sync_declared
from shop.models import Order

PROJECT = Path(__file__).resolve().parents[3]


class Command(BaseCommand):
    help = "Run the shop demo: orders, workers, retries, DLQ, delays, a killed worker, redrive."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--orders", type=int, default=300)
        parser.add_argument("--poison", type=int, default=10)

    def handle(self, *args: Any, orders: int, poison: int, **options: Any) -> None:
        if not 0 <= poison < orders:
            raise CommandError("--poison must be between 0 and --orders")
        self.workers: list[subprocess.Popen[bytes]] = []
        self.log = open(PROJECT / "demo-workers.log", "wb")
        try:
            self.story(orders, poison)
        finally:
            for w in self.workers:
                if w.poll() is None:
                    w.kill()
            self.log.close()

    # -- the story -----------------------------------------------------------------------

    def story(self, n: int, poison: int) -> None:
        self.reset()
        self.title(f"1. {n} customers check out ({poison} with a card that will be declined)")
        client = Client(HTTP_HOST="localhost")  # a host ALLOWED_HOSTS accepts
        for i in range(n):
            total = (
                0
                if i % (n // max(poison, 1)) == 0 and i // (n // max(poison, 1)) < poison
                else 1999
            )
            client.post(
                "/checkout/",
                {"email": f"c{i}@example.com", "total_cents": total},
                content_type="application/json",
            )
            self.bar("orders placed", i + 1, n)
        self.done(
            f"{Order.objects.count()} orders, {self.count('payments', 'active')} payment "
            "messages waiting — each sent in its order's transaction"
        )

        self.title("2. Two worker processes start")
        self.start_worker("payments", "emails", concurrency=4)
        self.start_worker("payments", "emails", concurrency=4)
        good = n - poison
        self.wait("orders paid", lambda: Order.objects.exclude(paid_at=None).count(), good)
        self.done(f"{good} orders paid, each charged exactly once: {self.charged_once()}")
        self.wait("emails sent", lambda: self.count("emails", "completed"), n)
        self.done(
            f"{n} confirmation emails sent by the Django task send_confirmation "
            "(its results are kept: SUCCESSFUL)"
        )

        self.title("3. Poison payments: retried with backoff, then dead-lettered")
        self.wait("buried", lambda: self.count("payments", "dead_lettered"), poison, timeout=60)
        dead = mq.peek("payments", state="dead_lettered", limit=1)
        if dead:
            p = dead[0]
            last = (p.last_error or "").strip().splitlines()[-1:]
            self.done(
                f"{poison} messages delivered {p.delivery_count} times each, then buried "
                f"({p.dead_letter_reason}): {last[0] if last else ''}"
            )

        self.title("4. A delayed batch: 50 orders whose payment runs in 2 seconds")
        with transaction.atomic():
            late = [
                Order.objects.create(email="late@example.com", total_cents=500) for _ in range(50)
            ]
            mq.send_batch("payments", [mq.OutMessage({"order": o.pk}, delay=2) for o in late])
        self.done(f"{self.count('payments', 'scheduled')} scheduled; none runs early")
        started = time.monotonic()
        self.wait(
            "delayed paid",
            lambda: Order.objects.filter(pk__in=[o.pk for o in late]).exclude(paid_at=None).count(),
            50,
        )
        self.done(f"all 50 paid {time.monotonic() - started:.1f} s after sending")

        self.title("5. A worker is killed (SIGKILL) in the middle of 4 long jobs")
        self.stop_workers()
        mq.send_batch("reports", [mq.OutMessage({"seconds": 2}) for _ in range(4)])
        victim = self.start_worker("reports", concurrency=4)
        self.wait("jobs started", lambda: self.count("reports", "locked"), 4)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        killed_at = time.monotonic()
        lease = mq.get_queue("reports").lock_duration
        self.done(f"worker {victim.pid} killed holding 4 jobs with a {lease:.0f} s lease")
        self.start_worker("reports", concurrency=4)
        self.wait("recovered", lambda: 4 - len(mq.peek("reports", limit=10)), 4, timeout=60)
        self.done(
            f"all 4 jobs done {time.monotonic() - killed_at:.1f} s after the kill: its "
            f"heartbeat stopped, so the reaper reclaimed its locks without waiting out the lease"
        )

        self.title("6. The customers fix their cards; the dead letters are redriven")
        ids = [p.json()["order"] for p in mq.peek("payments", state="dead_lettered", limit=1000)]
        Order.objects.filter(pk__in=ids).update(total_cents=1999)
        moved = mq.redrive("payments")
        self.start_worker("payments", concurrency=4)
        self.wait("orders paid", lambda: Order.objects.exclude(paid_at=None).count(), n + 50)
        self.done(
            f"{moved} redriven, every order paid; charged exactly once: {self.charged_once()}"
        )

        self.title("7. Final stats")
        self.stop_workers()
        for name in ("payments", "reports", "emails"):
            s = mq.stats(name)
            t = s.totals
            counts = " ".join(f"{k}={v}" for k, v in s.counts.items() if v) or "empty"
            self.stdout.write(f"  {name:9} {counts}")
            self.stdout.write(
                f"  {'':9} enqueued={t['enqueued']} delivered={t['delivered']} "
                f"completed={t['completed']} retried={t['retried']} reclaimed={t['reclaimed']} "
                f"dead_lettered={t['dead_lettered']} redriven={t['redriven']}"
            )
            ok = t["abandoned"] + t["reclaimed"] == t["retried"] + t["exhausted"]
            ok = ok and t["dead_lettered"] == t["exhausted"] + t["rejected"] + t["expired"]
            self.stdout.write(
                f"  {'':9} invariants "
                + (self.style.SUCCESS("hold") if ok else self.style.ERROR("BROKEN"))
            )
            if not ok:
                raise CommandError(f"stats invariant broken on {name}")
        self.stdout.write(
            self.style.SUCCESS("\nDone. Worker logs: example_project/demo-workers.log")
        )

    # -- helpers -------------------------------------------------------------------------

    def reset(self) -> None:
        for name in ("payments", "reports", "emails", "maintenance"):
            try:
                mq.delete_queue(name, force=True)
            except mq.QueueNotFoundError:
                pass
        sync_declared(mqlite_settings.QUEUES)
        Order.objects.all().delete()

    def count(self, queue: str, state: str) -> int:
        return int(mq.stats(queue).counts[state])

    def charged_once(self) -> str:
        paid = Order.objects.exclude(paid_at=None)
        wrong = paid.exclude(charges=1).count()
        return self.style.SUCCESS("yes") if wrong == 0 else self.style.ERROR(f"NO ({wrong})")

    def start_worker(self, *queues: str, concurrency: int) -> subprocess.Popen[bytes]:
        flags = [arg for q in queues for arg in ("--queue", q)]
        command = [sys.executable, "manage.py", "runworker", *flags, "-c", str(concurrency)]
        proc = subprocess.Popen(command, cwd=PROJECT, stdout=self.log, stderr=self.log)
        self.workers.append(proc)
        self.stdout.write(
            f"  worker {proc.pid} started on {', '.join(queues)} ({concurrency} threads)"
        )
        return proc

    def stop_workers(self) -> None:
        running = [w for w in self.workers if w.poll() is None]
        for w in running:
            w.send_signal(signal.SIGTERM)
        for w in running:
            code = w.wait(timeout=60)
            self.stdout.write(f"  worker {w.pid} stopped on SIGTERM (exit {code})")
        self.workers = []

    def wait(
        self, label: str, current: Callable[[], int], target: int, timeout: float = 120
    ) -> None:
        deadline = time.monotonic() + timeout
        value = current()
        while value < target:
            self.bar(label, value, target)
            if time.monotonic() > deadline:
                raise CommandError(f"timed out waiting for {label}: {value}/{target}")
            time.sleep(0.1)
            value = current()
        self.bar(label, value, target)

    def bar(self, label: str, value: int, total: int) -> None:
        width = 30
        filled = int(width * value / max(total, 1))
        end = "\n" if value >= total else "\r"
        if end == "\r" and not self.stdout.isatty():
            return
        self.stdout.write(
            f"  {label:14} [{'#' * filled}{'.' * (width - filled)}] {value}/{total}", ending=end
        )
        self.stdout.flush()

    def title(self, text: str) -> None:
        self.stdout.write(self.style.MIGRATE_HEADING(f"\n{text}"))

    def done(self, text: str) -> None:
        self.stdout.write(f"  -> {text}")
