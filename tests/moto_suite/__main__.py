"""Run moto's SQS suite in server mode against our endpoint and hold it to the by-design
list: ``python -m tests.moto_suite --db sqlite|postgres [--python PY] [--keep DIR]``.

1. moto's source distribution (``MOTO_VERSION``) is downloaded with pip (bounded with a
   timeout; reused from ``.ci/cache``), and its ``tests/`` package (``tests/test_sqs``,
   the shared ``tests/__init__.py``, ``conftest.py``, ``markers.py`` and the Lambda helpers
   one SQS test imports) is extracted into a fresh directory.
2. A database of its own is made (a SQLite file, or a PostgreSQL database created and
   dropped here), migrated, and ``runserver`` serves ``tests.moto_suite.settings`` on a
   free port.
3. pytest runs ``tests/test_sqs`` there with ``TEST_SERVER_MODE=true`` pointed at it,
   with ``--python`` (the interpreter that has moto installed; this one by default).
4. Every test's outcome is compared with ``by_design.json``: a failure not on the list
   fails the run, and so does a listed test that passed (the list must stay true).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

MOTO_VERSION = "5.2.3"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CACHE = ROOT / ".ci" / "cache"
BY_DESIGN = HERE / "by_design.json"
#: What of moto's tests/ the SQS suite needs (one SQS test imports Lambda helpers).
WANTED = (
    "tests/__init__.py",
    "tests/conftest.py",
    "tests/markers.py",
    "tests/test_sqs/",
    "tests/test_awslambda/__init__.py",
    "tests/test_awslambda/test_lambda.py",
    "tests/test_awslambda/utilities.py",
)
PYTEST_INI = """[pytest]
markers =
    network: requires network connection
    requires_docker: requires running docker
    aws_verified: verified against AWS
    requires_clean_slate: requires a clean slate
filterwarnings = ignore
"""


def sdist() -> Path:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"moto-{MOTO_VERSION}.tar.gz"
    if not path.exists():
        subprocess.run(
            [
                *(sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"),
                *("--no-binary", ":all:", f"moto=={MOTO_VERSION}", "-d", str(CACHE)),
            ],
            check=True,
            timeout=600,
        )
    return path


def extract(archive: Path, into: Path) -> Path:
    prefix = f"moto-{MOTO_VERSION}/"
    with tarfile.open(archive) as tar:
        members = [
            m
            for m in tar.getmembers()
            if m.isfile() and any(m.name[len(prefix) :].startswith(w) for w in WANTED)
        ]
        for m in members:
            m.name = m.name[len(prefix) :]
        tar.extractall(into, members=members, filter="data")
    (into / "pytest.ini").write_text(PYTEST_INI)
    return into / "tests" / "test_sqs"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def postgres(sql: str) -> None:
    subprocess.run(
        [
            *("psql", "-X", "-q", "-h", os.environ.get("PGHOST", "127.0.0.1")),
            *("-U", os.environ.get("PGUSER", "postgres"), "-d", "postgres", "-c", sql),
        ],
        check=True,
        timeout=60,
    )


def serve(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    manage = [sys.executable, "-m", "django"]
    subprocess.run([*manage, "migrate", "-v", "0"], env=env, check=True, cwd=ROOT, timeout=300)
    server = subprocess.Popen(
        [*manage, "runserver", "--noreload", f"127.0.0.1:{port}"],
        env=env,
        cwd=ROOT,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    for _ in range(300):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/moto-api/reset", data=b"")
            return server
        except OSError:
            if server.poll() is not None:
                break
            time.sleep(0.1)
    server.kill()
    raise SystemExit(f"the server did not start; its log:\n{log.read_text()}")


def outcomes(junit: Path) -> dict[str, str]:
    """Test id (``module::name``, or ``module`` for a module that cannot be collected)
    -> passed, failed or skipped."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        where = case.get("classname") or ""
        name = case.get("name") or ""
        name = f"{where}::{name}" if where else name
        name = name.removeprefix("tests.test_sqs.")
        kinds = {child.tag for child in case}
        if kinds & {"failure", "error"}:
            out[name] = "failed"
        elif "skipped" in kinds:
            out[name] = "skipped"
        else:
            out[name] = "passed"
    return out


def judge(got: dict[str, str]) -> list[str]:
    listed: dict[str, str] = json.loads(BY_DESIGN.read_text())["tests"]
    problems = []
    for test, outcome in sorted(got.items()):
        if outcome == "failed" and test not in listed:
            problems.append(f"FAILED, not on the by-design list: {test}")
        if outcome == "passed" and test in listed:
            problems.append(f"passed, but listed as failing by design (remove it): {test}")
    problems += [f"listed but not run: {t}" for t in sorted(set(listed) - set(got))]
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--python", default=sys.executable, help="an interpreter with moto")
    parser.add_argument("--keep", help="extract and log into this directory")
    parser.add_argument("--fetch", action="store_true", help="only download the sdist")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (e.g. -k ...)")
    args = parser.parse_args()
    if args.fetch:
        print(sdist())
        return 0
    started = time.monotonic()
    work = Path(args.keep or tempfile.mkdtemp(prefix=f"moto-suite-{args.db}-"))
    work.mkdir(parents=True, exist_ok=True)
    suite = extract(sdist(), work)
    name = f"moto_mqlite_{os.getpid()}" if args.db == "postgres" else str(work / "db.sqlite3")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.moto_suite.settings",
        "MOTO_MQLITE_DB": args.db,
        "MOTO_MQLITE_NAME": name,
        "PYTHONPATH": str(ROOT),
    }
    if args.db == "postgres":
        postgres(f'CREATE DATABASE "{name}"')
    port = free_port()
    server = serve(env, port, work / "server.log")
    try:
        client_env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "AWS_"))}
        client_env |= {
            "TEST_SERVER_MODE": "true",
            "TEST_SERVER_MODE_ENDPOINT": f"http://127.0.0.1:{port}",
        }
        junit = work / "junit.xml"
        subprocess.run(
            [
                *(args.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:django"),
                *(f"--junitxml={junit}", "-o", "junit_family=xunit2", "--timeout=120"),
                *("--continue-on-collection-errors", str(suite.relative_to(work))),
                *args.pytest_args,
            ],
            cwd=work,
            env=client_env,
            timeout=1800,
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
        if args.db == "postgres":
            postgres(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    got = outcomes(junit)
    counts = {k: sum(1 for v in got.values() if v == k) for k in ("passed", "failed", "skipped")}
    listed = len(json.loads(BY_DESIGN.read_text())["tests"])
    print(
        f"moto {MOTO_VERSION} SQS suite on {args.db}: {counts['passed']} passed, "
        f"{counts['failed']} failed ({listed} listed by design), {counts['skipped']} skipped, "
        f"{len(got)} in all, {time.monotonic() - started:.0f} s"
    )
    problems = [] if args.pytest_args else judge(got)
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
