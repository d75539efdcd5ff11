"""One database's half of a run, in its own process: create the database, migrate, run
the scenarios, write their results."""

from __future__ import annotations

import json
import os
import time
import traceback
from pathlib import Path
from typing import Any


def _fresh_postgres(name: str) -> None:
    import psycopg

    dsn = "host={} user={} dbname=postgres".format(
        os.environ.get("PGHOST", "127.0.0.1"), os.environ.get("PGUSER", "postgres")
    )
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        c.execute(f'CREATE DATABASE "{name}"')


def _fresh_mariadb(name: str) -> None:
    """Drop and create the MariaDB database ``name`` (utf8mb4 with the server's default
    collation, as a project's database is created; migrate gives the queue tables
    their binary collation)."""
    import MySQLdb

    c = MySQLdb.connect(
        host=os.environ.get("MYSQL_HOST", "127.0.0.1"),
        port=int(os.environ.get("MYSQL_TCP_PORT", "3306")),
        user=os.environ.get("MYSQL_USER", "root"),
        password=os.environ.get("MYSQL_PWD", ""),
    )
    try:
        with c.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS `{name}`")
            cursor.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    finally:
        c.close()


FRESH = {  # the server databases a run drops and creates, by BENCH_DB
    "postgres": lambda: _fresh_postgres(os.environ.get("BENCH_PG_NAME", "mqlite_bench")),
    "mariadb": lambda: _fresh_mariadb(os.environ.get("BENCH_MY_NAME", "mqlite_bench")),
}


def run_child(db: str, quick: bool, only: list[str], repeat: int, out: Path) -> int:
    from .sizes import sizes_for

    if db in FRESH:
        FRESH[db]()
    import django

    django.setup()
    from django.core.management import call_command

    import django_mqlite as mq

    from .harness import Context
    from .scenarios import SCENARIOS

    call_command("migrate", verbosity=0)
    mq.create_queue("bench")
    ctx = Context(db=db, quick=quick, repeat=repeat, sizes=sizes_for(db, quick))
    names = only or list(SCENARIOS)
    unknown = set(names) - set(SCENARIOS)
    if unknown:
        raise SystemExit(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    results: dict[str, Any] = {"engine": mq.__file__}
    for name in names:
        start = time.perf_counter()
        load = os.getloadavg()
        try:
            got = SCENARIOS[name](ctx)
        except Exception as exc:  # one broken scenario must not lose the others
            traceback.print_exc()
            got = {f"{name}.error": {"error": f"{type(exc).__name__}: {exc}"}}
        for value in got.values():
            value.setdefault("load", load)
        results[name] = got
        print(f"[{db}] {name}: {time.perf_counter() - start:.1f}s", flush=True)
        for key, value in got.items():
            if "median" in value:
                print(f"    {key:40s} {value['median']:>12.3f} {value['unit']}", flush=True)
            else:
                print(f"    {key:40s} {value}", flush=True)
    out.write_text(json.dumps(results))
    return 0
