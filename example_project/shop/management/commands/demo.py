"""The demo: send a batch of payment messages, drain them with the engine, show counts."""

from __future__ import annotations

import random
from typing import Any

from django.core.management.base import BaseCommand

import django_mqlite as mq


class Command(BaseCommand):
    help = "Send messages to the 'payments' queue, drain them, and print per-state counts."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--orders", type=int, default=500)

    def handle(self, *args: Any, orders: int, **options: Any) -> None:
        mq.purge("payments", state="dead_lettered")
        seqs = mq.send_batch(
            "payments",
            [
                mq.OutMessage({"order": n, "cents": random.randint(100, 99_999)})
                for n in range(orders)
            ],
        )
        self.stdout.write(f"sent {len(seqs)} payment messages (seq {seqs[0]}..{seqs[-1]})")
        self._counts("after sending")
        done = 0
        while batch := mq.receive("payments", max_messages=64):
            results = mq.complete_batch(
                "payments", [(m.seq, m.lock_token) for m in batch if m.lock_token]
            )
            done += sum(results)
        self.stdout.write(f"drained and completed {done} messages")
        self._counts("after draining")

    def _counts(self, when: str) -> None:
        s = mq.stats("payments")
        shown = "  ".join(f"{k}={v}" for k, v in s.counts.items())
        self.stdout.write(f"  {when}: {shown}")
