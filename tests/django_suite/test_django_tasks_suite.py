"""Django's own ``tests/tasks/`` against MQLiteBackend (see ``adapt.py``).

``MQLITE_DJANGO_SRC`` points at an unpacked Django source distribution of the installed
version (``.ci/run`` downloads it); without it the test skips, unless
``MQLITE_REQUIRE_DJANGO_SUITE=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import django
import pytest
from django.db import connection

from .adapt import NOT_APPLICABLE, build

ROOT = Path(__file__).resolve().parents[2]


def django_tests_dir() -> Path | None:
    src = os.environ.get("MQLITE_DJANGO_SRC")
    if not src:
        return None
    path = Path(src) / "tests" / "tasks"
    return path if path.is_dir() else None


@pytest.mark.skipif(django.VERSION < (6, 0), reason="django.tasks is in Django 6.0+")
def test_djangos_tasks_suite_passes(tmp_path: Path) -> None:
    src = django_tests_dir()
    if src is None:
        if os.environ.get("MQLITE_REQUIRE_DJANGO_SUITE") == "1":
            pytest.fail("MQLITE_DJANGO_SRC does not point at a Django source tree")
        pytest.skip("set MQLITE_DJANGO_SRC to an unpacked Django sdist to run its Tasks tests")
    version = re.search(r"django-(\d+\.\d+\.\d+)", str(src))
    if version and version.group(1) != django.get_version():
        pytest.fail(f"{src} is Django {version.group(1)}, installed is {django.get_version()}")
    package = build(src, tmp_path)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]),
        # Its own test database, beside the one this session holds.
        "MQLITE_TEST_PGNAME": f"{connection.settings_dict['NAME']}_django",
        "MQLITE_TEST_DIR": str(tmp_path),
    }
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(package), "-c", str(ROOT / "pyproject.toml"),
         "--ds", "tests.django_suite.settings", "-p", "no:cacheprovider", "-q", "-rs",
         "--create-db"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    tail = run.stdout[-6000:] + run.stderr[-3000:]
    assert run.returncode == 0, tail
    summary = run.stdout.strip().splitlines()[-1]
    skipped = re.search(r"(\d+) skipped", summary)
    assert skipped and int(skipped.group(1)) == len(NOT_APPLICABLE), tail
    assert re.search(r"\d+ passed", summary) and "failed" not in summary, tail
