"""A producer for the fault suite (``tests/faults``): each item writes a business row
and sends its message in one ``transaction.atomic()``, then appends the committed send
to an fsynced log. A database error (a terminated backend, a restart, a locked SQLite
file) leaves that item's outcome unknown: it is not logged, and the producer closes its
connection, backs off and goes on with the next item.

Items are seeded: about a third belong to one of this producer's own groups (so each
group's send order is this producer's commit order), a few fail on their first delivery,
some take a little while.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import DatabaseError, connection, transaction

import django_mqlite as mq

TABLE = "reliability_order"


class Command(BaseCommand):
    help = "Send business rows and their messages until stopped, logging each commit."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--prefix", required=True)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--log", required=True)
        parser.add_argument("--stop", required=True, help="stop once this file exists")
        parser.add_argument("--pause", type=float, default=0.01)
        parser.add_argument("--groups", type=int, default=3)

    def handle(self, *args: Any, **opts: Any) -> None:
        rng = random.Random(f"{opts['seed']}-{opts['prefix']}")
        stop = Path(opts["stop"])
        i = 0
        wait_s = 0.05
        while not stop.exists():
            i += 1
            ref = f"{opts['prefix']}-{i}"
            group = None
            if rng.random() < 0.35:
                group = f"{opts['prefix']}-g{rng.randrange(opts['groups'])}"
            props: dict[str, Any] = {}
            if rng.random() < 0.02:
                props["fail"] = [1]
            if rng.random() < 0.1:
                props["sleep_s"] = round(rng.uniform(0.02, 0.3), 3)
            try:
                seq = self.commit(ref, group, props)
            except DatabaseError as exc:
                self.stderr.write(f"{ref}: {type(exc).__name__}: {exc}; outcome unknown")
                connection.close()
                time.sleep(wait_s)
                wait_s = min(wait_s * 2, 1.0)
                continue
            wait_s = 0.05
            line = {"ref": ref, "seq": seq, "group": group, "t": time.time()}
            fd = os.open(opts["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            try:
                os.write(fd, (json.dumps(line) + "\n").encode())
                os.fsync(fd)
            finally:
                os.close(fd)
            time.sleep(opts["pause"])

    def commit(self, ref: str, group: str | None, props: dict[str, Any]) -> int:
        queue = "chaos" if group is None else "chaos-groups"
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(f"INSERT INTO {TABLE} (ref) VALUES (%s)", [ref])
            return mq.send(queue, {"ref": ref}, message_id=ref, group_id=group, properties=props)
