"""``manage.py mqlite SUBCOMMAND``: the operator's CLI. Parsing only; the work is in
``django_mqlite.cli``. See ``docs/cli.md``."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...cli import batches as cli_batches
from ...cli import control as cli_control
from ...cli import schedules as cli_schedules
from ...cli import subcommands as cli
from ...cli import top
from ...cli import topics as cli_topics
from ...engine.types import State
from ...exceptions import MQLiteError


class Command(BaseCommand):
    help = (
        "Operate the queues: queues, create-queue, pause, resume, inspect, stats, top, peek, "
        "send, cancel, redrive, purge, health; topics, create-topic, delete-topic, subscribe, "
        "unsubscribe, publish; batches; schedules."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")

        def add(name: str, help: str, module: Any = cli) -> argparse.ArgumentParser:
            p = sub.add_parser(name, help=help, description=help)
            p.add_argument("--json", action="store_true", help="machine-readable output")
            p.add_argument("--database", default=None, help="database alias of the queues")
            p.set_defaults(run=getattr(module, name.replace("-", "_"), None))
            return p

        add("queues", "list the queues with their settings and depth")

        p = add("create-queue", "create a queue, or change the given settings of one")
        p.add_argument("name")
        for option, (kind, text) in cli.QUEUE_OPTIONS.items():
            p.add_argument(f"--{option.replace('_', '-')}", type=kind, help=text)
        for flag in ("content_dedup", "dead_letter_on_expire"):
            p.add_argument(f"--{flag.replace('_', '-')}", action=argparse.BooleanOptionalAction)

        for verb, text in (
            ("pause", "stop handing out a queue's messages (sends still go in)"),
            ("resume", "hand out a paused queue's messages again"),
            ("inspect", "one queue: settings, pause state, limits and numbers"),
        ):
            p = add(verb, text)
            p.add_argument("name")
            p.set_defaults(run=getattr(cli_control, verb))

        p = add("stats", "depth per state, oldest message age and lifetime totals")
        p.add_argument("queue", nargs="?")
        p.add_argument("--watch", action="store_true", help="refresh until interrupted")
        p.add_argument("--interval", type=_positive, default=2.0, help="seconds between refreshes")
        p.add_argument("--iterations", type=int, default=0, help="with --watch: stop after N")

        p = add("top", "live view of every queue: depth, rates, the last minutes", top)
        p.add_argument("--interval", type=_positive, default=2.0, help="seconds between refreshes")
        p.add_argument(
            "--iterations", type=_count, default=0, help="stop after N refreshes (0: never)"
        )

        p = add("peek", "look at messages without locking them")
        p.add_argument("queue")
        p.add_argument("--state", choices=[s.value for s in State])
        p.add_argument("--limit", type=int, default=20)
        p.add_argument("--after-seq", type=int, default=0)

        p = add("send", "send one message (BODY is text; '-' reads stdin)")
        p.add_argument("queue")
        p.add_argument("body")
        p.add_argument("--json-body", action="store_true", help="parse BODY as JSON")
        p.add_argument("--group", dest="group_id")
        p.add_argument("--message-id")
        p.add_argument("--subject")
        p.add_argument("--content-type")
        p.add_argument("--priority", type=int)
        p.add_argument("--delay", type=float, help="seconds before it becomes visible")
        p.add_argument("--ttl", type=float, help="seconds it may wait before expiring")
        # Values are the engine's to judge (admission): a bad one is its error, not argparse's.
        p.add_argument("--unique-key", help="at most one live (or pending) message per key")
        p.add_argument(
            "--on-conflict", help="when the key is held: skip (default), replace, debounce"
        )
        p.add_argument("--unique-while", help="live (default) or pending")
        p.add_argument(
            "--depends-on",
            dest="depends_on",
            type=int,
            nargs="+",
            action="extend",
            metavar="SEQ",
            help="wait until these messages (seqs on the queue's database) complete",
        )
        p.add_argument(
            "--depends-on-batch",
            dest="depends_on_batch",
            type=int,
            nargs="+",
            action="extend",
            metavar="ID",
            help="wait until these batches finish with every child completed",
        )

        p = add("redrive", "move dead letters back to active (in place or to another queue)")
        p.add_argument("queue")
        p.add_argument("--to", help="target queue (default: the same queue)")
        p.add_argument(
            "--seq", dest="seqs", type=int, nargs="+", action="extend", help="only these seqs"
        )

        p = add("cancel", "cancel messages: ask running ones to stop, dead-letter waiting ones")
        p.add_argument("queue")
        p.add_argument("seqs", metavar="seq", type=int, nargs="+")

        p = add("purge", "remove messages for good (dead letters unless --state)")
        p.add_argument("queue")
        p.add_argument("--state", default="dead_lettered")
        p.add_argument("--older-than", type=float, help="only those older than S seconds")
        p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        p.add_argument("--noinput", "--no-input", dest="interactive", action="store_false")

        cli_topics.add_parsers(add)
        cli_batches.add_parsers(add)
        cli_schedules.add_parsers(add)

        p = add("health", "probe: exit 1 unless the database answers and workers are alive")
        p.add_argument(
            "--max-age",
            type=_positive,
            help="fail if the oldest active message is older than this many seconds",
        )
        p.add_argument("--min-workers", type=int, default=1, help="live workers needed (1)")
        p.add_argument(
            "--worker",
            default=None,
            help="also require this worker to be alive: self (this host's), an id, or HOST:PID",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        options.setdefault("interactive", True)
        try:
            options["run"](self.stdout, options)
        except MQLiteError as exc:  # the one place engine errors become CommandError
            raise CommandError(exc.message) from exc


def _positive(value: str) -> float:
    x = float(value)
    if not x > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, not {value}")
    return x


def _count(value: str) -> int:
    n = int(value)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return n
