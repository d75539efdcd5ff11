"""The examples of ``docs/testing.md`` pass as a user's test module: the page's python
blocks, in order, are written to one file and run by pytest in a child process, with the
``mqlite`` fixture coming from the installed ``pytest11`` entry point."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PAGE = ROOT / "docs" / "testing.md"

SETTINGS = """
from tests.settings import *  # noqa: F403
from tests.settings import TASKS

# The page's task uses the default queue name.
TASKS = {"default": {**TASKS["default"], "QUEUES": [*TASKS["default"]["QUEUES"], "default"]}}
"""


def test_the_testing_page_examples_pass(tmp_path: Path) -> None:
    code = "\n\n".join(re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S))
    expected = len(re.findall(r"^\s*def test_", code, flags=re.M))
    assert expected >= 8
    (tmp_path / "test_testing_page.py").write_text(code)
    (tmp_path / "docs_settings.py").write_text(SETTINGS)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]),
        "DJANGO_SETTINGS_MODULE": "docs_settings",
        # Its own test database, never the one this run is using.
        "MQLITE_TEST_PGNAME": f"test_mqlite_docs_{os.getpid()}",
        "MQLITE_TEST_DIR": str(tmp_path),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_testing_page.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{expected} passed" in proc.stdout, proc.stdout
