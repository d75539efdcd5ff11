"""Running one of the benchmark's scripts (``python -m benchmarks.<name>``) from a test,
as a user would: a process of its own, from the repository's root."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_script(module: str, *args: str, env: dict[str, str] | None = None, timeout: int) -> str:
    """Run ``python -m <module> <args>`` with ``env`` added to this environment (no
    ``DJANGO_SETTINGS_MODULE``: the script picks its own); its standard output."""
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    environ.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        env=environ,
        check=True,
        timeout=timeout,
        capture_output=True,
        text=True,
    ).stdout
