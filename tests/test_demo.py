"""The README's demo runs end to end on SQLite (a smaller shop, same story)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent / "example_project"


@pytest.mark.slow
def test_demo_tells_the_whole_story(tmp_path: Path) -> None:
    # The environment `python3 dev.py demo` (the README's command) runs it with.
    spec = importlib.util.spec_from_file_location("dev", PROJECT.parent / "dev.py")
    assert spec is not None and spec.loader is not None
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    base = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "environ", base)
        env = {**dev.demo_env(), "EXAMPLE_DB_PATH": str(tmp_path / "demo.sqlite3")}
    run = [sys.executable, "manage.py"]
    subprocess.run([*run, "migrate", "-v", "0"], cwd=PROJECT, env=env, check=True, timeout=120)
    out = subprocess.run(
        [*run, "demo", "--orders", "60", "--poison", "3"],
        cwd=PROJECT,
        env=env,
        check=True,
        timeout=240,
        capture_output=True,
        text=True,
    ).stdout
    assert "57 orders paid, each charged exactly once: yes" in out
    assert "3 messages delivered 3 times each, then buried (MaxDeliveryCountExceeded)" in out
    assert "all 4 jobs done" in out
    assert "3 redriven, every order paid; charged exactly once: yes" in out
    assert "60 confirmation emails sent by the Django task" in out
    assert out.count("invariants hold") == 3
