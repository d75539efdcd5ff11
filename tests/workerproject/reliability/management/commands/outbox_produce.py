"""A producer for the outbox crash tests: each item writes a business row and enqueues
its message in one ``transaction.atomic()``.

``--hold-at K`` stops inside item K's transaction, between its two writes, after
creating the file ``--gate`` (so the test knows), and waits there to be killed.
``--row-first``/``--send-first`` chooses which write comes first.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import connection, transaction

import django_mqlite as mq

TABLE = "reliability_order"


class Command(BaseCommand):
    help = "Write business rows and their messages in one transaction each."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--prefix", required=True)
        parser.add_argument("--count", type=int, default=1_000_000)
        parser.add_argument("--hold-at", type=int, default=None)
        parser.add_argument("--gate", default=None)
        parser.add_argument("--send-first", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        for i in range(opts["count"]):
            ref = f"{opts['prefix']}-{i}"
            with transaction.atomic():
                first, second = (
                    (self.send, self.row)
                    if opts["send_first"]
                    else (
                        self.row,
                        self.send,
                    )
                )
                first(ref)
                if i == opts["hold_at"]:
                    Path(opts["gate"]).write_text(ref)
                    time.sleep(3600)  # killed here, mid-transaction
                second(ref)

    def row(self, ref: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {TABLE} (ref) VALUES (%s)", [ref])

    def send(self, ref: str) -> None:
        mq.send("outbox", {"ref": ref}, message_id=ref)
