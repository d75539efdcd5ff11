"""Tracing off costs nothing: with ``MQLITE["TRACING"] = False``, or OpenTelemetry not
installed, a process that sends, receives and runs a worker never imports
``opentelemetry`` and leaves the engine's and the worker's hooks unset."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if BLOCK and name.split(".")[0] == "opentelemetry":
            raise ImportError("opentelemetry is not installed (blocked)")
        return None

sys.meta_path.insert(0, NotInstalled())

import django
from django.conf import settings

settings.configure(
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "django_mqlite"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": DB}},
    MQLITE={"TRACING": TRACING},
    USE_TZ=True,
)
django.setup()
from django.core.management import call_command

call_command("migrate", verbosity=0)

import django_mqlite as mq
from django_mqlite.consumers import Registry
from django_mqlite.engine import tracing as engine_tracing
from django_mqlite.worker import Worker
from django_mqlite.worker import tracing as worker_tracing

mq.create_queue("q")
mq.send("q", "a")
mq.send_batch("q", [mq.OutMessage("b"), mq.OutMessage("c")])
[m] = mq.receive("q")
m.complete()
registry = Registry()
registry.register("q", lambda msg: None)
Worker(["q"], burst=True, install_signals=False, registry=registry, reaper=False).run()
assert mq.stats("q").totals["completed"] == 3
hooks = engine_tracing.hook is not None or worker_tracing.hook is not None
loaded = any(n.split(".")[0] == "opentelemetry" for n in sys.modules)
print(f"hooks={hooks} imported={loaded}")
"""


def run(tracing: object, block: bool, db: Path) -> subprocess.CompletedProcess[str]:
    code = f"TRACING = {tracing!r}\nBLOCK = {block!r}\nDB = {str(db)!r}\n{PROGRAM}"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("tracing", "block"),
    [(False, False), (None, True), (False, True)],
    ids=["setting-off", "not-installed", "off-and-not-installed"],
)
def test_opentelemetry_is_never_imported(tracing: object, block: bool, tmp_path: Path) -> None:
    done = run(tracing, block, tmp_path / "db.sqlite3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hooks=False imported=False"


def test_tracing_required_but_not_installed_is_a_configuration_error(tmp_path: Path) -> None:
    done = run(True, True, tmp_path / "db.sqlite3")
    assert done.returncode != 0
    assert "django-mqlite[otel]" in done.stderr


def test_installed_and_on_by_default_imports_it(tmp_path: Path) -> None:
    """The check above is not vacuous: on by default, the same program does import it."""
    pytest.importorskip("opentelemetry.trace")
    done = run(None, False, tmp_path / "db.sqlite3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hooks=True imported=True"
