"""``get_result`` works from any process: a child process reads a task this one
enqueued and this process reads what the worker process stored."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from django_mqlite.tasks.compat import TaskResultStatus
from tests.support.procs import MANAGE, ROOT
from tests.workerproject.recorder import tasks

pytestmark = pytest.mark.django_db(transaction=True)

READ = (
    "import json; from tests.workerproject.recorder import tasks; "
    "r = tasks.add.get_result({id!r}); "
    "print(json.dumps([r.status, r.return_value, r.attempts, r.worker_ids]))"
)


def test_get_result_from_another_process(workers: Any) -> None:
    result = tasks.add.enqueue(20, 22)
    code, _out, err = workers.finish(workers.start("--burst", "--queue", "tasks"))
    assert code == 0, err
    child = subprocess.run(
        [sys.executable, str(MANAGE), "shell", "-c", READ.format(id=result.id)],
        cwd=ROOT,
        env=workers.env(None),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert child.returncode == 0, child.stderr
    status, value, attempts, worker_ids = json.loads(child.stdout.strip().splitlines()[-1])
    assert (status, value, attempts) == (TaskResultStatus.SUCCESSFUL, 42, 1)
    assert worker_ids == tasks.add.get_result(result.id).worker_ids
