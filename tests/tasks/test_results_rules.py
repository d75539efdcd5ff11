"""The rules of ``tasks/results.py`` that need no stored row, each at its boundary: what a
result id is, which modules a task path may import, the error a burial reads with, and
how an attempt history becomes a result."""

from __future__ import annotations

from typing import Any

import pytest

from django_mqlite.engine.clock import from_ms
from django_mqlite.tasks.compat import TaskError, TaskResultStatus
from django_mqlite.tasks.results import (
    TaskCancelledError,
    TaskDeadLetteredError,
    _burial_error,
    build_result,
    importable,
    parse_id,
)
from tests.workerproject.recorder import tasks

CANCELLED = "django_mqlite.tasks.results.TaskCancelledError"
DEAD = "django_mqlite.tasks.results.TaskDeadLetteredError"


@pytest.mark.parametrize(
    ("result_id", "seq"),
    [
        ("1", 1),
        ("0000000000000000042", 42),  # 19 digits: the longest id
        ("00000000000000000042", None),  # 20
        ("9223372036854775807", 2**63 - 1),  # the largest seq a BIGINT holds
        ("9223372036854775808", None),
        ("0", None),
        ("", None),
        ("-1", None),
        ("+1", None),
        ("²", None),  # a digit to isdigit(), not to int()
        ("١٢", None),  # digits, not ASCII ones
        ("7@queues2", 7),  # a task on another database than the backend's
        ("7@a@b", 7),  # the seq is what comes before the first "@"
        ("@7", None),
        ("7@", 7),
        (7, None),
        (None, None),
        (b"7", None),
    ],
)
def test_a_result_id_is_a_positive_decimal_seq(result_id: object, seq: int | None) -> None:
    assert parse_id(result_id) == seq


@pytest.mark.parametrize(
    ("module", "allowed"),
    [
        ("", False),
        ("json", True),  # already imported
        ("django_mqlite", True),  # an installed app itself
        ("django_mqlite.not_a_module_yet", True),  # a module of an installed app
        ("django_mqlite_elsewhere.tasks", False),  # a prefix of an app's name is not the app
        ("nowhere.tasks", False),
    ],
)
def test_a_task_path_imports_only_installed_apps_modules(module: str, allowed: bool) -> None:
    assert importable(module) is allowed


def _buried(
    reason: str | None, description: str | None = None, last_error: str | None = None
) -> dict[str, str | None]:
    return {
        "dead_letter_reason": reason,
        "dead_letter_description": description,
        "last_error": last_error,
    }


def test_a_cancelled_task_fails_with_task_cancelled_error() -> None:
    error = _burial_error(_buried("Cancelled", "by an operator", "boom"), [])
    assert isinstance(error, TaskError)
    assert error.exception_class_path == CANCELLED
    assert f"{TaskCancelledError.__module__}.{TaskCancelledError.__qualname__}" == CANCELLED
    # The last error of an attempt is not the cancellation's.
    assert error.traceback == "Cancelled: by an operator"
    # Cancelled even when its last attempt failed with its own error.
    last = [{"worker": "1", "started_at": 1, "error": {"class": "x.E", "traceback": "t"}}]
    error = _burial_error(_buried("Cancelled"), last)
    assert error is not None and error.traceback == "Cancelled"


def test_a_burial_its_last_attempt_explains_adds_no_error() -> None:
    failed = {"worker": "1", "started_at": 1, "error": {"class": "x.E", "traceback": "t"}}
    ok = {"worker": "2", "started_at": 2, "error": None}
    assert _burial_error(_buried("TaskFailed", "x.E"), [failed]) is None
    # An earlier failure does not explain a burial after an attempt that did not fail.
    error = _burial_error(_buried("MaxDeliveryCountExceeded"), [failed, ok])
    assert error is not None and error.exception_class_path == DEAD


@pytest.mark.parametrize(
    ("row", "text"),
    [
        (_buried("TTLExpired"), "TTLExpired"),
        (_buried("TTLExpired", ""), "TTLExpired"),
        (_buried("Rejected", "bad input"), "Rejected: bad input"),
        (
            _buried("Rejected", "bad input", "Traceback: boom"),
            "Rejected: bad input\nTraceback: boom",
        ),
        (_buried("Lost", None, "boom"), "Lost\nboom"),
        (_buried("Rejected", "over the limit: MAX"), "Rejected: over the limit: MAX"),
        (_buried(None), ""),
        (_buried(None, "why"), ": why"),
    ],
)
def test_a_burial_nothing_explains_reads_as_dead_lettered(row: dict[str, Any], text: str) -> None:
    error = _burial_error(row, [])
    assert error is not None
    assert error.exception_class_path == DEAD
    assert f"{TaskDeadLetteredError.__module__}.{TaskDeadLetteredError.__qualname__}" == DEAD
    assert error.traceback == text


def _attempt(worker: Any, started_at: int | None, error: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"worker": worker, "started_at": started_at, "error": None}
    if error is not None:
        entry["error"] = {"class": error, "traceback": f"{error} raised"}
    return entry


def _build(status: Any = TaskResultStatus.READY, **kw: Any) -> Any:
    options: dict[str, Any] = {
        "enqueued_at_ms": 1_000,
        "history": [],
        "finished_at_ms": None,
        "value": None,
        "args": [1, 2],
        "kwargs": {},
    }
    return build_result(tasks.add, "12", status, **{**options, **kw})


def test_a_result_s_attempts_are_its_history() -> None:
    history = [
        _attempt(5, 3_000, "builtins.ValueError"),
        _attempt(6, None),  # an attempt that never started counts, with no start
        _attempt(7, 2_000, "builtins.KeyError"),
        {"started_at": 4_000},  # no worker recorded
    ]
    extra = TaskError(exception_class_path=DEAD, traceback="Lost")
    result = _build(TaskResultStatus.FAILED, history=history, extra_error=extra)
    assert result.worker_ids == ["5", "6", "7", ""]
    assert result.started_at == from_ms(2_000)  # the earliest start, not the first listed
    assert result.last_attempted_at == from_ms(4_000)
    assert [(e.exception_class_path, e.traceback) for e in result.errors] == [
        ("builtins.ValueError", "builtins.ValueError raised"),
        ("builtins.KeyError", "builtins.KeyError raised"),
        (DEAD, "Lost"),
    ]


def test_one_start_is_both_the_first_and_the_last_attempt() -> None:
    result = _build(history=[_attempt(1, None), _attempt(2, 5_000)])
    assert result.started_at == result.last_attempted_at == from_ms(5_000)
    never = _build(history=[_attempt(1, None)])
    assert never.started_at is None and never.last_attempted_at is None
    assert never.errors == []


def test_a_result_s_times_fields_and_value() -> None:
    result = _build(
        TaskResultStatus.SUCCESSFUL,
        finished_at_ms=9_000,
        value={"sum": 3},
        kwargs={"b": 2},
        progress={"done": 1},
    )
    assert result.id == "12" and result.task is tasks.add
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.enqueued_at == from_ms(1_000)
    assert result.finished_at == from_ms(9_000)
    assert result.args == [1, 2] and result.kwargs == {"b": 2}
    assert result.backend == tasks.add.backend
    assert result.return_value == {"sum": 3}
    assert result.progress == {"done": 1}
    assert result.errors == [] and result.worker_ids == []
    unknown = _build(enqueued_at_ms=None)
    assert unknown.enqueued_at is None and unknown.finished_at is None
    assert unknown.progress is None


@pytest.mark.parametrize("status", [TaskResultStatus.READY, TaskResultStatus.FAILED])
def test_only_a_successful_result_keeps_its_value(status: Any) -> None:
    result = _build(status, value=3)
    # The base class's slot, which a subclass's generated __init__ leaves unset.
    assert result._return_value is None
    with pytest.raises(ValueError):
        _ = result.return_value
