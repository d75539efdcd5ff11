"""``python -m benchmarks run [--db sqlite|postgres|mariadb|both|all] [--quick]
[--scenario NAME...] [--out results.json]``; ``python -m benchmarks plot results.json``.
``both`` is SQLite and PostgreSQL, ``all`` MariaDB as well.

``run`` starts one child process per database (Django is configured once per process),
each running the chosen scenarios against a fresh database, and merges their JSON with
the machine's description and load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import machine
from .harness import ROOT
from .results_check import ResultsError, check
from .sizes import size_overrides, sizes_for

DBS = ["sqlite", "postgres", "mariadb"]


def databases(choice: str) -> list[str]:
    """The databases ``--db`` names: one, ``both`` (SQLite and PostgreSQL, as the docs'
    tables have always been run) or ``all``."""
    return {"both": ["sqlite", "postgres"], "all": DBS}.get(choice, [choice])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the scenarios")
    run.add_argument("--db", choices=[*DBS, "both", "all"], default="sqlite")
    run.add_argument("--quick", action="store_true", help="small sizes (development)")
    run.add_argument("--scenario", nargs="*", default=[], help="only these (default: all)")
    run.add_argument("--repeat", type=int, default=3)
    run.add_argument("--out", default="results.json")
    child = sub.add_parser("child", help=argparse.SUPPRESS)
    child.add_argument("--db", required=True)
    child.add_argument("--quick", action="store_true")
    child.add_argument("--scenario", nargs="*", default=[])
    child.add_argument("--repeat", type=int, default=3)
    child.add_argument("--out", required=True)
    plot = sub.add_parser("plot", help="draw the PNGs from a results file")
    plot.add_argument("results")
    plot.add_argument("--dir", default="docs/img")
    report = sub.add_parser("report", help="print a results file as Markdown tables")
    report.add_argument("results", nargs="?")
    report.add_argument(
        "--docs", action="store_true", help="re-render the blocks of docs/benchmark.md"
    )
    args = parser.parse_args(argv)
    if args.command == "report":
        return _report(args)
    if args.command == "plot":
        from .plot import draw

        draw(json.loads(Path(args.results).read_text()), Path(args.dir))
        return 0
    if args.command == "child":
        from .child import run_child

        return run_child(args.db, args.quick, args.scenario, args.repeat, Path(args.out))
    return _run(args)


def _report(args: argparse.Namespace) -> int:
    """Print a results file's tables, or re-render the docs' blocks from their files;
    either refuses a results file that fails the check."""
    from .report import tables

    try:
        if args.docs:
            from .render import write_docs

            for path in write_docs():
                print(f"rendered {path}", file=sys.stderr)
            return 0
        if not args.results:
            raise SystemExit("report: a results file, or --docs")
        data = json.loads(Path(args.results).read_text())
        check(data)
    except ResultsError as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 1
    print(tables(data))
    return 0


def _run(args: argparse.Namespace) -> int:
    dbs = databases(args.db)
    out: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "quick": args.quick,
        "repeat": args.repeat,
        "sizes": {db: sizes_for(db, args.quick) for db in dbs},
        "machine": machine.describe(),
        "results": {},
    }
    if size_overrides():
        out["size_overrides"] = size_overrides()
    _compile_sources()
    with tempfile.TemporaryDirectory(prefix="mqlite-bench-") as tmp:
        for db in dbs:
            env = {**os.environ, **_database_env(db, Path(tmp)), "BENCH_RUN_DBS": ",".join(dbs)}
            part = Path(tmp) / f"{db}.json"
            cmd = [sys.executable, "-m", "benchmarks", "child", "--db", db, "--out", str(part)]
            cmd += ["--repeat", str(args.repeat), *(["--quick"] if args.quick else [])]
            if args.scenario:
                cmd += ["--scenario", *args.scenario]
            subprocess.run(cmd, env=env, check=True)  # noqa: S603 - our own module
            out["results"][db] = json.loads(part.read_text())
    out["machine"]["load_after"] = os.getloadavg()
    # A file the harness would not produce is never written (benchmarks/results_check.py).
    check(out)
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def _compile_sources() -> None:
    """Byte-compile this checkout's packages, as ``pip install`` does for an installed
    wheel (and did for the peers). An editable checkout has no ``.pyc`` files until an
    import writes them, and under ``PYTHONDONTWRITEBYTECODE`` (set on some machines,
    this one included) no import ever does: every worker process would then compile
    django_mqlite's ~100 modules before its first claim (measured here: 0.1-0.3 s of a
    0.3 s start-up), a cost no installed project pays."""
    import compileall

    for package in ("django_mqlite", "benchmarks"):
        compileall.compile_dir(str(ROOT / package), quiet=1)


def _database_env(db: str, tmp: Path) -> dict[str, str]:
    env = {
        "BENCH_DB": db,
        "DJANGO_SETTINGS_MODULE": "benchmarks.benchproject.settings",
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(Path(__file__).parent.parent), os.environ.get("PYTHONPATH")])
        ),
    }
    if db == "sqlite":
        env["BENCH_SQLITE_PATH"] = str(tmp / "bench.sqlite3")
    elif db == "mariadb":
        env["BENCH_MY_NAME"] = os.environ.get("BENCH_MY_NAME", "mqlite_bench")
    else:
        env["BENCH_PG_NAME"] = os.environ.get("BENCH_PG_NAME", "mqlite_bench")
    return env


if __name__ == "__main__":
    sys.exit(main())
