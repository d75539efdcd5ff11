"""The README's quick start, run as a new user would: build the sdist and the wheel,
install the wheel into a clean virtualenv (no editable install, no test settings),
``startproject``, apply the README's settings block, migrate, send and receive, run a
Django task and a consumer with ``runworker --burst``, open the admin's dead letters.

It catches what an editable install hides: package data that is not packaged
(templates, migrations), an undeclared dependency, a README that no longer works.
Slow (a build and two virtualenvs), so it runs only when asked:
``MQLITE_WHEEL_TEST=1 python -m pytest -m wheel`` (CI does). pip's cache is reused.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.wheel,
    pytest.mark.skipif(
        os.environ.get("MQLITE_WHEEL_TEST") != "1", reason="set MQLITE_WHEEL_TEST=1 to run"
    ),
]

# (Python, Django requirement, extra): the two halves of the supported matrix.
PAIRS = [
    ("3.11", "Django>=5.2,<5.3", "[tasks]"),
    ("3.12", "Django>=6.1,<6.2", ""),
]


def readme_files() -> dict[str, str]:
    """The README's project files, by the path in their first line (``# settings.py``)."""
    text = (ROOT / "README.md").read_text()
    out = {}
    for block in re.findall(r"```python\n(.*?)```", text, flags=re.S):
        found = re.match(r"# ([\w/]+\.py)\b", block)
        if found:
            out[found.group(1)] = block
    return out


def find_python(version: str) -> str | None:
    """This interpreter when it is that version, else one on PATH or under pyenv that
    really runs (a pyenv shim for a version that is not selected fails)."""
    if sys.version_info[:2] == tuple(int(p) for p in version.split(".")):
        return sys.executable
    pattern = os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/python{version}")
    for candidate in [*sorted(glob.glob(pattern)), shutil.which(f"python{version}")]:
        if candidate and subprocess.run([candidate, "-c", ""], capture_output=True).returncode == 0:
            return candidate
    return None


def run(*cmd: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"{cmd}:\n{result.stdout}\n{result.stderr}"
    return result.stdout + result.stderr


def last_json(output: str) -> dict[str, Any]:
    """The JSON line a ``shell -c`` script printed (the shell may print a banner first)."""
    [line] = [x for x in output.splitlines() if x.startswith("{")][-1:]
    return json.loads(line)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build``: the sdist, then the wheel built from that sdist."""
    out = tmp_path_factory.mktemp("dist")
    started = time.monotonic()
    run(sys.executable, "-m", "build", "--outdir", out, ROOT)
    print(f"build: {time.monotonic() - started:.1f}s")
    [sdist] = out.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[-1] for n in archive.getnames()}
    assert {"LICENSE", "CHANGELOG.md", "README.md"} <= names
    [built] = out.glob("*.whl")
    with zipfile.ZipFile(built) as archive:
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in archive.namelist())
        assert any(n.startswith("django_mqlite/templates/") for n in archive.namelist())
    return built


SEND_AND_RECEIVE = """
import json
from django.db import transaction
import django_mqlite as mq
from shop.tasks import add

mq.create_queue("ping")
with transaction.atomic():
    seq = mq.send("ping", {"hello": "world"})
[msg] = mq.receive("ping")
msg.complete()
mq.send("orders", {"id": 1, "total": 5})
mq.send("orders", {"id": 2, "total": -1})
result = add.enqueue(2, 3)
print(json.dumps({"seq": seq, "received": msg.json(), "task": result.id}))
"""

AFTER_THE_WORKER = """
import json
from django.contrib.auth.models import User
from django.test import Client
from django.test.utils import setup_test_environment
import django_mqlite as mq
from shop.tasks import add

setup_test_environment()
[dead] = mq.peek("orders", state="dead_lettered")
task = add.get_result(TASK_ID)
User.objects.create_superuser("admin", "admin@example.com", "pw")
client = Client()
client.force_login(User.objects.get(username="admin"))
page = client.get("/admin/django_mqlite/deadletter/")
print(json.dumps({
    "reason": dead.dead_letter_reason,
    "task": [str(task.status), task.return_value],
    "admin": page.status_code,
    "shown": "BadTotal" in page.content.decode(),
    "healthz": client.get("/mq/healthz/").status_code,
}))
"""


@pytest.mark.parametrize(("version", "django", "extra"), PAIRS, ids=["py311-dj52", "py312-dj61"])
def test_the_readme_quick_start_on_an_installed_wheel(
    wheel: Path, tmp_path: Path, version: str, django: str, extra: str
) -> None:
    python = find_python(version)
    assert python, f"Python {version} is needed for this half of the matrix"
    started = time.monotonic()
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MQLITE_", "PYTHON"))
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    venv = tmp_path / "venv"
    run(python, "-m", "venv", venv)
    bin_ = venv / "bin"
    requirement = f"django-mqlite{extra} @ {wheel.as_uri()}"
    run(bin_ / "python", "-m", "pip", "install", "-q", "--no-compile", requirement, django, env=env)
    installed = time.monotonic()

    run(bin_ / "django-admin", "startproject", "proj", tmp_path, env=env)
    manage = [bin_ / "python", tmp_path / "manage.py"]
    run(*manage, "startapp", "shop", cwd=tmp_path, env=env)
    files = readme_files()
    assert {"settings.py", "urls.py", "shop/consumers.py", "shop/tasks.py"} <= set(files)
    settings = tmp_path / "proj" / "settings.py"
    settings.write_text(
        settings.read_text() + "\n" + files["settings.py"] + '\nINSTALLED_APPS += ["shop"]\n'
    )
    urls = tmp_path / "proj" / "urls.py"
    urls.write_text(urls.read_text() + "\n" + files["urls.py"])
    for name in ("shop/consumers.py", "shop/tasks.py"):
        (tmp_path / name).write_text(files[name])

    run(*manage, "migrate", "-v", "0", cwd=tmp_path, env=env)
    checked = run(*manage, "check", cwd=tmp_path, env=env)
    assert "System check identified no issues" in checked and "WARN" not in checked, checked

    sent = last_json(run(*manage, "shell", "-c", SEND_AND_RECEIVE, cwd=tmp_path, env=env))
    assert sent["seq"] > 0 and sent["received"] == {"hello": "world"}

    worked = run(*manage, "runworker", "--burst", cwd=tmp_path, env=env)
    assert "shipping order 1" in worked, worked

    script = AFTER_THE_WORKER.replace("TASK_ID", repr(sent["task"]))
    seen = last_json(run(*manage, "shell", "-c", script, cwd=tmp_path, env=env))
    assert seen["reason"] == "BadTotal"
    assert seen["task"] == ["SUCCESSFUL", 5]
    assert (seen["admin"], seen["shown"], seen["healthz"]) == (200, True, 200)
    print(
        f"{version}/{django}: install {installed - started:.1f}s, "
        f"project {time.monotonic() - installed:.1f}s"
    )
