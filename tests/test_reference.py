"""docs/reference.md covers every public name, and each has a docstring of its own (the
reference is generated from them by ``mkdocs build --strict``, see mkdocs.yml)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import django_mqlite as mq

ROOT = Path(__file__).resolve().parent.parent
# Public names outside ``import django_mqlite as mq`` that the reference documents.
ALSO = [
    "django_mqlite.worker.Worker",
    "django_mqlite.backends.MQLiteBackend",
    "django_mqlite.backends.MQLiteTask",
    "django_mqlite.backends.TaskCancelledError",
    "django_mqlite.backends.TaskDeadLetteredError",
]


def documented() -> list[str]:
    return re.findall(r"^::: ([\w.]+)$", (ROOT / "docs" / "reference.md").read_text(), re.M)


def test_every_public_name_is_in_the_reference() -> None:
    wanted = [f"django_mqlite.{name}" for name in mq.__all__] + ALSO
    assert sorted(set(wanted) - set(documented())) == []
    assert sorted(set(documented()) - set(wanted)) == []


def test_every_documented_name_has_its_own_docstring() -> None:
    import importlib

    missing = []
    for path in documented():
        module, _, name = path.rpartition(".")
        obj = getattr(importlib.import_module(module), name)
        own = obj.__dict__.get("__doc__") if inspect.isclass(obj) else obj.__doc__
        generated = inspect.isclass(obj) and (own or "").startswith(f"{name}(")
        if not own or not own.strip() or generated:
            missing.append(path)
    assert missing == []
