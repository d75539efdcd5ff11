"""docs/sqs.md's example, run against a live server with the documented credentials."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import django_mqlite as mq

pytestmark = pytest.mark.django_db(transaction=True)
PAGE = Path(__file__).resolve().parents[2] / "docs" / "sqs.md"


def test_the_boto3_example_and_the_idempotent_consumer_run(live_server: Any, settings: Any) -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    settings_block = next(b for b in blocks if b.startswith("# settings.py"))
    namespace: dict[str, Any] = {}
    exec(settings_block, namespace)
    settings.MQLITE = namespace["MQLITE"]
    code = [b for b in blocks if "import boto3" in b or "def drain" in b]
    assert len(code) == 2
    namespace = {}
    for block in code:
        block = block.replace("http://localhost:8000", live_server.url)
        exec(compile(block, str(PAGE), "exec"), namespace)
    assert namespace["handled"] == [42]
    assert mq.peek("orders") == []
