"""A first rough throughput figure for the engine on one database (not the benchmark
suite): single sends in autocommit, batched sends, and receive+complete_batch drain.

    .venv/bin/python benchmarks/quick.py [--db sqlite|postgres] [--n 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def configure(db: str, path: str) -> None:
    import django
    from django.conf import settings

    if db == "sqlite":
        database = {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": path,
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    else:
        database = {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": "mqlite_bench",
            "USER": "postgres",
            "HOST": "127.0.0.1",
        }
    settings.configure(
        INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "django_mqlite"],
        DATABASES={"default": database},
        USE_TZ=True,
    )
    django.setup()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp()
    if args.db == "postgres":
        import psycopg

        with psycopg.connect("host=127.0.0.1 user=postgres dbname=postgres", autocommit=True) as c:
            c.execute("DROP DATABASE IF EXISTS mqlite_bench")
            c.execute("CREATE DATABASE mqlite_bench")
    configure(args.db, str(Path(tmp) / "bench.sqlite3"))
    from django.core.management import call_command

    import django_mqlite as mq

    call_command("migrate", verbosity=0)
    mq.create_queue("bench")
    body = b"x" * 256
    results: dict[str, list[float]] = {"send": [], "send_batch_256": [], "drain_64": []}
    for _ in range(args.repeat):
        n_single = args.n // 4
        t = time.perf_counter()
        for _ in range(n_single):
            mq.send("bench", body)
        results["send"].append(n_single / (time.perf_counter() - t))
        mq.purge("bench", state="active")
        t = time.perf_counter()
        for _ in range(args.n // 256):
            mq.send_batch("bench", [mq.OutMessage(body) for _ in range(256)])
        results["send_batch_256"].append((args.n // 256) * 256 / (time.perf_counter() - t))
        t = time.perf_counter()
        done = 0
        while got := mq.receive("bench", max_messages=64):
            done += sum(mq.complete_batch("bench", [(m.seq, m.lock_token) for m in got]))
        results["drain_64"].append(done / (time.perf_counter() - t))
    summary = {
        k: {"min": round(min(v)), "median": round(statistics.median(v)), "max": round(max(v))}
        for k, v in results.items()
    }
    print(json.dumps({"db": args.db, "n": args.n, "msg_per_s": summary}, indent=2))


if __name__ == "__main__":
    main()
