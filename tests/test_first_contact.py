"""First contact: the checks and messages a new project meets before anything works."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import django
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from django_mqlite import checks, consumers
from django_mqlite.tasks import support
from django_mqlite.worker import discovery

ROOT = Path(__file__).resolve().parent.parent
MQLITE_TASKS = {"default": {"BACKEND": "django_mqlite.backends.MQLiteBackend"}}


def without_backport(monkeypatch: pytest.MonkeyPatch, version: tuple[int, ...]) -> None:
    """Pretend to run on Django ``version`` with the django-tasks backport uninstalled."""
    real = importlib.util.find_spec
    monkeypatch.setattr(support.django, "VERSION", (*version, 0, "final", 0))
    monkeypatch.setattr(support.django, "get_version", lambda: ".".join(map(str, version)))
    monkeypatch.setattr(
        support.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "django_tasks" else real(name, *a),
    )


def test_tasks_backend_without_the_backport_names_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    without_backport(monkeypatch, (5, 2))
    with override_settings(TASKS=MQLITE_TASKS):
        (msg,) = checks.check_tasks_framework()
    assert msg.id == "django_mqlite.E021"
    assert "django-tasks" in msg.msg
    assert msg.hint and 'pip install "django-mqlite[tasks]"' in msg.hint


def test_django_6_0_is_refused_with_the_supported_versions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    without_backport(monkeypatch, (6, 0))
    with override_settings(TASKS=MQLITE_TASKS):
        (msg,) = checks.check_tasks_framework()
    assert msg.id == "django_mqlite.E021"
    assert "6.1" in msg.msg and "5.2" in msg.msg


def test_supported_versions_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    with override_settings(TASKS=MQLITE_TASKS):
        assert checks.check_tasks_framework() == []  # this suite's Django works
    monkeypatch.setattr(support.django, "VERSION", (6, 1, 0, "final", 0))
    assert support.framework_problem() is None
    with override_settings(TASKS={"default": {"BACKEND": "other.Backend"}}):
        assert checks.check_tasks_framework() == []  # not ours: nothing to say


def test_two_consumers_on_one_queue_fail_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trap of following two pages at once: a consumer on a Tasks backend's queue."""
    registry = consumers.Registry()
    monkeypatch.setattr(discovery, "registry", registry)
    monkeypatch.setattr(discovery, "autodiscover_modules", lambda *names: None)

    def send_welcome(msg: Any) -> None:
        pass

    class Backend:  # a Tasks backend configured with QUEUES = ["default", "emails"]
        queues = frozenset({"default", "emails"})
        queue_options: dict[str, Any] = {}

    from django_mqlite.tasks import runner

    monkeypatch.setattr(runner, "mqlite_backends", lambda: [Backend()])
    registry.register("emails", send_welcome)
    (msg,) = checks.check_one_consumer_per_queue()
    assert msg.id == "django_mqlite.E020"
    assert "'emails' already has a consumer" in msg.msg
    assert msg.hint


def test_one_consumer_per_queue_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discovery, "registry", consumers.Registry())
    assert checks.check_one_consumer_per_queue() == []


def test_runworker_says_what_it_looked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    from django_mqlite.management.commands import runworker

    empty = consumers.Registry()
    monkeypatch.setattr(runworker, "registry", empty)
    monkeypatch.setattr(runworker, "autodiscover", lambda: None)
    without_backport(monkeypatch, (5, 2))
    with override_settings(TASKS=MQLITE_TASKS), pytest.raises(CommandError) as caught:
        call_command("runworker", "--burst", verbosity=0, skip_checks=True)
    text = str(caught.value)
    assert "nothing to serve" in text
    assert "consumers and tasks modules" in text
    assert 'pip install "django-mqlite[tasks]"' in text
    with override_settings(TASKS={}), pytest.raises(CommandError) as caught:
        call_command("runworker", "--burst", verbosity=0, skip_checks=True)
    assert "MQLiteBackend" in str(caught.value)


def run_checks_in_a_fresh_process(tmp_path: Path, options: dict[str, Any]) -> list[str]:
    path = tmp_path / "fresh.sqlite3"
    code = f"""
import json, django
from django.conf import settings
settings.configure(
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "django_mqlite"],
    DATABASES={{"default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": {str(path)!r},
                "OPTIONS": {options!r}}}}},
)
django.setup()
from django.core import checks
print(json.dumps([[m.id, m.msg, m.hint] for m in checks.run_checks(databases=["default"])
                  if m.id.startswith("django_mqlite")]))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_a_default_startproject_gets_one_warning_with_the_options_to_paste(
    tmp_path: Path,
) -> None:
    found = run_checks_in_a_fresh_process(tmp_path, {})
    assert [m[0] for m in found] == ["django_mqlite.W001"]
    hint = found[0][2]
    assert '"transaction_mode": "IMMEDIATE"' in hint and "journal_mode=WAL" in hint
    # The hint is the exact dict to paste: evaluate what follows "OPTIONS":.
    pasted = eval("{" + hint[hint.index('"OPTIONS"') :].rstrip(",") + "}")
    assert pasted["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert checks.RECOMMENDED_SQLITE_OPTIONS in hint


def test_tasks_extra_installs_the_backport_on_every_python() -> None:
    """Django 5.2 runs on Python 3.12+ too, and needs the backport there as well."""
    import tomllib

    from packaging.requirements import Requirement

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for python in ("3.11", "3.12", "3.13"):
        env = {"python_version": python, "extra": "tasks"}
        wanted = [
            Requirement(r).name
            for r in extras["tasks"]
            if Requirement(r).marker is None or Requirement(r).marker.evaluate(env)  # type: ignore[union-attr]
        ]
        assert "django-tasks" in wanted, python


if django.VERSION >= (6, 1):  # Django wants task functions at module level
    from django.tasks import task

    @task(queue_name="tasks", max_attempts=3, timeout=5)  # type: ignore[call-arg,misc,unused-ignore]
    def options_job() -> None:
        pass


@pytest.mark.skipif(django.VERSION < (6, 1), reason="Django 6.1's own task() keywords")
def test_django_6_1_passes_task_options_through() -> None:
    from django_mqlite.backends import MQLiteTask

    job = globals()["options_job"]
    assert isinstance(job, MQLiteTask)
    assert (job.max_attempts, job.timeout) == (3, 5)


def test_license_and_changelog_match_the_package() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert "LICENSE" in project["license-files"]
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## [{project['version']}]" in changelog
    assert "## Version policy" in changelog
    assert "(CHANGELOG.md)" in (ROOT / "README.md").read_text()
