"""The frame of the small comparison scripts (``benchmarks.fanout``,
``benchmarks.workflows``): the command line, one child process per database on a fresh
database of its own, and the child's set-up (``django.setup()`` and ``migrate``)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path


def setup_child(db: str) -> None:
    """In the child: a fresh PostgreSQL database when ``db`` is postgres, Django set
    up, the schema migrated."""
    if db == "postgres":
        from .child import _fresh_postgres

        _fresh_postgres(os.environ["BENCH_PG_NAME"])
    _setup_django()


def setup_script(sqlite_file: str) -> None:
    """The set-up of a one-process measuring script (``benchmarks.wal_pages``,
    ``benchmarks.gap_steps``): the bench project's settings on ``BENCH_DB`` (SQLite
    unless set), for SQLite a fresh file ``sqlite_file`` in the temporary directory (or
    ``BENCH_SQLITE_PATH``), Django set up, the schema migrated."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchmarks.benchproject.settings")
    os.environ.setdefault("BENCH_DB", "sqlite")
    if os.environ["BENCH_DB"] == "sqlite":
        path = os.environ.setdefault(
            "BENCH_SQLITE_PATH", str(Path(tempfile.gettempdir()) / sqlite_file)
        )
        for suffix in ("", "-wal", "-shm"):
            Path(path + suffix).unlink(missing_ok=True)
    _setup_django()


def _setup_django() -> None:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def main(
    module: str,
    argv: list[str] | None,
    *,
    default_n: int,
    n_help: str,
    child: Callable[[str, int, int], None],
) -> int:
    """``python -m <module> [--db sqlite|postgres|both] [--n N] [--repeat R]``: run
    ``child(db, n, repeat)`` in a process of its own for each database asked for."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}")
    parser.add_argument("--db", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--n", type=int, default=default_n, help=n_help)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.n, args.repeat)
        return 0
    root = Path(__file__).resolve().parent.parent
    name = module.rsplit(".", 1)[-1]
    with tempfile.TemporaryDirectory(prefix=f"mqlite-{name}-") as tmp:
        for db in ["sqlite", "postgres"] if args.db == "both" else [args.db]:
            env = {
                **os.environ,
                "BENCH_DB": db,
                "DJANGO_SETTINGS_MODULE": "benchmarks.benchproject.settings",
                "PYTHONPATH": str(root),
                "BENCH_SQLITE_PATH": str(Path(tmp) / f"{name}.sqlite3"),
                "BENCH_PG_NAME": os.environ.get("BENCH_PG_NAME", f"mqlite_bench_{name}"),
            }
            cmd = [sys.executable, "-m", module, "--child", db]
            cmd += ["--n", str(args.n), "--repeat", str(args.repeat)]
            subprocess.run(cmd, env=env, check=True, cwd=root)  # noqa: S603 - our own module
    return 0
