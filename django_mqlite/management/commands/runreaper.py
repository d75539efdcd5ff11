"""``manage.py runreaper [--interval S] [--once]``: the reaper on its own."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...conf import current
from ...exceptions import MQLiteError
from ...worker.reaper import Reaper


class Command(BaseCommand):
    help = "Run the queue reaper (lock expiry, stale workers, schedules, TTL, retention)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--interval",
            type=float,
            default=None,
            help="seconds between passes (default MQLITE['REAP_INTERVAL'])",
        )
        parser.add_argument(
            "--once", action="store_true", help="run one pass, print its counts as JSON, exit"
        )
        parser.add_argument("--database", default=None, help="database alias of the queues")

    def handle(self, *args: Any, **options: Any) -> None:
        interval = options["interval"]
        if interval is None:
            interval = current().reap_interval_s
        if interval <= 0:
            raise CommandError("--interval must be a positive number of seconds")
        reaper = Reaper(interval_s=interval, using=options["database"])
        try:
            if options["once"]:
                self.stdout.write(json.dumps(reaper.run_once(), sort_keys=True))
                return
            if options["verbosity"] >= 1:
                self.stdout.write(f"reaper running every {interval:g}s (Ctrl-C to stop)")
            reaper.run(report=lambda c: self.stdout.write(json.dumps(c, sort_keys=True)))
        except MQLiteError as exc:
            raise CommandError(str(exc)) from exc
