#!/usr/bin/env python3
"""Two commands, on a fresh machine with nothing but Python 3.11+:

    python3 dev.py demo    # the example project on SQLite: send, drain, show the counts
    python3 dev.py test    # lint, types, migrations check, the suite on SQLite and PostgreSQL

Both create ``.venv`` (once, and again when pyproject.toml changes) and install the
project with its dev extras into it. ``test`` runs PostgreSQL tests when a server answers
on PGHOST:PGPORT (default 127.0.0.1:5432); set ``MQLITE_REQUIRE_POSTGRES=1`` to fail
instead of skipping them when none does (CI sets it). The two databases' runs go side
by side, their lines prefixed (``--serial`` runs them one after the other), each spread
over two pytest-xdist processes (``--workers N``; 0 for none). Arguments
after ``--`` go to pytest, e.g. ``python3 dev.py test --db sqlite -- -k fencing``.
``--db mariadb`` runs the suite on MariaDB instead (a server on MYSQL_HOST:MYSQL_PORT,
default 127.0.0.1:3306, user root; the ``mariadb`` extra needs the MariaDB client
library and pkg-config to build); CI runs it as well.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import socket
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"


def run(*cmd: str | Path, env: dict[str, str] | None = None, cwd: Path = ROOT) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, check=False)
    if result.returncode != 0:
        sys.exit(result.returncode)


def bootstrap() -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - dev.py may be run by an older python3
        sys.exit("django-mqlite needs Python 3.11 or newer")
    stamp = VENV / ".installed"
    extras = "dev,mariadb" if mariadb_client() else "dev"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + extras.encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == want and PY.exists():
        return
    if not PY.exists():
        try:
            venv.EnvBuilder(with_pip=True).create(VENV)
        except Exception as exc:  # ensurepip missing (Debian without python3-venv)
            sys.exit(f"could not create {VENV}: {exc}\nOn Debian: apt-get install python3-venv")
    run(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    run(PY, "-m", "pip", "install", "--quiet", "-e", f".[{extras}]")
    stamp.write_text(want)


def mariadb_client() -> bool:
    """Whether mysqlclient can build here (the MariaDB client library and pkg-config):
    then the ``mariadb`` extra is installed too, for ``MQLITE_TEST_DB=mariadb``."""
    try:
        found = subprocess.run(
            ["pkg-config", "--exists", "libmariadb"], check=False, capture_output=True
        )
    except OSError:
        return False
    return found.returncode == 0


def postgres_up() -> bool:
    return server_up("PGHOST", "PGPORT", 5432)


def server_up(host_env: str, port_env: str, default_port: int) -> bool:
    """Whether a server answers on the host and port those variables name (default
    127.0.0.1 and ``default_port``)."""
    host = os.environ.get(host_env, "127.0.0.1")
    port = int(os.environ.get(port_env, str(default_port)))
    try:
        with socket.create_connection((host, port), timeout=2):
            return True
    except OSError:
        return False


def demo_env() -> dict[str, str]:
    """The demo's environment: the example project refuses to start without
    DJANGO_SECRET_KEY unless DJANGO_DEBUG=1 (it is safe to copy), and the demo is a
    local console run, so it gets DJANGO_DEBUG=1 unless a secret key is given."""
    env = dict(os.environ)
    if not env.get("DJANGO_SECRET_KEY"):
        env.setdefault("DJANGO_DEBUG", "1")
    return env


def cmd_demo(args: argparse.Namespace) -> None:
    bootstrap()
    env = demo_env()
    run(PY, "manage.py", "migrate", "--verbosity", "0", env=env, cwd=ROOT / "example_project")
    run(PY, "manage.py", "demo", *args.rest, env=env, cwd=ROOT / "example_project")


def cmd_test(args: argparse.Namespace) -> None:
    bootstrap()
    rest = [a for a in args.rest if a != "--"]
    if not args.no_lint:
        run(PY, "-m", "ruff", "check", ".")
        run(PY, "-m", "ruff", "format", "--check", ".")
        run(PY, "-m", "mypy")
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
        run(PY, "-m", "django", "makemigrations", "--check", "--dry-run", env=env)
    dbs = ["sqlite", "postgres"] if args.db == "all" else [args.db]
    if "mariadb" in dbs and not (mariadb_client() and server_up("MYSQL_HOST", "MYSQL_PORT", 3306)):
        sys.exit(
            "MariaDB is required (--db mariadb) but no server answers on MYSQL_HOST:MYSQL_PORT "
            "or the MariaDB client library is missing (apt-get install libmariadb-dev pkg-config)"
        )
    if "postgres" in dbs and not postgres_up():
        if os.environ.get("MQLITE_REQUIRE_POSTGRES") == "1":
            sys.exit("PostgreSQL is required (MQLITE_REQUIRE_POSTGRES=1) but not reachable")
        print("!! PostgreSQL is not reachable: skipping the PostgreSQL run", flush=True)
        dbs.remove("postgres")
    if args.workers > 0 and not any(
        a == "-n" or a.startswith(("-n", "--numprocesses")) for a in rest
    ):
        rest = ["-n", str(args.workers), *rest]
    halves = [(db, [PY, "-m", "pytest", *rest], {**os.environ, "MQLITE_TEST_DB": db}) for db in dbs]
    if args.serial or len(halves) == 1:
        for db, cmd, env in halves:
            print(f"== test suite on {db}", flush=True)
            run(*cmd, env=env)
    else:
        run_side_by_side(halves)


def run_side_by_side(halves: list[tuple[str, list[Path | str], dict[str, str]]]) -> None:
    """Run each half in its own process at once (most of a half's time is spent waiting on
    processes, sockets and the database, so two halves take little longer than one), its
    lines prefixed with its name; exit with the first failure's code once all are done."""
    import threading

    def pump(name: str, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            print(f"[{name}] {line}", end="", flush=True)

    started = []
    for db, cmd, env in halves:
        print(f"== test suite on {db} (side by side)", flush=True)
        proc = subprocess.Popen(
            [str(c) for c in cmd],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        reader = threading.Thread(target=pump, args=(db, proc), daemon=True)
        reader.start()
        started.append((db, proc, reader))
    failed = 0
    for db, proc, reader in started:
        code = proc.wait()
        reader.join()
        print(f"== {db}: {'passed' if code == 0 else f'FAILED (exit {code})'}", flush=True)
        failed = failed or code
    if failed:
        sys.exit(failed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the example project's demo on SQLite")
    demo.set_defaults(func=cmd_demo)
    test = sub.add_parser("test", help="lint, type-check and run the suite on both databases")
    test.add_argument(
        "--db",
        choices=["sqlite", "postgres", "mariadb", "all"],
        default="all",
        help="all: SQLite and PostgreSQL side by side (default)",
    )
    test.add_argument("--no-lint", action="store_true", help="skip ruff, mypy, migrations")
    test.add_argument(
        "--workers",
        type=int,
        default=2,
        help="pytest-xdist processes per database (0: none); default 2",
    )
    test.add_argument("--serial", action="store_true", help="run the databases one after the other")
    test.set_defaults(func=cmd_test)
    args, rest = parser.parse_known_args()
    args.rest = rest
    args.func(args)


if __name__ == "__main__":
    main()
