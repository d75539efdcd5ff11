"""Django's own ``tests/tasks/`` (from the Django source distribution) run against
MQLiteBackend, changed only where a queued, database-backed backend must differ.

``build(src, dest)`` copies the test modules into a package ``djangotests_tasks`` under
``dest`` and applies ``ADAPTATIONS`` — each one a literal replacement with its reason, and
each counted, so a Django release that changes the text fails loudly instead of silently
running unadapted. ``NOT_APPLICABLE`` lists the tests that test the reference backends
themselves, with the reason none of it can hold for a queued backend; everything else
must pass. ``tests/django_suite/test_django_tasks_suite.py`` runs the result.
"""

from __future__ import annotations

import shutil
from pathlib import Path

PACKAGE = "tasks"  # module paths such as "tasks.tasks.noop_task" are asserted
MODULES = ("__init__.py", "tasks.py", "test_tasks.py", "test_immediate_backend.py",
           "test_dummy_backend.py")  # fmt: skip
# test_custom_backend.py tests subclassing BaseTaskBackend, not any backend's behaviour.

RUN_NOW = "tests.django_suite.backends.RunNowBackend"
KEEP = "tests.django_suite.backends.KeepBackend"

#: (module, old, new, reason). Every one must match at least once.
ADAPTATIONS: list[tuple[str, str, str, str]] = [
    ("*", '"django.tasks.backends.immediate.ImmediateBackend"', f'"{RUN_NOW}"',
     "ImmediateBackend's tests run against MQLiteBackend, draining the queue at enqueue"),
    ("*", '"django.tasks.backends.dummy.DummyBackend"', f'"{KEEP}"',
     "DummyBackend's tests run against MQLiteBackend, which enqueues without running"),
    ("*", "from django.tasks.backends.immediate import ImmediateBackend",
     "from tests.django_suite.backends import RunNowBackend as ImmediateBackend",
     "isinstance checks name the stand-in"),
    ("*", "from django.tasks.backends.dummy import DummyBackend",
     "from tests.django_suite.backends import KeepBackend as DummyBackend",
     "isinstance checks name the stand-in"),
    ("*", "(SimpleTestCase)", "(TransactionTestCase)",
     "the backend stores tasks in the database; SimpleTestCase forbids queries"),
    ("test_tasks.py", "from django.test import SimpleTestCase, override_settings",
     "from django.test import TransactionTestCase, override_settings",
     "as above"),
    ("*", "    available_apps = []\n", "",
     "the queue's tables belong to django_mqlite, which must stay available"),
]  # fmt: skip

_IMMEDIATE = "test_immediate_backend.py::ImmediateBackendTestCase::"
_IMMEDIATE_TX = "test_immediate_backend.py::ImmediateBackendTransactionTestCase::"
_DUMMY = "test_dummy_backend.py::DummyBackendTestCase::"
_TASKS = "test_tasks.py::TaskTestCase::"
_SYNC_IN_ASYNC = (
    "calls the synchronous get_result()/refresh() inside an async test; Django forbids "
    "database queries from async code (SynchronousOnlyOperation), so no database-backed "
    "backend can pass it (the a-variants it also calls are covered by other tests)"
)

NOT_APPLICABLE: dict[str, str] = {
    _IMMEDIATE + "test_cannot_get_result": "ImmediateBackend keeps no results; ours does",
    _IMMEDIATE + "test_cannot_refresh_result": "ImmediateBackend keeps no results; ours does",
    _IMMEDIATE + "test_cannot_pass_run_after": "ours supports run_after",
    _IMMEDIATE + "test_throws_keyboard_interrupt": (
        "ImmediateBackend runs the task in the caller, where Ctrl-C must propagate; a worker "
        "runs it in a handler thread, where a KeyboardInterrupt raised by the task fails the "
        "attempt (docs/tasks.md)"
    ),
    _IMMEDIATE_TX + "test_doesnt_wait_until_transaction_commit_by_default": (
        "ours is transactional: a task enqueued inside atomic() is invisible to workers "
        "until the commit (the outbox), so it cannot have run inside the block"
    ),
    _DUMMY + "test_check": (
        "QUEUES: [] lets a task use any queue; a worker must know which queues to serve, "
        "so MQLiteBackend requires them (check django_mqlite.E010)"
    ),
    _DUMMY + "test_refresh_result": (
        "fakes a completion by mutating DummyBackend's in-memory result; refresh() on a "
        "stored backend reads the row"
    ),
    _DUMMY + "test_refresh_result_async": "as test_refresh_result",
    _DUMMY + "test_get_missing_result": _SYNC_IN_ASYNC,
    _TASKS + "test_get_missing_result": _SYNC_IN_ASYNC,
    _TASKS + "test_refresh_result": _SYNC_IN_ASYNC,
}


def build(src: Path, dest: Path) -> Path:
    """Write the adapted package under ``dest``; return its directory."""
    out = dest / PACKAGE
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    used = [0] * len(ADAPTATIONS)
    for name in MODULES:
        text = (src / name).read_text()
        for i, (module, old, new, _why) in enumerate(ADAPTATIONS):
            if module in ("*", name) and old in text:
                used[i] += text.count(old)
                text = text.replace(old, new)
        (out / name).write_text(text)
    unused = [ADAPTATIONS[i][1] for i, n in enumerate(used) if n == 0]
    if unused:
        raise RuntimeError(f"adaptations that matched nothing (Django changed?): {unused}")
    skips = "\n".join(f"    {k!r}: {v!r}," for k, v in NOT_APPLICABLE.items())
    (out / "conftest.py").write_text(CONFTEST.replace("#SKIPS#", skips))
    return out


CONFTEST = '''"""Generated by tests/django_suite/adapt.py: skips what cannot apply."""
import pytest

NOT_APPLICABLE = {
#SKIPS#
}


def pytest_collection_modifyitems(config, items):
    seen = set()
    for item in items:
        key = item.nodeid.split("/")[-1]
        if key in NOT_APPLICABLE:
            seen.add(key)
            item.add_marker(pytest.mark.skip(reason="not applicable: " + NOT_APPLICABLE[key]))
    missing = set(NOT_APPLICABLE) - seen
    if missing:
        raise pytest.UsageError(f"NOT_APPLICABLE names tests that do not exist: {sorted(missing)}")
'''
