"""``manage.py runworker``: a thin shell over ``django_mqlite.worker.Worker``."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ... import checks
from ...conf import current, mqlite_settings
from ...engine.dialects import dialect_for
from ...exceptions import MQLiteError
from ...tasks.support import nothing_to_serve
from ...worker import Worker, build
from ...worker.discovery import autodiscover
from ...worker.multi import MultiWorker
from ...worker.prefork import Siblings, Supervisor, default_processes, roles
from ...worker.registry import registry


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {value!r}")
    return n


def _positive_float(value: str) -> float:
    try:
        x = float(value)
    except ValueError:
        x = 0.0
    if not x > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, not {value!r}")
    return x


class Command(BaseCommand):
    help = "Run registered consumers (and Django Tasks) from the queue database."
    # Start-up runs this app's own checks (database vendor, WAL, settings, schedules),
    # not every check of the project: those are ``manage.py check``'s job, and on a
    # typical project they take longer than the rest of a worker's start-up.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--skip-checks", action="store_true", help="skip this app's system checks at start"
        )
        parser.add_argument(
            "--queue",
            "-q",
            action="append",
            dest="queues",
            default=[],
            help="queue to serve (repeatable; default: every queue with a consumer)",
        )
        parser.add_argument(
            "--concurrency",
            "-c",
            type=_positive_int,
            default=1,
            help="handler threads per database (default 1)",
        )
        parser.add_argument("--burst", action="store_true", help="exit 0 once nothing is claimable")
        parser.add_argument(
            "--max-messages",
            type=_positive_int,
            default=None,
            help="exit 0 after handling this many messages",
        )
        parser.add_argument(
            "--max-memory",
            type=_positive_float,
            default=None,
            help="exit 0 once resident memory passes this many MB",
        )
        parser.add_argument(
            "--shutdown-timeout",
            type=_positive_float,
            default=30.0,
            help="seconds in-flight handlers get to finish on SIGTERM (30)",
        )
        parser.add_argument(
            "--no-reaper", action="store_true", help="do not run the reaper inside this worker"
        )
        parser.add_argument(
            "--database",
            default=None,
            help="serve only the queues on this database alias (default: each queue "
            "on the database where it lives)",
        )
        parser.add_argument(
            "--processes",
            "-p",
            type=_positive_int,
            default=None,
            help="worker processes (each with --concurrency threads); more than one run "
            "under a supervising parent that restarts any that die (default: "
            'MQLITE["WORKER_PROCESSES"], else one per core; on SQLite two per core, '
            "at most 4)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["verbosity"] >= 1:
            _log_to_stderr(logging.DEBUG if options["verbosity"] >= 2 else logging.INFO)
        if not options["skip_checks"]:
            database = options["database"] or current().database
            self.check(tags=[checks.TAG], databases=[database])
        autodiscover()
        if not registry.queues():
            raise CommandError(nothing_to_serve())

        siblings: Siblings | None = None

        def make_worker(slot: int = 0) -> Worker | MultiWorker:
            role = roles(slot)  # the first reaps and ticks, the others stand by
            return build(
                options["queues"],
                concurrency=options["concurrency"],
                burst=options["burst"],
                max_messages=options["max_messages"],
                max_memory_mb=options["max_memory"],
                shutdown_timeout_s=options["shutdown_timeout"],
                reaper=role["reaper"] and not options["no_reaper"],
                periodic=role["periodic"],
                standby=role["standby"],
                siblings=siblings,
                using=options["database"],
            )

        try:
            worker = make_worker()  # in the parent too: bad options fail here, once
            processes = options["processes"] or configured_processes(worker)
            if processes == 1:
                code = worker.run()
            else:
                siblings = Siblings(processes - 1)
                code = Supervisor(make_worker, processes, burst=options["burst"]).run()
        except (MQLiteError, ImproperlyConfigured) as exc:
            raise CommandError(str(exc)) from exc
        if code:
            sys.exit(code)


def configured_processes(worker: Worker | MultiWorker) -> int:
    """``MQLITE["WORKER_PROCESSES"]``, or the default for the databases ``worker``
    serves (``prefork.default_processes``)."""
    value = mqlite_settings.WORKER_PROCESSES
    if value is None:
        loops = worker.workers if isinstance(worker, MultiWorker) else [worker]
        return default_processes(
            serial_writer=any(not dialect_for(w.using).concurrent_writers for w in loops)
        )
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ImproperlyConfigured(
            f'MQLITE["WORKER_PROCESSES"] must be a positive integer or None, not {value!r}'
        )
    return value


def _log_to_stderr(level: int) -> None:
    """Show the worker's log unless the project configured the logger itself."""
    log = logging.getLogger("django_mqlite")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(level)
