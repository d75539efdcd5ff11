"""docs/tutorial.md, run as written: every file it shows is written, every command it
shows is run, in a fresh directory, in order.

Three commands are not run as such: creating and activating the virtualenv and
``pip install`` (this suite's interpreter stands in; ``tests/test_wheel_install.py``
installs the built wheel into clean virtualenvs), and ``runserver`` (the browser's
visit to the Dead letters page is made with Django's test client instead).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "tutorial.md"
NOT_RUN = ("python3 -m venv", ". .venv/bin/activate", "pip install", "python manage.py runserver")

pytestmark = pytest.mark.skipif(
    os.environ.get("MQLITE_TEST_DB") == "postgres",
    reason="the tutorial's project is on SQLite; it runs once, with the SQLite suite",
)

BROWSER = """
import json
from django.test import Client
from django.test.utils import setup_test_environment

setup_test_environment()
client = Client()
assert client.login(username="admin", password="change-me")
page = client.get("/admin/django_mqlite/deadletter/").content.decode()
print(json.dumps({"BadTotal": "BadTotal" in page,
                  "action": "Redrive selected dead letters" in page}))
"""


def steps() -> list[tuple[str, str]]:
    """("file", block) and ("command", line) in the order the page gives them."""
    out: list[tuple[str, str]] = []
    for lang, body in re.findall(r"```(console|python)\n(.*?)```", TUTORIAL.read_text(), re.S):
        if lang == "python":
            out.append(("file", body))
        else:
            out += [("command", line[2:]) for line in body.splitlines() if line.startswith("$ ")]
    return out


def run(line: str, cwd: Path, env: dict[str, str]) -> str:
    words = shlex.split(line)
    extra = {}
    while "=" in words[0]:
        name, _, value = words.pop(0).partition("=")
        extra[name] = value
    if words[0] == "django-admin":
        words = [sys.executable, "-m", "django", *words[1:]]
    elif words[0] == "python":
        words = [sys.executable, *words[1:]]
    result = subprocess.run(
        words, cwd=cwd, env={**env, **extra}, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"$ {line}\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


def test_the_tutorial_runs_as_written(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MQLITE_"))}
    outputs: dict[str, str] = {}
    for kind, text in steps():
        if kind == "file":
            header = text.splitlines()[0]
            path = tmp_path / header.split()[1]
            if "(append)" in header:
                path.write_text(path.read_text() + "\n" + text)
            else:
                path.write_text(text)
        elif text.startswith(NOT_RUN):
            if text.startswith("python manage.py runserver"):
                seen = run(f"python manage.py shell -c {shlex.quote(BROWSER)}", tmp_path, env)
                assert json.loads(seen.strip().splitlines()[-1]) == {
                    "BadTotal": True,
                    "action": True,
                }
        else:
            outputs.setdefault(text, "")
            outputs[text] += run(text, tmp_path, env)

    assert "System check identified no issues (0 silenced)." in outputs["python manage.py check"]
    worker = outputs["python manage.py runworker --burst"]
    assert worker.count("shipped order 1") == 1 and worker.count("shipped order 2") == 1
    assert "rejected" in worker
    [receipt] = [v for k, v in outputs.items() if "receipt)" in k]
    assert "Thank you for order 1 (30 EUR)" in receipt
    stats = run("python manage.py mqlite stats orders --json", tmp_path, env)
    totals = json.loads(stats)["orders"]["totals"]
    told = {k: totals[k] for k in ("enqueued", "completed", "rejected", "redriven")}
    assert told == {"enqueued": 2, "completed": 2, "rejected": 1, "redriven": 1}
